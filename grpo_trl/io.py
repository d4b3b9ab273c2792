"""The one writer and the one bounded reader (redaction is ``errors.redact``). ``write``: never through a symlink,
never over a file grpo-trl did not write, atomically (temp + ``os.replace``). ``read_bytes``: regular files only, not
blocking, size capped (JSON logs a line at a time); ``load_yaml``: aliases and depth bounded."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

import yaml

from grpo_trl.errors import GrpoTrlError, Problem, redact

STATE = ".grpo-trl"
MAX_YAML_NODES = 100_000  # YAML values after alias expansion (a 447-byte "billion laughs" expands to ~10^9)
MAX_YAML_DEPTH = 64
STATE_BYTES = 2**28  # a trainer_state.json, a manifest, a config: larger is not one
MAX_LINE = 2**24  # one logged row (a batch of completions) is far smaller; a longer line is skipped unread
MAX_LOG = 2**31  # a log read whole (report, resume): 2 GiB of rows, far past what they show
_WRITTEN: dict[str, str] = {}  # path -> sha256 of what this process wrote there
Mine = bool | Callable[[Path], bool]  # the caller owns the file there (e.g. by its manifest)
KINDS = {stat.S_ISDIR: "a folder", stat.S_ISFIFO: "a named pipe", stat.S_ISSOCK: "a socket", stat.S_ISCHR: "a device",
         stat.S_ISBLK: "a device"}  # fmt: skip


def _kind(mode: int) -> str:
    return next((what for is_, what in KINDS.items() if is_(mode)), "not a regular file")


def _why(exc: BaseException) -> str:  # mkdir over a file says 'File exists'
    if isinstance(exc, (FileExistsError, NotADirectoryError)):
        return "a folder on its way is a file, a pipe or a dangling link"
    return str(getattr(exc, "strerror", None) or exc)


def _ledger_path(folder: Path) -> Path | None:
    state = folder / STATE
    return state / "written.json" if not state.is_symlink() and (state.is_dir() or not state.exists()) else None


def _ledger(folder: Path) -> dict[str, str]:
    data = read_json_head(path, 2**22) if (path := _ledger_path(folder)) else None
    return data if isinstance(data, dict) else {}


def _written(path: Path) -> bool:  # by this process or as the ledger beside it says, and unchanged since
    try:
        digest = hashlib.sha256(read_bytes(path, STATE_BYTES)).hexdigest()
    except (OSError, ValueError):
        return False
    return digest in (_WRITTEN.get(os.path.abspath(path)), _ledger(path.parent).get(path.name))


def _atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)  # replaces a name, never writes through one
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def writable(path: str | Path, *, flag: str = "", where: str = "", mine: Mine = False, folder: bool = False) -> Path:
    """``path`` when ``write`` may write it, else one ``GrpoTrlError`` naming it and ``flag``: refused are a symlink,
    anything but a regular file, and a file grpo-trl did not write (unless ``mine``)."""
    text, other = os.fspath(path), f"move it away or choose another {flag or 'path'}"
    if os.path.basename(text) in ("", ".", ".."):  # 'new/', '.', '': Path() would drop the slash or mean the cwd
        why = f"{text!r} names a folder, not a file" if text else "is empty"
        raise GrpoTrlError([Problem(where, flag, why, f"{flag or 'it'} names a file: give the file's own name")])
    path = Path(text)
    try:  # folder: made now and a file tried there, so long work (eval's generation) never ends unwritable
        if folder:
            path.parent.mkdir(parents=True, exist_ok=True)
            tempfile.TemporaryFile(dir=path.parent).close()
        st = os.lstat(path)
    except FileNotFoundError:
        return path
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte; OSError: read-only, a loop, a name too long
        raise GrpoTrlError([Problem(where, flag, f"cannot write {str(path)!r} ({_why(exc)})", other)]) from None
    if stat.S_ISLNK(st.st_mode):
        what = "is a symbolic link: grpo-trl never writes through one"
    elif not stat.S_ISREG(st.st_mode):
        what = f"exists and is {_kind(st.st_mode)}"
    elif (mine(path) if callable(mine) else mine) or _written(path):
        return path
    else:
        what = "exists and was not written by grpo-trl: it is never replaced"
    raise GrpoTrlError([Problem(where, flag, f"{str(path)!r} {what}", other)])


def write(path: str | Path, data: str | bytes, *, flag: str = "", where: str = "", mine: Mine = False,
          ledger: bool = False, parents: bool = True, hide: bool = False) -> Path:  # fmt: skip
    """Write ``data`` to ``path`` whole or not at all, where ``writable`` allows. ``ledger``: record its sha256 in
    ``.grpo-trl/written.json`` so a later command may replace it while unchanged; ``hide``: redact secrets."""
    path = writable(path, flag=flag, where=where, mine=mine)
    data = redact(data) if hide and isinstance(data, str) else data
    raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
    digest = hashlib.sha256(raw).hexdigest()
    try:
        if parents:
            path.parent.mkdir(parents=True, exist_ok=True)
        _atomic(path, raw)
        if ledger and (book := _ledger_path(path.parent)) is not None:
            entries = {**_ledger(path.parent), path.name: digest}
            book.parent.mkdir(exist_ok=True)
            _atomic(book, json.dumps(entries, indent=1, sort_keys=True).encode())
    except OSError as exc:
        why = f"cannot write {str(path)!r} ({_why(exc)})"
        raise GrpoTrlError([Problem(where, flag, why, f"choose another {flag or 'path'}")]) from exc
    _WRITTEN[os.path.abspath(path)] = digest
    return path


def write_json(path: str | Path, value: Any, **kwargs: Any) -> Path:
    return write(path, json.dumps(value, indent=1, default=str), **kwargs)


def append_lines(path: str | Path, lines: list[str], *, where: str = "") -> None:
    """Append ``lines``, redacted, to the log ``path``; never through a symlink nor onto a FIFO, device or folder."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags, 0o644)  # a symlink: ELOOP; a FIFO nothing reads: ENXIO, never a wait
        if not stat.S_ISREG(mode := os.fstat(fd).st_mode):
            os.close(fd)
            raise OSError(f"it is {_kind(mode)}")
    except OSError as exc:
        why = f"{str(path)!r} cannot be appended to ({_why(exc)})"
        raise GrpoTrlError([Problem(where, "", why, "move it away")]) from None
    with os.fdopen(fd, "ab") as fh:
        fh.write("".join(redact(line).rstrip("\n") + "\n" for line in lines).encode("utf-8", "surrogateescape"))


def open_regular(path: str | Path, what: str = "file", pipe: bool = False) -> BinaryIO:
    """``path`` opened for reading: a regular file (or with ``pipe``, a FIFO), else refused without blocking."""
    if "\0" in os.fspath(path):  # os.open: ValueError, which a caller reading a user's path takes for a bug
        raise GrpoTrlError("the name holds a NUL byte: no file is named so", file=str(path), fix=f"name the {what}")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    mode = os.fstat(fd).st_mode
    if not (stat.S_ISREG(mode) or (pipe and stat.S_ISFIFO(mode))):
        os.close(fd)
        raise GrpoTrlError(f"is {_kind(mode)}, not a {what}", file=str(path), fix=f"name the {what} itself")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def read_bytes(path: str | Path, limit: int, what: str = "file", pipe: bool = True) -> bytes:
    """At most ``limit`` bytes of the regular file (or ``pipe``) ``path``; a larger one is refused unread."""
    file = str(path)
    with open_regular(path, what, pipe) as fh:
        st = os.fstat(fh.fileno())
        if st.st_size > limit:
            raise GrpoTrlError(f"{st.st_size:,} bytes: too large for a {what} (limit {limit:,})", file=file)
        try:
            raw = fh.read(limit + 1)
        except OSError as exc:
            raise GrpoTrlError(f"cannot read the {what}: {exc.strerror or exc}", file=file) from None
    if not raw and stat.S_ISFIFO(st.st_mode):
        raise GrpoTrlError(f"a named pipe with nothing writing to it, not a {what}", file=file, fix=f"name the {what}")
    if len(raw) > limit:  # it grew while read, or a pipe
        raise GrpoTrlError(f"more than {limit:,} bytes: too large for a {what}", file=file)
    return raw


def read_text(path: str | Path, limit: int, what: str = "file") -> str:
    """``read_bytes`` decoded as UTF-8 (one error naming the first bad byte)."""
    raw = read_bytes(path, limit, what)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        why = f"not UTF-8 text (byte {exc.start}: {raw[exc.start : exc.start + 1]!r})"
        raise GrpoTrlError(why, file=str(path), fix="save it as UTF-8") from None


def read_json(path: str | Path, limit: int = STATE_BYTES, pipe: bool = True) -> Any:
    """The JSON in ``path`` through ``read_bytes``; raises ``OSError`` or ``ValueError``."""
    try:
        return json.loads(read_bytes(path, limit, "JSON file", pipe))
    except RecursionError:  # json nests by recursion: [[[[...]]]] a few thousand deep
        raise GrpoTrlError("nested too deep to be a JSON file grpo-trl reads", file=str(path)) from None


def read_json_head(path: str | Path, limit: int) -> Any:
    """The JSON in the regular file ``path`` (at most ``limit`` bytes), None when it cannot be read or parsed."""
    try:
        return read_json(path, limit, pipe=False)
    except (OSError, ValueError):  # GrpoTrlError is a ValueError
        return None


def read_jsonl(path: str | Path, max_line: int = MAX_LINE, limit: int = MAX_LOG) -> list[dict]:
    """The rows of a JSON-lines log, a line at a time, up to ``limit`` bytes: a bad, cut (a kill) or over-long line
    costs that line; past ``4 * max_line`` bytes of over-long lines (a hole of NULs, another file) the read ends."""
    if not Path(path).is_file():
        return []
    rows, skipped = [], 0
    with open_regular(path) as fh:
        while (line := fh.readline(max_line + 1)) and fh.tell() <= limit and skipped <= 4 * max_line:
            long = len(line) > max_line  # skipped a piece at a time, never held whole
            while long and not line.endswith(b"\n") and (skipped := skipped + len(line)) <= 4 * max_line:
                line = fh.readline(max_line)
            try:
                row = None if long else json.loads(line.decode(errors="replace"))
            except (ValueError, RecursionError):
                continue
            if isinstance(row, dict):
                rows.append(row)
    return rows


def read_yaml(path: str | Path, limit: int = 2**24) -> Any:
    return load_yaml(read_bytes(path, limit, "YAML file").decode(errors="replace"), str(path))[0]


def load_yaml(text: str, file: str, loader: type[yaml.SafeLoader] = yaml.SafeLoader) -> tuple[Any, yaml.SafeLoader]:
    """YAML ``text`` -> (data, the loader), refused before it is built when its alias expansion or nesting exceeds
    the bounds; ``yaml.YAMLError`` for bad YAML."""
    reader, sizes, deep = loader(text), {}, f"nested more than {MAX_YAML_DEPTH} levels deep"

    def size(node: yaml.Node, depth: int) -> int:  # an alias is the node it names: each one is counted once
        if depth > MAX_YAML_DEPTH:  # also where an alias names its own ancestor
            raise GrpoTrlError(deep, file=file, fix="a config is a few levels of sections")
        if id(node) not in sizes:
            children = node.value if isinstance(node, yaml.SequenceNode) else []
            if isinstance(node, yaml.MappingNode):
                children = [n for pair in node.value for n in pair]
            if (total := 1 + sum(size(c, depth + 1) for c in children)) > MAX_YAML_NODES:
                why = f"the YAML expands to more than {MAX_YAML_NODES:,} values (aliases/anchors repeating each other)"
                raise GrpoTrlError(why, file=file, fix="write the values out; a config needs no nested aliases")
            sizes[id(node)] = total
        return sizes[id(node)]

    try:
        node = reader.get_single_node()  # PyYAML composes recursively: a deep enough document overflows the stack
        if node is None:
            return None, reader
        size(node, 1)
        return reader.construct_document(node), reader
    except RecursionError:
        raise GrpoTrlError(deep, file=file) from None
    finally:
        reader.dispose()
