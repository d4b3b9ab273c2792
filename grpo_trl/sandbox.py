"""Run untrusted Python (model-written code) in a separate, limited process: the one sandbox grpo-trl has.

Each run is a process forked from a fork server (started once; ``_sandbox_ns.py``), in an empty temporary directory,
with a stripped environment, ``setrlimit`` bounds, ``no_new_privs``, a wall-clock deadline that kills all it started
and its output read up to a bound; as root, its own uid and, where mounts are allowed, its own PID, mount and IPC
namespaces (``isolation()``). It is NOT a VM: the network is reachable, the kernel shared (docs/safety.md).

Example:
    >>> r = run_python("print(sum(range(10)))")
    >>> (r.ok, r.stdout)
    (True, '45\\n')
    >>> run_python("while True: pass", limits=Limits(cpu_seconds=1, wall_seconds=2)).ok
    False
"""

from __future__ import annotations

import json
import logging
import os
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from grpo_trl._sandbox_host import NOBODY, UID_BASE, SandboxError, base_dir, chown_tree, kill_all, rmtree, uids

MAX_OPEN_FILES = 256
MAX_INODES = 8192  # files and directories a run may hold at once (namespaces mode)
ENV_PYTHON = "GRPO_TRL_SANDBOX_PYTHON"  # interpreter override when the sandbox user cannot run sys.executable
ENV_NAMESPACES = "GRPO_TRL_SANDBOX_NAMESPACES"  # "0": do not use namespaces even where they work ("uid" mode)

logger = logging.getLogger(__name__)
_BOOT = (Path(__file__).parent / "_sandbox_boot.py").read_text()  # compiled in the fork server, run by each run
_NS = (Path(__file__).parent / "_sandbox_ns.py").read_text()  # the fork server and each run's launcher


@dataclass(frozen=True)
class Limits:
    """Bounds for one run. ``max_processes`` counts the run's own processes and threads at once."""

    cpu_seconds: float = 5
    wall_seconds: float = 10
    memory_mb: int = 512
    file_size_mb: int = 16
    max_processes: int = 32
    max_output_bytes: int = 65536  # per stream; a run that writes more is killed and marked truncated
    disk_mb: int = 64  # all its files together (namespaces mode: a private tmpfs, so memory); else file_size_mb each


@dataclass
class Result:
    """What a run did. ``returncode`` is None when it was killed at the wall-clock deadline (``timed_out``), -9 when
    it was killed at the output bound (``truncated``)."""

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


_python: str | None = None
_python_lock = threading.Lock()
_mode: str | None = None
_mode_lock = threading.Lock()
_server: tuple[subprocess.Popen, socket.socket] | None = None
_server_lock = threading.Lock()


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
                uids.dedicated, uid = False, NOBODY
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


def isolation() -> str:
    """How runs are isolated here, decided once per process: ``"namespaces"`` (root, Linux >= 5.12, mounts allowed),
    ``"uid"`` (root without them, or ``$GRPO_TRL_SANDBOX_NAMESPACES=0``), ``"subreaper"`` (not root, Linux >= 5.3) or
    ``"none"`` (not root, elsewhere); docs/safety.md says what each one isolates."""
    global _mode
    with _mode_lock:
        if _mode is None:
            if os.geteuid() == 0 and os.environ.get(ENV_NAMESPACES) == "0":
                _mode = "uid"
            elif os.geteuid() != 0 and sys.platform != "linux":
                _mode = "none"
            else:
                want, _mode = ("namespaces", "uid") if os.geteuid() == 0 else ("subreaper", "none")
                why = ""
                try:
                    probe = _run("import os\nprint(os.getpid(), os.getuid())", "", Limits(), {}, want)
                    pid, uid = probe.stdout.split() if probe.ok else ("", "")
                    if want == "subreaper" or (pid == "2" and uid != "0"):
                        _mode = want if probe.ok else _mode
                    why = "" if _mode == want else (probe.stderr or probe.stdout)[-300:] or f"exit {probe.returncode}"
                except (OSError, subprocess.SubprocessError, ValueError) as e:
                    why = str(e)
                if why:
                    logger.warning("sandbox: %s unavailable here (%s); runs are isolated as %r", want, why, _mode)
        return _mode


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


def run_python(
    code: str, *, stdin: str = "", limits: Limits = Limits(), files: dict[str, str] | None = None
) -> Result:
    """Run ``code`` as ``main.py`` in a fresh sandboxed process; ``files`` (relative name -> text) go beside it.

    Never raises for anything the code does; raises ``ValueError`` for a bad file name and ``SandboxError`` when no
    interpreter can be run at all.
    """
    return _run(code, stdin, limits, files or {}, isolation())


def _fork_server() -> tuple[subprocess.Popen, socket.socket]:
    """The fork server (``_sandbox_ns._serve``), started on first use and again if it died (it dies with us)."""
    global _server
    with _server_lock:
        if _server is None or _server[0].poll() is not None:
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)  # it sees our end close
            with theirs:
                args = [interpreter(), "-I", "-c", _NS, str(theirs.fileno()), _BOOT]
                proc = subprocess.Popen(
                    args, pass_fds=(theirs.fileno(),), env=_env("/"), cwd="/", start_new_session=True,
                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                )  # fmt: skip
            _server = proc, ours
        return _server


def _forget_server() -> None:  # in a forked child: its own server on first use (the lock may be held mid-fork)
    global _server, _server_lock
    _server, _server_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_server)


def _start(argv: list[str], fds: list[int]) -> socket.socket:
    """Ask the fork server for a launcher running ``argv`` with ``fds`` (stdin, stdout, stderr, [stop]); its
    control socket (see ``_serve``). A server that died is started again, once."""
    control, theirs = socket.socketpair()
    with theirs:
        for attempt in (0, 1):
            proc, server = _fork_server()
            try:
                socket.send_fds(server, [json.dumps(argv).encode()], [*fds[:3], theirs.fileno(), *fds[3:]])
                return control
            except OSError:
                if attempt:
                    control.close()
                    raise
                proc.kill()
                proc.wait()
    raise AssertionError("unreachable")


def _run(code: str, stdin: str, limits: Limits, files: dict[str, str], mode: str) -> Result:
    uid, handle = uids.acquire() if mode in ("namespaces", "uid") else (None, None)
    root = Path(tempfile.mkdtemp(prefix=f"run-{os.getpid()}-", dir=base_dir()))
    start = time.monotonic()
    try:
        _write_files(root, files)
        (root / "main.py").write_text(code, encoding="utf-8", errors="surrogatepass")
        bounds = [
            str(max(1, int(limits.cpu_seconds + 0.999))),
            str(limits.memory_mb << 20),
            str(limits.file_size_mb << 20),
            str(limits.max_processes),
            str(MAX_OPEN_FILES),
        ]
        argv = ["-c", "", "", str(root), "-", "0", "0", *bounds]  # "none": the launcher does nothing
        if mode == "namespaces":  # the launcher (root) copies the inputs, drops to uid and runs _BOOT itself
            argv[2:7] = [str(uid), str(root), str(base_dir() / "mnt"), str(limits.disk_mb << 20), str(MAX_INODES)]
        elif mode == "uid":
            chown_tree(root, uid)
            argv[2] = str(uid)
        elif mode == "subreaper":  # the launcher forks the run and kills all it left when fd 3 is written or closed
            argv[2], argv[4] = "-", "3"
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        stop = os.pipe() if mode == "subreaper" else ()
        try:
            with tempfile.TemporaryFile() as stdin_file:
                stdin_file.write(stdin.encode("utf-8", errors="surrogatepass"))
                stdin_file.seek(0)
                try:
                    control = _start(argv, [stdin_file.fileno(), out_w, err_w, *stop[:1]])
                finally:
                    for fd in (out_w, err_w, *stop[:1]):
                        os.close(fd)  # the run holds them now
            with control:
                stdout, stderr, returncode, timed_out, truncated = _collect(
                    out_r, err_r, control, start + limits.wall_seconds, limits.max_output_bytes, stop[1:]
                )
        finally:
            for fd in (out_r, err_r, *stop[1:]):
                os.close(fd)
        kill_all(uid, mode == "uid")
        return Result(
            returncode=returncode,
            stdout=stdout,
            stderr=stderr,
            timed_out=timed_out,
            truncated=truncated,
            duration_s=time.monotonic() - start,
        )
    finally:
        rmtree(root)
        uids.release(handle)


def _collect(
    out: int, err: int, control: socket.socket, deadline: float, bound: int, stop: tuple[int, ...]
) -> tuple[str, str, int | None, bool, bool]:
    """Read both pipes until the run exits (its status comes on ``control``), or hits the deadline or the output
    bound (then it is killed: ``stop``, a subreaper launcher's stop fd, is written to so that it kills the run's
    descendants itself first; the fork server kills the launcher's group when ``control`` closes)."""
    bufs = {out: bytearray(), err: bytearray()}
    said = b""
    returncode = None
    truncated = False
    with selectors.DefaultSelector() as sel:
        for fd in (out, err, control):
            sel.register(fd, selectors.EVENT_READ)
        while returncode is None or sel.get_map():
            now = time.monotonic()
            if now >= deadline:
                break
            ready = sel.select(timeout=min(0.05, deadline - now))
            if returncode is not None and not ready:
                break  # the run exited and its pipes are drained; a leftover child may still hold them open
            for key, _ in ready:
                chunk = os.read(key.fd, 65536)
                if key.fileobj is control:
                    said += chunk
                    if not chunk or said.count(b"\n") >= 2:
                        returncode = int(said.split()[1]) if said.count(b"\n") >= 2 else -9
                        sel.unregister(control)
                    continue
                if not chunk:
                    sel.unregister(key.fd)
                    continue
                buf = bufs[key.fd]
                room = bound - len(buf)
                buf += chunk[:room]
                truncated = truncated or len(chunk) > room
            if truncated:
                break
    if stop and returncode is None:
        try:  # the subreaper launcher kills every descendant, then exits (its status arrives on control)
            os.write(stop[0], b"x")
            control.settimeout(1)
            while said.count(b"\n") < 2 and (chunk := control.recv(64)):
                said += chunk
        except OSError:
            pass  # it is gone already, or did not stop in time: the server kills it when control closes
    timed_out = returncode is None and not truncated
    return (
        *(bytes(b).decode("utf-8", errors="replace") for b in bufs.values()),
        None if timed_out else -9 if returncode is None else returncode,
        timed_out,
        truncated,
    )


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


__all__ = ["Limits", "Result", "SandboxError", "interpreter", "isolation", "run_many", "run_python"]
