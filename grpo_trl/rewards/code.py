"""Code rewards: ``code_tests`` runs the completion's last Python block against the row's tests in the sandbox;
``code_format`` checks that there is such a block and that it parses (nothing is run).

Tests come from the row, in any of these shapes (the ``code`` builder writes the first):

- ``tests``: ``{"asserts": [...], "setup": "...", "io": [{"input": ..., "output": ...}]}`` (a dict or its JSON);
- ``verification_info``: open-r1's ``{"language": "python", "test_cases": [{"input", "output", "type"}]}``;
- ``test_list`` (+ ``test_setup_code``, ``test_imports``): MBPP's assert statements.

Example:
    >>> code_format(["```python\\nprint(1)\\n```", "```python\\nprint(\\n```", "no code"])
    [1.0, 0.5, 0.0]
"""

from __future__ import annotations

import ast
import json
import os
import secrets
from typing import Any

from grpo_trl.rewards.registry import register_reward, text_of
from grpo_trl.sandbox import Limits, run_many

FENCE = "```"
PYTHON_TAGS = {"", "python", "py", "python3", "py3"}
MAX_CODE_CHARS = 100_000  # a longer block is not run (and does not parse, for code_format)


def extract_code(text: str) -> str | None:
    """The last fenced block tagged ``python``/``py`` (or untagged), or None. Linear: two ``rfind`` calls.

    >>> extract_code("a ```python\\nx = 1\\n``` b ```py\\ny = 2\\n```")
    'y = 2\\n'
    >>> extract_code("```bash\\nls\\n```") is None
    True
    """
    end = text.rfind(FENCE)
    start = text.rfind(FENCE, 0, end) if end > 0 else -1
    if start < 0:
        return None
    body = text[start + len(FENCE) : end]
    tag, newline, code = body.partition("\n")
    if not newline or tag.strip().lower() not in PYTHON_TAGS or len(code) > MAX_CODE_CHARS:
        return None
    return code


def parse_tests(row: dict[str, Any]) -> dict | None:
    """The row's tests as ``{"setup": str, "asserts": [str], "io": [(input, output)]}``, or None when it has none."""
    raw = row.get("tests")
    if raw is None and row.get("verification_info") is not None:
        info = row["verification_info"]
        info = json.loads(info) if isinstance(info, str) else info
        raw = {"io": [c for c in info.get("test_cases", []) if c.get("type", "stdin_stdout") == "stdin_stdout"]}
    if raw is None and row.get("test_list") is not None:
        setup = "\n".join(filter(None, [*(row.get("test_imports") or []), row.get("test_setup_code") or ""]))
        raw = {"asserts": list(row["test_list"]), "setup": setup}
    if raw is None:
        return None
    raw = json.loads(raw) if isinstance(raw, str) else raw
    io = [(str(c["input"]), str(c["output"])) for c in raw.get("io") or []]
    asserts = [str(a) for a in raw.get("asserts") or []]
    if not io and not asserts:
        return None
    return {"setup": str(raw.get("setup") or ""), "asserts": asserts, "io": io}


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.strip().splitlines()]


# The assert harness (main.py; the solution is solution.py beside it). Everything it uses after the solution has run
# is bound before: patching builtins, os, sys or json, or replacing sys.stdout, changes nothing it does. The tests are
# compiled before the solution runs and see the builtins as they were then. Results go to its own copy of stdout as
# "<token>:<i>", the token read from stdin (then closed) before the solution runs; the parent counts each i in
# range(len(tests)) once, so a score is in [0, 1] whatever is printed. An exception or exit in the solution passes
# nothing; after the last test the harness exits at once (no atexit handler, __del__ or thread runs after it).
# The token and the compiled tests live in this function's frame, so right before the solution runs it installs an
# audit hook (which nothing can remove) refusing what reaches another frame or raw memory: sys._getframe (except from
# the stdlib functions that only read the caller's module name: namedtuple, typing, enum), frames of tracebacks,
# generators and coroutines, sys._current_frames, settrace/setprofile, gc (unloaded first), ctypes, new audit hooks
# (a hook sees each test's code object), new programs (exec, spawn, subprocess, _posixsubprocess), chdir/symlink/link,
# and opening anything under /proc or /dev but /dev/null, /dev/zero, /dev/urandom, /dev/random. The hook's own frame
# holds nothing secret.
_HARNESS = """
def __grade(tests):
    import builtins, os, sys, _thread, collections, enum, typing
    _exec, _compile, _write, _BaseException, _dict = exec, compile, os.write, BaseException, dict
    _exit, _getframe, _ident, _getcwd = os._exit, sys._getframe, _thread.get_ident, os.getcwd
    _str, _bytes, _isinstance, _RuntimeError = str, bytes, isinstance, RuntimeError
    pristine = _dict(vars(builtins))
    token = os.read(0, 64).strip()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)  # the stdin file still held the token: a solution could seek back and read it
    os.close(null)
    out = os.dup(1)
    codes, n = [], len(tests)
    for t in tests:
        try:
            codes.append(_compile(t, "<test>", "exec"))
        except (SyntaxError, ValueError):
            codes.append(None)
    with open("solution.py", encoding="utf-8") as f:
        solution = f.read()
    try:
        os.remove("main.py")  # this file holds the tests: a solution reading it could answer from a lookup table
    except OSError:
        pass
    refused = frozenset(
        "sys._current_frames sys.settrace sys.setprofile sys.addaudithook gc.get_objects gc.get_referrers "
        "gc.get_referents os.chdir os.fchdir os.symlink os.link os.system os.exec os.posix_spawn os.spawn "
        "subprocess.Popen pty.spawn".split()
    )
    frame_attrs = frozenset(("tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_code"))
    # stdlib code that reads only the module name of its caller's frame and hands the frame to nothing else (logging
    # and traceback hand frames to functions looked up in their module, which a solution can replace: not trusted)
    name_readers = frozenset(
        (collections.namedtuple.__code__, typing._caller.__code__, enum.EnumType._create_.__code__)
    )
    # _posixsubprocess starts a program without an audit event (and outside this hook); _test*: the C-API test kits
    # gc: under DEBUG_SAVEALL, gc.garbage keeps finished frames, whose f_back leads here
    modules = frozenset(("_posixsubprocess", "_xxsubinterpreters", "gc"))
    devices = frozenset(("/dev/null", "/dev/zero", "/dev/urandom", "/dev/random"))
    cwd, busy = _getcwd(), set()

    def guard(event, args):
        if event in refused or event.startswith("ctypes."):
            raise _RuntimeError("code_tests: " + event + " is refused")
        if event == "import" and (args[0] in modules or _str.startswith(args[0], "_test")):
            raise _RuntimeError("code_tests: importing " + args[0] + " is refused")
        if event == "open":
            path = args[0]
            if _isinstance(path, _bytes):
                path = _bytes.decode(path, "utf-8", "surrogateescape")
            if _isinstance(path, _str):
                path = _str.join("", (path,))  # a str subclass's own methods are the solution's code
                parts = _str.split(cwd + "/" + path, "/")  # an absolute path gives "//" in the middle: harmless
                if "proc" in parts or ("dev" in parts and path not in devices):
                    raise _RuntimeError("code_tests: opening " + path + " is refused")
        elif event == "sys._getframe" or (event == "object.__getattr__" and args[1] in frame_attrs):
            me = _ident()
            if me in busy:  # the hook's own frame access below (this frame is never handed out: tb_frame is refused)
                return
            busy.add(me)
            try:
                caller = _getframe(1)
                allowed = event == "sys._getframe" and caller.f_code in name_readers
            finally:
                busy.discard(me)
            if not allowed:
                raise _RuntimeError("code_tests: " + event + " is refused")

    ns = {"__name__": "solution", "__builtins__": builtins}
    sys.modules.pop("gc", None)
    sys.addaudithook(guard)
    try:
        _exec(_compile(solution, "solution.py", "exec"), ns)
    except _BaseException:
        _exit(0)
    env = _dict(ns)
    env["__builtins__"] = pristine
    i = 0
    while i < n:
        if codes[i] is not None:
            try:
                _exec(codes[i], env)
            except _BaseException:
                pass
            else:
                _write(out, b"\\n" + token + b":%d\\n" % i)
        i += 1
    _exit(0)
"""


# The harness runs in a thread of its own: a signal handler (which no audit event covers) runs in the main thread and
# is handed the frame running there, main.py's module frame, which holds neither the token nor the tests (its code's
# constants do: f_code is refused). The main thread waits until the harness ends the process.
_START = """
def __run(tests):
    import os
    _exit = os._exit
    try:
        __grade(tests)
    finally:
        _exit(0)


import _thread
_thread.start_new_thread(__run, (%r,))
__done = _thread.allocate_lock()
__done.acquire()
__done.acquire()
"""


def _assert_script(asserts: list[str]) -> str:
    """``main.py`` for a row's asserts: ``solution.py`` runs as a module (its ``if __name__ == "__main__":`` block
    does not run), then each assert in its namespace (see ``_HARNESS``)."""
    return _HARNESS + _START % (asserts,)


def _passed_asserts(stdout: str, token: str, total: int) -> int:
    """How many of ``total`` asserts the harness reported passed: each index in range once, nothing else counts."""
    seen = set()
    for line in stdout.splitlines():
        head, sep, index = line.partition(":")
        if sep and head == token and index.isascii() and index.isdigit() and len(index) < 10 and int(index) < total:
            seen.add(int(index))
    return len(seen)


@register_reward("code_tests")
class CodeTests:
    """Fraction of the row's tests the last Python block passes (``binary=True``: 1.0 only if all pass); 0.0 without
    a block; None for a row without tests. Asserts run together in one sandboxed process per completion; each
    stdin/stdout pair runs in its own, output compared line by line with surrounding whitespace stripped. At most
    ``max_workers`` processes at once (default: twice the usable cores, as a run spends much of its time starting and
    ending, not computing); each has ``timeout`` seconds (wall and CPU) and
    ``memory_mb``.
    """

    def __init__(
        self, binary: bool = False, timeout: float = 10.0, memory_mb: int = 512, max_workers: int | None = None
    ):
        if timeout <= 0 or memory_mb < 64:
            raise ValueError("code_tests needs timeout > 0 and memory_mb >= 64")
        self.binary = binary
        self.limits = Limits(cpu_seconds=timeout, wall_seconds=timeout, memory_mb=memory_mb)
        self.max_workers = max_workers or 2 * len(os.sched_getaffinity(0))

    def __call__(self, completions: list, **columns) -> list[float | None]:
        texts = text_of(completions)
        n = len(texts)
        keys = [
            k for k in ("tests", "verification_info", "test_list", "test_setup_code", "test_imports") if k in columns
        ]
        rows = [{k: columns[k][i] for k in keys} for i in range(n)]
        out: list[float | None] = [0.0] * n
        jobs, owners = [], []  # owners[j] = (row, kind, payload)
        totals = [0] * n
        for i, (text, row) in enumerate(zip(texts, rows, strict=True)):
            tests = parse_tests(row)
            if tests is None:
                out[i] = None
                continue
            totals[i] = len(tests["asserts"]) + len(tests["io"])
            code = extract_code(text)
            if code is None:
                continue
            if tests["asserts"]:
                token = secrets.token_hex(16)
                script = _assert_script(tests["asserts"])
                solution = f"{tests['setup']}\n{code}"
                jobs.append(
                    {"code": script, "stdin": token, "files": {"solution.py": solution}, "limits": self.limits}
                )
                owners.append((i, "asserts", (token, len(tests["asserts"]))))
            for stdin, expected in tests["io"]:
                jobs.append({"code": f"{tests['setup']}\n{code}", "stdin": stdin, "limits": self.limits})
                owners.append((i, "io", expected))
        passed = [0] * n
        for (i, kind, payload), result in zip(owners, run_many(jobs, max_workers=self.max_workers)):
            if kind == "asserts":
                passed[i] += _passed_asserts(result.stdout, *payload)
            elif result.ok and not result.truncated and _lines(result.stdout) == _lines(payload):
                passed[i] += 1
        for i in range(n):
            if out[i] is None or not totals[i]:
                continue
            fraction = passed[i] / totals[i]
            out[i] = (1.0 if fraction == 1.0 else 0.0) if self.binary else fraction
        return out


@register_reward("code_format")
def code_format(completions: list, **kwargs) -> list[float]:
    """1.0 for a last fenced Python block that parses (``ast.parse``: nothing runs), 0.5 for one that does not, else
    0.0."""
    out = []
    for text in text_of(completions):
        code = extract_code(text)
        if code is None:
            out.append(0.0)
            continue
        try:
            ast.parse(code)
            out.append(1.0)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            out.append(0.5)
    return out


__all__ = ["CodeTests", "code_format", "extract_code", "parse_tests"]
