"""Run untrusted Python (model-written code) in a separate, limited process: the one sandbox grpo-trl has.

Each run is a fresh ``python -I`` process in an empty temporary directory (removed afterwards) with a stripped
environment, ``setrlimit`` bounds on CPU time, address space, file size, processes and core dumps, a wall-clock
deadline that kills everything the run started, and stdout/stderr read incrementally up to a byte bound. Run as root,
the child gets its own unprivileged uid (one per concurrent run, see ``_UidPool``), because the process-count limit
does not bind root and a root child could read or kill anything.

It is NOT a VM or a container: the network is reachable, world-writable directories (``/tmp``) are writable, and the
kernel is shared. For code from strangers at scale use a remote executor (E2B, Modal, a gVisor/Firecracker service)
behind the same ``run_many`` call.

Example:
    >>> r = run_python("print(sum(range(10)))")
    >>> (r.ok, r.stdout)
    (True, '45\\n')
    >>> run_python("while True: pass", limits=Limits(cpu_seconds=1, wall_seconds=2)).ok
    False
"""

from __future__ import annotations

import fcntl
import os
import selectors
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

UID_BASE = 1_790_000_000  # per-run uids come from here (unnamed, unused by any distribution)
UID_SLOTS = 256
NOBODY = 65534
MAX_OPEN_FILES = 256
ENV_PYTHON = "GRPO_TRL_SANDBOX_PYTHON"  # interpreter override when the sandbox user cannot run sys.executable

_BOOT = (Path(__file__).parent / "_sandbox_boot.py").read_text()  # runs in the child, as `python -I -c`


@dataclass(frozen=True)
class Limits:
    """Bounds for one run. ``max_processes`` counts the run's own processes and threads at once."""

    cpu_seconds: float = 5
    wall_seconds: float = 10
    memory_mb: int = 512
    file_size_mb: int = 16
    max_processes: int = 32
    max_output_bytes: int = 65536  # per stream; a run that writes more is killed and marked truncated


@dataclass
class Result:
    """What a run did. ``returncode`` is None when it was killed at the wall-clock deadline (``timed_out``)."""

    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool
    truncated: bool
    duration_s: float

    @property
    def ok(self) -> bool:
        """Exited 0 within the deadline."""
        return self.returncode == 0 and not self.timed_out


class SandboxError(RuntimeError):
    """The sandbox cannot run anything here (for example no interpreter the unprivileged user can execute)."""


class _UidPool:
    """Unprivileged uids for runs started as root, one per concurrent run across processes (``flock``ed files).

    A run's own uid makes ``RLIMIT_NPROC`` exact and lets the cleanup kill every process the run left behind, even
    ones that left its process group. Falls back to ``nobody`` (shared: cleanup by process group only) where the
    range is not mapped (rootless containers).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.dedicated = True

    def acquire(self) -> tuple[int, object | None]:
        if not self.dedicated:
            return NOBODY, None
        locks = _base_dir() / "locks"
        with self._lock:
            locks.mkdir(mode=0o700, exist_ok=True)
            for slot in range(UID_SLOTS):
                handle = open(locks / f"{slot}.lock", "a")  # noqa: SIM115 - held for the run
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    handle.close()
                    continue
                return UID_BASE + slot, handle
        raise SandboxError(f"more than {UID_SLOTS} sandbox runs at once on this machine")

    @staticmethod
    def release(handle: object | None) -> None:
        if handle is not None:
            handle.close()  # closing drops the flock


_uids = _UidPool()
_python: str | None = None
_python_lock = threading.Lock()
_base: Path | None = None


def _base_dir() -> Path:
    """``$TMPDIR/grpo-trl-sandbox-<euid>``, mode 0711: runs can reach their own directory but not write beside it.

    Run directories left by a process that was killed (``run-<pid>-*`` of a dead pid) are removed on first use.
    """
    global _base
    if _base is not None:
        return _base
    base = Path(tempfile.gettempdir()) / f"grpo-trl-sandbox-{os.geteuid()}"
    try:
        base.mkdir(mode=0o711)
    except FileExistsError:
        pass
    st = os.lstat(base)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        raise SandboxError(f"{base} is not a directory owned by this user; remove it")
    os.chmod(base, 0o711)
    for run in base.glob("run-*"):
        pid = run.name.split("-")[1]
        if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            _rmtree(run)
    _base = base
    return base


def _remove_strays(uid: int) -> None:
    """Delete what a run's dedicated uid left at the top of world-writable directories (``/tmp``, ``/dev/shm``)."""
    for shared in {tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm"}:
        try:
            entries = list(os.scandir(shared))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.stat(follow_symlinks=False).st_uid != uid:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    _rmtree(Path(entry.path))
                else:
                    os.unlink(entry.path)
            except OSError:
                continue


def _can_run(exe: str, uid: int | None) -> bool:
    try:
        kw = {} if uid is None else {"user": uid, "group": uid, "extra_groups": []}
        return subprocess.run([exe, "-I", "-c", "pass"], env=_env("/"), timeout=30, **kw).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def interpreter() -> str:
    """The Python the sandbox runs: ``$GRPO_TRL_SANDBOX_PYTHON``, else ``sys.executable``, else a system ``python3``.

    Run as root, it must be executable by the unprivileged user (an interpreter under a 0700 ``/root`` is not).
    """
    global _python
    with _python_lock:
        if _python is not None:
            return _python
        uid = None
        if os.geteuid() == 0:
            uid = UID_BASE
            if not _can_run("/bin/true" if os.path.exists("/bin/true") else sys.executable, uid):
                _uids.dedicated, uid = False, NOBODY
        candidates = [os.environ.get(ENV_PYTHON), sys.executable, shutil.which("python3", path="/usr/bin:/bin")]
        for exe in filter(None, candidates):
            if _can_run(exe, uid):
                _python = exe
                return exe
        who = "this user" if uid is None else f"uid {uid}"
        raise SandboxError(
            f"no Python interpreter that {who} can execute (tried {', '.join(filter(None, candidates))}); "
            f"set {ENV_PYTHON} to one it can run"
        )


def _env(home: str) -> dict[str, str]:
    """The whole environment a run sees: nothing inherited, so no keys or tokens."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "TMPDIR": home,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
    }


def _write_files(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        rel = PurePosixPath(name)
        if rel.is_absolute() or ".." in rel.parts or not rel.parts or str(rel) == "main.py":
            raise ValueError(f"sandbox file name {name!r} must be a relative path inside the run directory")
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def _chown_tree(root: Path, uid: int) -> None:
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [dirpath, *(os.path.join(dirpath, n) for n in dirnames + filenames)]:
            os.chown(name, uid, uid)


def _kill_uid(uid: int) -> None:
    """SIGKILL every live process of ``uid`` (a run's dedicated uid), repeating until none is left (bounded)."""
    for _ in range(100):
        found = False
        for p in os.listdir("/proc"):
            if not p.isdigit():
                continue
            try:
                if os.stat(f"/proc/{p}").st_uid != uid:
                    continue
                with open(f"/proc/{p}/stat", "rb") as f:
                    if f.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X"):
                        continue  # a zombie: already dead, waiting for its parent
                os.kill(int(p), signal.SIGKILL)
                found = True
            except (OSError, IndexError):
                continue
        if not found:
            return
        time.sleep(0.002)


def _kill_all(proc: subprocess.Popen, uid: int | None) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if uid is not None and uid != NOBODY:
        _kill_uid(uid)
        _remove_strays(uid)


def _rmtree(path: Path) -> None:
    def fix(func, p, _exc):  # a run may leave read-only or 000 directories
        try:
            os.chmod(os.path.dirname(p), 0o700)
            os.chmod(p, 0o700)
            func(p)
        except OSError:
            pass

    shutil.rmtree(path, onerror=fix)


def run_python(
    code: str, *, stdin: str = "", limits: Limits = Limits(), files: dict[str, str] | None = None
) -> Result:
    """Run ``code`` as ``main.py`` in a fresh sandboxed process; ``files`` (relative name -> text) go beside it.

    Never raises for anything the code does; raises ``ValueError`` for a bad file name and ``SandboxError`` when no
    interpreter can be run at all.
    """
    exe = interpreter()
    uid, handle = _uids.acquire() if os.geteuid() == 0 else (None, None)
    root = Path(tempfile.mkdtemp(prefix=f"run-{os.getpid()}-", dir=_base_dir()))
    start = time.monotonic()
    try:
        _write_files(root, files or {})
        (root / "main.py").write_text(code, encoding="utf-8", errors="surrogatepass")
        with tempfile.TemporaryFile() as stdin_file:
            stdin_file.write(stdin.encode("utf-8", errors="surrogatepass"))
            stdin_file.seek(0)
            kw: dict = {}
            if uid is not None:
                _chown_tree(root, uid)
                kw = {"user": uid, "group": uid, "extra_groups": []}
            args = [
                exe,
                "-I",
                "-c",
                _BOOT,
                str(max(1, int(limits.cpu_seconds + 0.999))),
                str(limits.memory_mb << 20),
                str(limits.file_size_mb << 20),
                str(limits.max_processes),
                str(MAX_OPEN_FILES),
            ]
            proc = subprocess.Popen(
                args,
                stdin=stdin_file,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=root,
                env=_env(str(root)),
                start_new_session=True,
                umask=0o077,
                **kw,
            )
        stdout, stderr, timed_out, truncated = _collect(
            proc, start + limits.wall_seconds, limits.max_output_bytes, uid
        )
        return Result(
            returncode=None if timed_out else proc.returncode,
            stdout=stdout,
            stderr=stderr,
            timed_out=timed_out,
            truncated=truncated,
            duration_s=time.monotonic() - start,
        )
    finally:
        _rmtree(root)
        _uids.release(handle)


def _collect(proc: subprocess.Popen, deadline: float, bound: int, uid: int | None) -> tuple[str, str, bool, bool]:
    """Read both pipes until the run exits (or hits the deadline / output bound), then kill what it left behind."""
    bufs = {proc.stdout: bytearray(), proc.stderr: bytearray()}
    timed_out = truncated = False
    with selectors.DefaultSelector() as sel:
        for pipe in bufs:
            sel.register(pipe, selectors.EVENT_READ)
        while sel.get_map():
            now = time.monotonic()
            if now >= deadline:
                timed_out = proc.poll() is None
                break
            exited = proc.poll() is not None
            ready = sel.select(timeout=min(0.05, deadline - now))
            if exited and not ready:
                break  # the run exited and its pipes are drained; a leftover child may still hold them open
            for key, _ in ready:
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                buf = bufs[key.fileobj]
                room = bound - len(buf)
                buf += chunk[:room]
                truncated = truncated or len(chunk) > room
            if truncated:
                break
    _kill_all(proc, uid)
    proc.wait()
    for pipe in bufs:
        pipe.close()
    return (*(bytes(b).decode("utf-8", errors="replace") for b in bufs.values()), timed_out, truncated)


def run_many(jobs: list[dict], *, max_workers: int) -> list[Result]:
    """``run_python(**job)`` for each job, at most ``max_workers`` at once; results in job order.

    >>> [r.stdout for r in run_many([{"code": "print(1)"}, {"code": "print(input())", "stdin": "x"}], max_workers=2)]
    ['1\\n', 'x\\n']
    """
    if max_workers < 1:
        raise ValueError(f"max_workers must be >= 1, got {max_workers}")
    if not jobs:
        return []
    with ThreadPoolExecutor(max_workers=min(max_workers, len(jobs)), thread_name_prefix="sandbox") as pool:
        return list(pool.map(lambda job: run_python(**job), jobs))


__all__ = ["Limits", "Result", "SandboxError", "interpreter", "run_many", "run_python"]
