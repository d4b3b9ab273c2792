"""Run untrusted Python (model-written code) in a separate, limited process forked from a fork server
(``_sandbox_ns.py``): empty directory, stripped environment, ``setrlimit`` bounds, a wall-clock deadline killing all
it started, output read up to a bound; as root its own uid and namespaces. NOT a VM (docs/safety.md).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import selectors
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from grpo_trl import _sandbox_host as host
from grpo_trl._sandbox_host import SandboxError, base_dir, interpreter, uids  # noqa: F401 - SandboxError re-exported

MAX_OPEN_FILES = 256
MAX_INODES = 8192  # files and directories a run may hold at once (namespaces mode)
FLOOD = 256  # a run that prints this many times its output bound is ended: a print loop, not an answer
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
    max_output_bytes: int = 65536  # kept per stream; the rest is read and dropped (stdout: marked truncated)
    disk_mb: int = 64  # all its files together (namespaces mode: a private tmpfs, so memory); else file_size_mb each
    network: bool = False  # sockets other than AF_UNIX (seccomp): off, a run cannot reach 127.0.0.1 or beyond


@dataclass
class Result:
    """What a run did; ``returncode`` None when killed at the deadline (``timed_out``); ``truncated``: ``stdout`` is
    only the first ``max_output_bytes`` of what it printed (stderr is cut to the same bound unmarked)."""

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


_mode: str | None = None
_mode_lock = threading.Lock()
_server: tuple[subprocess.Popen, socket.socket] | None = None
_server_lock = threading.Lock()


def isolation() -> str:
    """How runs are isolated here (once per process): ``"namespaces"`` (root, mounts allowed), ``"uid"`` (root
    otherwise), ``"subreaper"`` (not root, Linux) or ``"none"``; docs/safety.md says what each isolates."""
    global _mode
    with _mode_lock:
        if _mode is None:
            root = os.geteuid() == 0
            want, _mode = ("namespaces", "uid") if root else ("subreaper", "none")
            if os.environ.get(ENV_NAMESPACES) == "0" if root else sys.platform != "linux":
                return _mode
            try:
                probe = _run("import os\nprint(os.getpid(), os.getuid() != 0)", "", Limits(), {}, want)
                if probe.ok and (not root or probe.stdout.split() == ["2", "True"]):
                    _mode = want  # namespaces: the run is its PID namespace's second process, not root
                why = (probe.stderr or probe.stdout)[-300:] or f"exit {probe.returncode}"
            except (OSError, subprocess.SubprocessError, ValueError) as e:
                why = str(e)
            if _mode != want:
                logger.warning("sandbox: %s unavailable here (%s); runs are isolated as %r", want, why, _mode)
        return _mode


def run_python(
    code: str, *, stdin: str = "", limits: Limits = Limits(), files: dict[str, str] | None = None
) -> Result:
    """Run ``code`` as ``main.py`` in a fresh sandboxed process, ``files`` (relative name -> text) beside it. Raises
    only ``ValueError`` (a bad file name) and ``SandboxError`` (no interpreter can run)."""
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
                    args, pass_fds=(theirs.fileno(),), env=host._env("/"), cwd="/", start_new_session=True,
                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                )  # fmt: skip
            _server = proc, ours
        return _server


def _forget_server() -> None:  # in a forked child: its own server on first use (the lock may be held mid-fork)
    global _server, _server_lock
    _server, _server_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_server)


def _start(job: dict, fds: list[int]) -> socket.socket:
    """A launcher running ``job`` with ``fds`` (stdin, stdout, stderr) from the fork server (restarted once if it
    died); its control socket (see ``_serve``)."""
    control, theirs = socket.socketpair()
    with theirs:
        for _ in range(2):
            proc, server = _fork_server()
            try:
                socket.send_fds(server, [json.dumps(job).encode()], [*fds, theirs.fileno()])
                return control
            except OSError as exc:
                proc.kill()
                proc.wait()
                failure = exc
    control.close()
    raise SandboxError(f"the sandbox's fork server does not take runs ({failure})")


def _run(code: str, stdin: str, limits: Limits, files: dict[str, str], mode: str) -> Result:
    uid, handle = uids.acquire() if mode in ("namespaces", "uid") else (None, None)
    root = Path(tempfile.mkdtemp(prefix=f"run-{os.getpid()}-", dir=base_dir()))
    start = time.monotonic()
    try:
        host.write_files(root, files)
        (root / "main.py").write_text(code, encoding="utf-8", errors="surrogatepass")
        cpu = max(1, int(limits.cpu_seconds + 0.999))
        bounds = [cpu, limits.memory_mb << 20, limits.file_size_mb << 20, limits.max_processes, MAX_OPEN_FILES]
        bounds.append(int(bool(limits.network)))
        job = {"mode": mode, "uid": uid, "dir": str(root), "limits": bounds}
        if mode == "namespaces":  # the launcher (root) copies the inputs into the run's tmpfs
            job.update(mnt=str(base_dir() / "mnt"), disk=limits.disk_mb << 20, inodes=MAX_INODES)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            with tempfile.TemporaryFile() as stdin_file:
                stdin_file.write(stdin.encode("utf-8", errors="surrogatepass"))
                stdin_file.seek(0)
                try:
                    control = _start(job, [stdin_file.fileno(), out_w, err_w])
                finally:
                    for fd in (out_w, err_w):
                        os.close(fd)  # the run holds them now
            with control:
                collected = _collect(out_r, err_r, control, start + limits.wall_seconds, limits.max_output_bytes)
        finally:
            for fd in (out_r, err_r):
                os.close(fd)
        return Result(*collected, duration_s=time.monotonic() - start)
    finally:
        if mode == "uid":
            host.remove_strays(uid)
        host.rmtree(root)
        uids.release(handle)


def _collect(
    out: int, err: int, control: socket.socket, deadline: float, bound: int
) -> tuple[int | None, str, str, bool, bool]:
    """Read both pipes until the run exits (status on ``control``, sent once all it started is gone) or the deadline
    (then say so on ``control`` and wait until its supervisor, having killed all, closes it). Each stream keeps its
    first ``bound`` bytes and drops the rest: printing much costs a run only its time, up to a flood (``FLOOD`` times
    the bound, 16 MiB by default), which ends it as the deadline would."""
    bufs = {out: bytearray(), err: bytearray(), control.fileno(): bytearray()}
    returncode, truncated, seen = None, False, 0
    with selectors.DefaultSelector() as sel:
        for fd in bufs:
            sel.register(fd, selectors.EVENT_READ)
        while returncode is None or sel.get_map():
            now = time.monotonic()
            if now >= deadline or seen > FLOOD * max(bound, 1):
                break
            ready = sel.select(timeout=min(0.05, deadline - now))
            if returncode is not None and not ready:
                break  # the run exited and its pipes are drained; a leftover child may still hold them open
            for key, _ in ready:
                chunk = os.read(key.fd, 65536)
                buf = bufs[key.fd]
                if key.fd == control.fileno():
                    if chunk:  # its last line only: a run holding fd 3 (pidfd_getfd) may have written before it
                        bufs[key.fd] = (buf + chunk)[-64:]
                        continue
                    sel.unregister(key.fd)  # its supervisor is gone: the status it sent last, if any
                    said = buf.split()[-1:]
                    returncode = int(said[0]) if said and said[0].lstrip(b"-").isdigit() else -9
                elif not chunk:
                    sel.unregister(key.fd)
                else:
                    seen += len(chunk)
                    truncated = truncated or (key.fd == out and len(buf) + len(chunk) > bound)
                    buf += chunk[: bound - len(buf)]
    if returncode is None:  # the deadline: its supervisor kills all the run started
        with contextlib.suppress(OSError):
            control.shutdown(socket.SHUT_WR)
            control.settimeout(1)
            while control.recv(64):  # until they close it (1 s at most)
                pass
    out_text, err_text = (bytes(bufs[fd]).decode("utf-8", errors="replace") for fd in (out, err))
    flood = returncode is None and seen > FLOOD * max(bound, 1)  # killed, not timed out
    return -9 if flood else returncode, out_text, err_text, returncode is None and not flood, truncated or flood


def run_many(jobs: list[dict], *, max_workers: int) -> list[Result]:
    """``run_python(**job)`` for each job, at most ``max_workers`` (>= 1) at once; results in job order."""
    with ThreadPoolExecutor(max_workers, thread_name_prefix="sandbox") as pool:
        return list(pool.map(lambda job: run_python(**job), jobs))
