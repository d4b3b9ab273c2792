"""The host side of a sandboxed run (grpo_trl/sandbox.py): its uid (as root, one per concurrent run: the process
limit binds exactly and cleanup finds what it left), its directory, and removing all it left behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path, PurePosixPath

UID_BASE = 1_790_000_000  # per-run uids come from here (unnamed, unused by any distribution)
UID_SLOTS = 256
NOBODY = 65534
LOCKS = Path("/run/grpo-trl-uids")  # a slot's lock: processes with different $TMPDIR never share a uid


class SandboxError(RuntimeError):
    """The sandbox cannot run anything here (for example no interpreter the unprivileged user can execute)."""


class UidPool:
    """Unprivileged uids for runs started as root, one per concurrent run across threads and processes (``flock`` on
    a file opened per run); ``nobody``, shared, where the range is not mapped (rootless containers)."""

    dedicated = True

    def acquire(self) -> tuple[int, object | None]:
        if not self.dedicated:
            return NOBODY, None
        for slot in range(UID_SLOTS):
            handle = open(lock_dir() / f"{slot}.lock", "a")  # noqa: SIM115 - held for the run
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


uids = UidPool()


@functools.cache
def lock_dir() -> Path:
    """Where the slots' locks are: ``LOCKS``, one place whatever ``$TMPDIR`` says; ``base_dir()`` without a writable
    ``/run``."""
    try:
        LOCKS.mkdir(mode=0o700, exist_ok=True)
        return LOCKS
    except OSError:
        (locks := base_dir() / "locks").mkdir(mode=0o700, exist_ok=True)
        return locks


@functools.cache
def base_dir() -> Path:
    """``$TMPDIR/grpo-trl-sandbox-<euid>``, mode 0711 (runs reach their own directory, cannot write beside it); run
    directories of dead processes are removed on first use."""
    base = Path(tempfile.gettempdir()) / f"grpo-trl-sandbox-{os.geteuid()}"
    with contextlib.suppress(FileExistsError):
        base.mkdir(mode=0o711)
    st = os.lstat(base)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        raise SandboxError(f"{base} is not a directory owned by this user; remove it")
    os.chmod(base, 0o711)
    (base / "mnt").mkdir(mode=0o700, exist_ok=True)  # where a run's private tmpfs is mounted (in its namespace only)
    for run in base.glob("run-*"):
        pid = run.name.split("-")[1]
        if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            rmtree(run)
    return base


SHARED_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")


def _remove_files(uid: int, top: str, depth: int = 8) -> None:
    """Delete what ``uid`` left under ``top``, looking only where it could write: world-writable directories (and
    its own, which go whole), ``depth`` levels down."""
    try:
        entries = list(os.scandir(top))
    except OSError:
        return
    for entry in entries:
        try:
            st = entry.stat(follow_symlinks=False)
            if st.st_uid == uid:
                rmtree(Path(entry.path)) if stat.S_ISDIR(st.st_mode) else os.unlink(entry.path)
            elif stat.S_ISDIR(st.st_mode) and st.st_mode & 0o002 and depth > 0:
                _remove_files(uid, entry.path, depth - 1)
        except OSError:
            continue


def _remove_ipc(uid: int) -> None:
    """Remove the SysV shared memory, message queues and semaphores ``uid`` created (they outlive processes)."""
    import ctypes

    libc = ctypes.CDLL(None)
    for kind, remove in (("shm", libc.shmctl), ("msg", libc.msgctl), ("sem", libc.semctl)):
        try:
            header, *rows = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()
        except OSError:
            continue
        column = header.split().index("cuid")
        for row in rows:
            fields = row.split()
            if int(fields[column]) == uid:
                remove(int(fields[1]), 0, None)  # IPC_RMID = 0 (semctl's semnum is ignored)


def remove_strays(uid: int) -> None:
    """What a run's own uid left without namespaces: its files in world-writable directories under ``SHARED_DIRS``
    and its SysV IPC objects (not under the shared ``nobody``)."""
    if uid != NOBODY:
        for top in {tempfile.gettempdir(), *SHARED_DIRS}:
            _remove_files(uid, top)
        _remove_ipc(uid)


def rmtree(path: Path) -> None:
    """Remove what a run left, however deep (past Python's recursion limit, which ``shutil.rmtree`` hits: ``rm``)."""

    def fix(func, p, _exc):  # a run may leave read-only or 000 directories; never chmod through a link, nor above
        with contextlib.suppress(OSError):
            if str(p) != str(path):
                os.chmod(os.path.dirname(p), 0o700)
            if not os.path.islink(p):
                os.chmod(p, 0o700)
            func(p)

    try:
        shutil.rmtree(path, onerror=fix)
    except RecursionError:  # a run nests thousands of folders in a second; rm walks them with no recursion limit
        subprocess.run(["rm", "-rf", "--", path], stdin=subprocess.DEVNULL, capture_output=True, check=False)


def _env(home: str) -> dict[str, str]:
    """The whole environment a run sees: nothing inherited, so no keys or tokens."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "TMPDIR": home,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
    }


def _can_run(exe: str, uid: int | None) -> bool:
    try:
        kw = {} if uid is None else {"user": uid, "group": uid, "extra_groups": []}
        return subprocess.run([exe, "-I", "-c", "pass"], env=_env("/"), timeout=30, **kw).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


ENV_PYTHON = "GRPO_TRL_SANDBOX_PYTHON"  # interpreter override when the sandbox user cannot run sys.executable


@functools.cache  # called under the fork server's lock (sandbox._fork_server)
def interpreter() -> str:
    """The Python the sandbox runs (by the unprivileged user, as root): ``$GRPO_TRL_SANDBOX_PYTHON``, else
    ``sys.executable``, else a system ``python3``."""
    # as root, probed under a uid slot of its own: a run on that uid could kill the probe (kill(-1))
    uid, handle = uids.acquire() if os.geteuid() == 0 else (None, None)
    candidates = [os.environ.get(ENV_PYTHON), sys.executable, shutil.which("python3", path="/usr/bin:/bin")]
    try:
        if uid is not None and not _can_run("/bin/true" if os.path.exists("/bin/true") else sys.executable, uid):
            uids.dedicated, uid = False, NOBODY
        for exe in filter(None, candidates):
            if _can_run(exe, uid):
                return exe
    finally:
        uids.release(handle)
    who = "this user" if uid is None else f"uid {uid}"
    raise SandboxError(
        f"no Python interpreter that {who} can execute (tried {', '.join(filter(None, candidates))}); "
        f"set {ENV_PYTHON} to one it can run"
    )


def write_files(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        rel = PurePosixPath(name)
        if rel.is_absolute() or ".." in rel.parts or not rel.parts or str(rel) == "main.py":
            raise ValueError(f"sandbox file name {name!r} must be a relative path inside the run directory")
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
