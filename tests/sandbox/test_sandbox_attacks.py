"""Model-written code attacks the sandbox (grpo_trl/sandbox.py); each attack is contained, the test process unharmed.

Every loop in these programs is bounded by the test itself, and the only network address used is 127.0.0.1 on a
port this test opens.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

import grpo_trl.sandbox as sandbox
from grpo_trl._sandbox_host import NOBODY, UID_BASE, UID_SLOTS, base_dir
from grpo_trl.sandbox import Limits, isolation, run_many, run_python

pytestmark = pytest.mark.fault

ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="the uid drop and its guarantees apply when grpo-trl runs as root")
# every isolation mode this machine can run: under root with namespaces, the "uid" fallback is exercised too
MODES = ["namespaces", "uid"] if isolation() == "namespaces" else [isolation()]


@pytest.fixture(params=MODES)
def mode(request, monkeypatch):
    monkeypatch.setattr(sandbox, "_mode", request.param)
    return request.param


# the not-root mechanism too, where this runs as root (then the run is root as well: only the killing is tested)
@pytest.fixture(params=MODES + (["subreaper"] if ROOT and sys.platform == "linux" else []))
def any_mode(request, monkeypatch):
    monkeypatch.setattr(sandbox, "_mode", request.param)
    return request.param


def _marker() -> str:
    """A process name (at most 15 bytes) no other process on this machine has."""
    return f"gt{secrets.token_hex(6)}"


def _marked(marker: str) -> list[int]:
    """Live processes, seen from this (the host's) /proc, named ``marker`` or with it as an argument."""
    pids = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            comm = Path(f"/proc/{p}/comm").read_text().strip()
            argv = Path(f"/proc/{p}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if (comm == marker or marker.encode() in argv) and _alive(int(p)):
            pids.append(int(p))
    return pids


NAME_ME = "import ctypes\nctypes.CDLL(None).prctl(15, {marker!r}.encode())  # PR_SET_NAME: findable from outside\n"


def _alive(pid: int) -> bool:
    """``pid`` exists and is not a zombie (dead, waiting for its parent)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in (b"Z", b"X")


def _uid_pids(*uids: int) -> list[int]:
    """Live (non-zombie) processes owned by one of ``uids``."""
    pids = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            uid = os.stat(f"/proc/{p}").st_uid
        except OSError:
            continue
        if uid in uids and _alive(int(p)):
            pids.append(int(p))
    return pids


def _sandbox_pids() -> list[int]:
    """Live (non-zombie) processes owned by any sandbox uid."""
    return _uid_pids(*range(UID_BASE, UID_BASE + UID_SLOTS), NOBODY)


@contextlib.contextmanager
def _loopback_server(timeout: float):
    """A socket listening on 127.0.0.1 (the only address these tests use), and its port."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        server.settimeout(timeout)
        yield server, server.getsockname()[1]


def _wait_gone(pids: list[int], seconds: float = 5.0) -> list[int]:
    deadline = time.monotonic() + seconds
    alive = pids
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if p in _sandbox_pids()]
        time.sleep(0.05)
    return alive


def test_infinite_loop_is_stopped_by_the_cpu_limit():
    # a generous wall clock, so what stops it is the 1 s CPU limit even on a busy machine
    r = run_python("while True:\n    pass", limits=Limits(cpu_seconds=1, wall_seconds=60))
    assert not r.ok and not r.timed_out
    assert r.returncode in (-signal.SIGXCPU, -signal.SIGKILL)
    assert r.duration_s < 30


def test_sleeping_forever_is_stopped_by_the_wall_clock():
    r = run_python("import time\ntime.sleep(1000)", limits=Limits(wall_seconds=1))
    assert r.timed_out and r.returncode is None and not r.ok
    assert 0.9 < r.duration_s < 2.5


@needs_root
def test_the_child_runs_unprivileged():
    r = run_python("import os\nprint(os.getuid(), os.geteuid(), os.getgid(), os.getgroups())")
    uid, euid, gid, groups = r.stdout.split(maxsplit=3)
    assert int(uid) == int(euid) != 0 and int(gid) != 0 and groups.strip() == "[]"
    assert int(uid) == NOBODY or UID_BASE <= int(uid) < UID_BASE + UID_SLOTS
    denied = run_python("import os\nos.listdir('/root')")
    assert "PermissionError" in denied.stderr


def test_fork_loop_is_capped_and_nothing_survives_the_run(any_mode):
    marker = _marker()
    code = NAME_ME.format(marker=marker) + textwrap.dedent(
        """
        import os, time
        pids = []
        for _ in range(200):  # bounded by the test
            try:
                pid = os.fork()
            except OSError:
                break
            if pid == 0:
                os.setsid()  # tries to leave the process group the deadline kills
                time.sleep(60)
                os._exit(0)
            pids.append(pid)
        print(len(pids), *pids)
        """
    )
    r = run_python(code, limits=Limits(max_processes=8, wall_seconds=5))
    count, *pids = (int(x) for x in r.stdout.split())
    assert count == len(pids)
    if any_mode in ("namespaces", "uid"):
        assert count <= 8  # RLIMIT_NPROC binds the run's own uid
    left = _marked(marker)  # pids above are the run's own view of them: inside a PID namespace they differ
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    if any_mode != "none":
        assert left == []  # gone when run_python returns
    # else (README): no subreaper, only the run's process group is killed; children that called setsid outlive it
    assert _wait_gone(pids) == []


def test_a_run_deaf_to_signals_without_its_descriptors_ends_at_the_deadline_with_all_it_started(any_mode):
    """Every catchable signal ignored, stdin/stdout/stderr and the rest closed, a child in a session of its own doing
    the same: nothing it can do delays the deadline or outlives it (its supervisor sends SIGKILL)."""
    marker = _marker()
    code = NAME_ME.format(marker=marker) + textwrap.dedent(
        """
        import os, signal, time
        for s in set(signal.Signals) - {signal.SIGKILL, signal.SIGSTOP}:
            signal.signal(s, signal.SIG_IGN)
        if os.fork() == 0:
            os.setsid()
        os.closerange(0, 1024)
        time.sleep(60)
        """
    )
    r = run_python(code, limits=Limits(wall_seconds=0.5))
    assert r.timed_out and r.returncode is None and r.duration_s < 3
    left = _marked(marker)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert left == []


def test_ten_gigabyte_allocation_fails_inside_the_child():
    r = run_python("x = bytearray(10 * 1024**3)\nprint('allocated')", limits=Limits(memory_mb=256))
    assert not r.ok and "MemoryError" in r.stderr and "allocated" not in r.stdout


def test_writing_outside_its_directory_and_beyond_the_file_limit(tmp_path):
    target = tmp_path / "owned_by_the_test.txt"
    stray = Path(tempfile.gettempdir()) / f"grpo_sandbox_stray_{os.getpid()}.txt"
    code = textwrap.dedent(
        f"""
        import os
        print(os.getcwd())
        for path in [{str(target)!r}, '../escaped.txt', os.path.expanduser('~/../escaped2.txt')]:
            try:
                open(path, 'w').write('pwned')
                print('wrote', path)
            except OSError as e:
                print('denied', type(e).__name__)
        open({str(stray)!r}, 'w').write('world-writable directories are reachable')
        with open('big.bin', 'wb') as f:
            f.write(b'0' * (3 << 20))
        """
    )
    try:
        r = run_python(code, limits=Limits(file_size_mb=1))
        workdir = Path(r.stdout.splitlines()[0])
        assert not workdir.exists()  # the run's directory is removed afterwards
        assert not target.exists()
        assert r.returncode in (-signal.SIGXFSZ, 1)  # the 3 MB file hit the 1 MB limit
        assert "File too large" in r.stderr or r.returncode == -signal.SIGXFSZ
        if ROOT:
            assert r.stdout.count("denied") == 3, r.stdout
            assert not stray.exists()  # what a run's own uid leaves at the top of /tmp is removed
    finally:
        stray.unlink(missing_ok=True)


def test_environment_secrets_are_not_visible(monkeypatch):
    monkeypatch.setenv("GRPO_TRL_TEST_SECRET", "s3cr3t-value")
    code = textwrap.dedent(
        """
        import os
        print(sorted(os.environ))
        for pid in (os.getppid(), 1):
            try:
                print(open(f'/proc/{pid}/environ', 'rb').read())
            except OSError as e:
                print('denied', type(e).__name__)
        """
    )
    r = run_python(code)
    assert "s3cr3t-value" not in r.stdout and "GRPO_TRL_TEST_SECRET" not in r.stdout
    assert r.stdout.splitlines()[0] == "['HOME', 'LANG', 'LC_ALL', 'PATH', 'TMPDIR']"
    if ROOT:
        assert r.stdout.count("denied") == 2


def test_network_is_off_by_default_and_loopback_connects_only_when_opted_in():
    """What docs/safety.md states: no connection to 127.0.0.1 by default; ``Limits(network=True)`` allows it (all
    modes and kinds of socket: tests/sandbox/test_network.py)."""
    with _loopback_server(10) as (server, port):
        code = f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=5)\ns.sendall(b'hi')"
        r = run_python(code)
        assert not r.ok and "PermissionError" in r.stderr, r.stderr
        r = run_python(code, limits=Limits(network=True))
        conn, _ = server.accept()  # the refused run's connection would be the first
        with conn:
            conn.settimeout(5)
            assert conn.recv(2) == b"hi"
        server.settimeout(0.1)
        with pytest.raises(TimeoutError):
            server.accept()
    assert r.ok


@needs_root
def test_killing_its_parent_or_everyone_fails():
    code = textwrap.dedent(
        """
        import os, signal
        for target in (os.getppid(), {grpo}, 1, -1):
            try:
                os.kill(target, signal.SIGKILL)
                print('sent', target)
            except OSError as e:
                print('denied', target, type(e).__name__)
        """
    ).replace("{grpo}", str(os.getpid()))
    r = run_python(code)
    # this test process is its parent ("uid": PermissionError) or out of its sight ("namespaces": no such pid)
    assert re.search(f"denied {os.getpid()} (PermissionError|ProcessLookupError)", r.stdout), r.stdout
    assert "denied 1 PermissionError" in r.stdout
    # kill(-1) reaches only the run's own uid (it killed itself, so it printed nothing after)
    os.kill(os.getpid(), 0)  # still alive


def test_a_status_forged_on_its_supervisors_control_socket_is_not_taken(any_mode):
    """A run that takes its supervisor's fd 3 (pidfd_getfd: a run under your uid in "subreaper" mode, or root) and
    writes a status on it: grpo-trl reads the supervisor's own status, written last (a forged one raised ValueError
    from run_python)."""
    code = textwrap.dedent(
        """
        import ctypes, os, sys
        libc = ctypes.CDLL(None, use_errno=True)
        try:
            fd = libc.syscall(438, os.pidfd_open(os.getppid()), 3, 0)  # pidfd_getfd
        except OSError:
            fd = -1
        if fd >= 0:
            os.write(fd, b"0\\n0")
        print("took" if fd >= 0 else "denied")
        sys.exit(3)
        """
    )
    r = run_python(code)
    assert r.returncode == 3 and not r.timed_out, r
    if any_mode in ("namespaces", "uid") or not ROOT:  # another uid, or a supervisor it may not ptrace (not dumpable)
        assert r.stdout == "denied\n", r.stdout


def test_every_process_of_a_run_stays_in_this_process_tree(any_mode):
    """Each of a run's processes descends from this process (through the fork server), so each is reaped here: the
    init of a run's PID namespace, orphaned when its launcher exits, was left to pid 1 (a container's pid 1, often
    grpo-trl itself or a process that never reaps, kept one zombie per run)."""
    import threading

    marker = _marker()
    code = NAME_ME.format(marker=marker) + "import time\ntime.sleep(1)"
    runner = threading.Thread(target=run_python, args=(code,), kwargs={"limits": Limits(wall_seconds=5)})
    runner.start()
    try:
        deadline = time.monotonic() + 5
        while not _marked(marker) and time.monotonic() < deadline:
            time.sleep(0.02)
        (pid,) = _marked(marker)
        chain = [pid]
        while chain[-1] not in (os.getpid(), 1, 0):
            chain.append(int(Path(f"/proc/{chain[-1]}/stat").read_bytes().rsplit(b")", 1)[1].split()[1]))
    finally:
        runner.join(10)
    assert chain[-1] == os.getpid(), chain


BOUND = Limits().max_output_bytes
EVERY_BYTE = bytes(range(256)) * 4  # invalid UTF-8 too


def _bytes(n: int) -> bytes:
    return (EVERY_BYTE * (n // len(EVERY_BYTE) + 1))[:n]


@pytest.mark.parametrize(
    ("out", "err"), [(0, 10 << 20), (BOUND - 1, BOUND + 1), (BOUND, BOUND), (BOUND + 1, BOUND - 1), (10 << 20, 0)]
)
@pytest.mark.parametrize("status", [0, 1])
def test_output_past_the_bound_is_read_and_dropped_and_the_run_ends_as_it_would(out, err, status):
    """Each stream keeps its first ``max_output_bytes``, the rest is drained: a run that prints 10 MB ends with its
    own status (it was killed at the bound, -9, so a passing program failed); ``truncated`` says stdout was cut."""
    code = textwrap.dedent(
        f"""
        import sys
        every = bytes(range(256)) * 4
        for stream, n in ((sys.stdout, {out}), (sys.stderr, {err})):
            stream.buffer.write((every * (n // len(every) + 1))[:n])
            stream.flush()
        raise SystemExit({status})
        """
    )
    r = run_python(code)
    assert (r.returncode, r.timed_out, r.truncated) == (status, False, out > BOUND)
    assert r.stdout == _bytes(min(out, BOUND)).decode("utf-8", "replace")
    assert r.stderr == _bytes(min(err, BOUND)).decode("utf-8", "replace")


@pytest.mark.parametrize("fd", [1, 2])
def test_printing_forever_is_ended_as_a_flood_long_before_the_deadline_its_output_kept_to_the_bound(fd):
    code = f"import os\nwhile True:\n    os.write({fd}, b'x' * 65536)"
    r = run_python(code, limits=Limits(max_output_bytes=100_000, wall_seconds=20, cpu_seconds=30))
    assert not r.timed_out and r.returncode == -9 and not r.ok and r.truncated
    assert (r.stdout if fd == 1 else r.stderr) == "x" * 100_000
    assert r.duration_s < 5  # 256 x 100 kB read and dropped, then killed: not the 20 s deadline


def test_runs_die_with_the_process_that_started_them():
    """SIGKILL of the grpo-trl process leaves no sandboxed run behind (PR_SET_PDEATHSIG)."""
    marker = _marker()
    with _loopback_server(30) as (server, port):
        code = NAME_ME.format(marker=marker) + (
            f"import os, socket, time\ns = socket.create_connection(('127.0.0.1', {port}))\n"
            "s.sendall(str(os.getpid()).encode())\ntime.sleep(60)"
        )
        limits = "Limits(wall_seconds=60, network=True)"  # it says its pid over the socket
        child = f"from grpo_trl.sandbox import Limits, run_python\nrun_python({code!r}, limits={limits})"
        starter = subprocess.Popen([sys.executable, "-c", child], env={**os.environ})
        try:
            conn, _ = server.accept()
            with conn:
                conn.settimeout(10)
                assert int(conn.recv(32)) > 0
            (pid,) = _marked(marker)  # its pid as this process sees it (inside a PID namespace it has another)
        finally:
            starter.kill()
            starter.wait()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if not _alive(pid):
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"sandboxed pid {pid} outlived the process that started it")
    # the run directory the killed process left behind is removed by the next process that uses the sandbox
    leftovers = list(base_dir().glob(f"run-{starter.pid}-*"))
    assert leftovers
    subprocess.run([sys.executable, "-c", "from grpo_trl.sandbox import run_python; run_python('pass')"], check=True)
    assert not any(p.exists() for p in leftovers)


def test_many_runs_in_parallel_keep_their_order_and_bound():
    start = time.monotonic()
    results = run_many(
        [{"code": f"import time\ntime.sleep(0.4)\nprint({i})"} for i in range(4)],
        max_workers=2,
    )
    elapsed = time.monotonic() - start
    assert [r.stdout.strip() for r in results] == ["0", "1", "2", "3"]
    assert 0.75 < elapsed < 3  # two at a time: two rounds of 0.4 s, not one and not four


@needs_root
def test_setsid_then_a_setuid_helper_gains_nothing_and_dies_with_the_run(mode):
    """Issue 20: a child that calls setsid, then execs ``su`` (setuid root) blocked on a FIFO, stayed alive as root
    after run_python returned. Now no_new_privs keeps su at the run's uid, and it dies with the run."""
    marker = _marker()
    code = textwrap.dedent(
        f"""
        import os, time
        os.mkfifo("pw")
        pid = os.fork()
        if pid == 0:
            os.setsid()
            fd = os.open("pw", os.O_RDWR)  # nobody ever writes the password: su waits forever
            os.dup2(fd, 0)
            os.execv("/usr/bin/su", ["su", "-c", "true", "root", "--", {marker!r}])
        time.sleep(0.5)
        print([line for line in open(f"/proc/{{pid}}/status") if line.startswith("Uid:")][0].split()[2])
        """
    )
    r = run_python(code, limits=Limits(wall_seconds=10))
    assert r.ok, r.stderr
    assert int(r.stdout) != 0  # effective uid of su: not root
    assert _marked(marker) == []  # nothing of the run is left when run_python returns


@needs_root
def test_no_new_privileges_in_any_process_of_the_run(mode):
    r = run_python("print(open('/proc/self/status').read().split('NoNewPrivs:')[1].split()[0])")
    assert r.stdout.strip() == "1"


_KEY_SYSCALLS = {"x86_64": (248, 249, 250), "aarch64": (217, 218, 219)}.get(os.uname().machine)


@pytest.mark.skipif(_KEY_SYSCALLS is None or sys.platform != "linux", reason="the filter is Linux x86_64/arm64")
def test_keyring_syscalls_are_refused_in_every_process_of_the_run(any_mode):
    """add_key, request_key and keyctl, with any arguments, from the run and from a process it starts: EPERM."""
    probe = textwrap.dedent(
        f"""
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        out = []
        for nr in {_KEY_SYSCALLS!r}:
            for args in ([b"user", b"k", b"v", 1, -3], [0, -3, 0], [1, None], [7, -4], [10, -4, b"user", b"k", 0]):
                out.append((libc.syscall(nr, *args), ctypes.get_errno()))
        print(sorted(set(out)), open("/proc/self/status").read().split("Seccomp:")[1].split()[0])
        """
    )
    again = "import subprocess, sys\nif len(sys.argv) == 1:\n    subprocess.run([sys.executable, 'main.py', '1'])\n"
    r = run_python(probe + again)
    assert r.ok, r.stderr
    assert r.stdout.splitlines() == [f"[(-1, {errno.EPERM})] 2"] * 2, r.stdout


@pytest.mark.skipif(os.uname().machine != "x86_64" or sys.platform != "linux", reason="the i386 ABI is x86_64's")
def test_a_syscall_through_another_abi_is_refused():
    """``int 0x80`` (the i386 table, where keyctl is 288) would pass a filter that reads numbers as x86_64's."""
    probe = textwrap.dedent(
        """
        import ctypes, mmap
        code = b"\\xb8\\x14\\x00\\x00\\x00\\xcd\\x80\\xc3"  # mov eax, 20 (i386 getpid); int 0x80; ret
        page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        page.write(code)
        address = ctypes.addressof(ctypes.c_char.from_buffer(page))
        print(ctypes.CFUNCTYPE(ctypes.c_int)(address)(), __import__("os").getpid())
        """
    )
    r = run_python(probe)
    assert r.ok, r.stderr
    raw, pid = map(int, r.stdout.split())
    assert raw == -errno.EPERM and pid > 0


def _write_everywhere(dirs: list[str], name: str) -> str:
    return textwrap.dedent(
        f"""
        import os
        for d in {dirs!r}:
            try:
                with open(os.path.join(d, {name!r}), "w") as f:
                    f.write("left behind")
                os.makedirs(os.path.join(d, {name!r} + ".d", "deeper"))
                print("wrote", d)
            except OSError as e:
                print("denied", d, type(e).__name__)
        """
    )


@needs_root
def test_nothing_it_writes_in_shared_directories_outlives_the_run(mode):
    """/tmp, /var/tmp, /dev/shm, /run/lock and world-writable directories nested in them (issue 20: /run/lock and
    nested ones kept files)."""
    top = Path(tempfile.gettempdir()) / f"grpo-ww-{secrets.token_hex(4)}"
    nested = top / "a" / "b"
    nested.mkdir(parents=True)
    for d in (top, top / "a", nested):
        d.chmod(0o1777)
    name = f"grpo-sandbox-probe-{secrets.token_hex(4)}"
    dirs = [d for d in ("/tmp", "/var/tmp", "/dev/shm", "/run/lock") if os.path.isdir(d)] + [str(nested)]
    try:
        r = run_python(_write_everywhere(dirs, name))
        # all writable during the run ("namespaces": the nested one is in the real /tmp, which it does not see)
        assert r.ok and r.stdout.count("wrote") == len(dirs) - (mode == "namespaces"), r.stdout + r.stderr
        left = [d for d in dirs if os.path.lexists(os.path.join(d, name)) or os.path.lexists(f"{d}/{name}.d")]
        assert left == []
    finally:
        for d in dirs:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(d, name))
            shutil.rmtree(os.path.join(d, name + ".d"), ignore_errors=True)
        shutil.rmtree(top, ignore_errors=True)


@pytest.mark.skipif(isolation() != "namespaces", reason="read-only mounts need namespaces (README: uid mode)")
def test_world_writable_directories_anywhere_else_are_read_only():
    """A world-writable directory outside the shared ones (here: in the repository, the test makes it) cannot be
    written at all: every mount but the run's own tmpfs is read-only for it. A checkout under /tmp (CI's clone may
    be one) is hidden by the run's private /tmp, so the directory is then made under /var/cache instead."""
    here = Path(__file__).resolve().parent
    shared = [Path(p).resolve() for p in ("/tmp", "/var/tmp", "/dev/shm", "/run/lock") if os.path.isdir(p)]
    base = Path("/var/cache") if any(here.is_relative_to(d) for d in shared) else here
    ww = base / f".ww-{os.getpid()}"
    ww.mkdir()
    try:
        ww.chmod(0o1777)
        r = run_python(_write_everywhere([str(ww)], "x"))
        assert "denied" in r.stdout and "OSError" in r.stdout, r.stdout  # EROFS
        assert list(ww.iterdir()) == []
    finally:
        shutil.rmtree(ww)


@pytest.mark.skipif(isolation() != "namespaces", reason="a total cap needs namespaces (README: per file otherwise)")
def test_total_bytes_written_are_capped():
    """Issue 20: many files, each under the per-file cap, across the run directory and /tmp-like places, put 825 MB
    on disk in 2 s. Now they all share one ``disk_mb`` tmpfs."""
    code = textwrap.dedent(
        """
        import os, time
        block, total, start = b"0" * (1 << 20), 0, time.monotonic()
        dirs = [".", "/tmp", "/var/tmp", "/dev/shm", "/run/lock"]
        try:
            for i in range(1000):  # bounded: at most 1000 MiB, at most 2 s
                if time.monotonic() - start > 2:
                    break
                with open(os.path.join(dirs[i % len(dirs)], f"f{i}"), "wb") as f:
                    for _ in range(4):
                        f.write(block)
                        f.flush()
                        total += len(block)
        except OSError as e:
            print(type(e).__name__, e.errno)
        print(total)
        """
    )
    r = run_python(code, limits=Limits(disk_mb=32, file_size_mb=8, wall_seconds=10))
    stopped, total = r.stdout.splitlines()
    assert stopped.split()[1] == str(errno.ENOSPC)
    assert int(total) <= 32 << 20
    assert not list(base_dir().glob("mnt/*"))  # the tmpfs lived in the run's namespace only


@needs_root
def test_sysv_ipc_objects_do_not_outlive_the_run(mode):
    key = secrets.randbelow(1 << 30) + 1
    flags = 0o1666  # IPC_CREAT | 0666; never removed by the run
    code = f"import ctypes\nlibc = ctypes.CDLL(None)\nprint(libc.shmget({key}, 4096, {flags}) >= 0, "
    code += f"libc.msgget({key}, {flags}) >= 0, libc.semget({key}, 1, {flags}) >= 0)"
    r = run_python(code)
    assert r.stdout.split() == ["False"] * 3, r.stdout + r.stderr  # refused (seccomp); none outlives it either way
    for kind in ("shm", "msg", "sem"):
        keys = [line.split()[0] for line in Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[1:]]
        assert str(key) not in keys, kind


MQ_OPEN = textwrap.dedent(
    """
    import ctypes, ctypes.util, os
    rt = ctypes.CDLL(ctypes.util.find_library("rt"), use_errno=True)
    tiny = (ctypes.c_long * 8)(0, 1, 1)  # struct mq_attr: flags, maxmsg 1, msgsize 1
    for attr in (None, tiny):
        fd = rt.mq_open({name!r}, os.O_CREAT | os.O_RDWR, 0o600, attr)
        print(fd, ctypes.get_errno() if fd < 0 else 0)
    """
)


def _message_queue_exists(name: bytes) -> bool:
    """Whether this (the host's) IPC namespace holds the POSIX message queue ``name`` (removed if it does)."""
    import ctypes.util

    rt = ctypes.CDLL(ctypes.util.find_library("rt"), use_errno=True)
    fd = rt.mq_open(name, os.O_RDONLY)
    if fd < 0:
        assert ctypes.get_errno() == errno.ENOENT
        return False
    rt.mq_close(fd)
    rt.mq_unlink(name)
    return True


def test_posix_message_queues_are_refused_so_none_outlives_the_run(any_mode):
    """A POSIX message queue outlives its processes, and without an IPC namespace of the run's own nothing lists it
    ("uid": one was left under the run's uid after every run that made one). Its creation is refused instead."""
    name = f"/grpo-mq-{secrets.token_hex(4)}".encode()
    try:
        r = run_python(MQ_OPEN.format(name=name))
    finally:
        left = _message_queue_exists(name)
    assert r.ok and r.stdout.split() == ["-1", str(errno.EMFILE)] * 2, r.stdout + r.stderr
    assert not left


@needs_root
def test_posix_shared_memory_and_semaphores_do_not_outlive_the_run(mode):
    """Named ones (``shm_open``, ``sem_open``, never unlinked) and multiprocessing's, all files in /dev/shm."""
    name = f"grpo-shm-{secrets.token_hex(4)}"
    code = textwrap.dedent(
        f"""
        import _multiprocessing, _posixshmem, multiprocessing, os
        os.close(_posixshmem.shm_open("/{name}", os.O_CREAT | os.O_RDWR, 0o600))
        kept = _multiprocessing.SemLock(1, 1, 1, "/{name}", False)
        lock, queue = multiprocessing.Lock(), multiprocessing.Queue()
        print(*sorted(n for n in os.listdir("/dev/shm") if "{name}" in n))
        """
    )
    r = run_python(code)
    assert r.ok and r.stdout.split() == [name, f"sem.{name}"], r.stdout + r.stderr
    assert [n for n in os.listdir("/dev/shm") if name in n] == []


@pytest.mark.skipif(isolation() != "namespaces", reason="needs namespaces")
def test_the_run_sees_only_its_own_processes():
    r = run_python("import os\nprint(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))")
    assert r.stdout.strip() == "[1, 2]"  # its init and itself


@needs_root
def test_processes_with_different_tmpdirs_never_share_a_runs_uid(tmp_path):
    """The uid slots are one machine-wide set: two grpo-trl processes whose $TMPDIR differ (so their run folders
    differ) still take different uids, else one's run could kill the other's (kill(-1) reaches its whole uid)."""
    from grpo_trl._sandbox_host import uids

    uid, handle = uids.acquire()
    try:
        other = subprocess.run(
            [sys.executable, "-c", "from grpo_trl._sandbox_host import uids; print(uids.acquire()[0])"],
            env={**os.environ, "TMPDIR": str(tmp_path)}, capture_output=True, text=True, timeout=60, check=True,
        )  # fmt: skip
        assert int(other.stdout) != uid
    finally:
        uids.release(handle)


@needs_root
def test_the_interpreter_probe_runs_on_a_uid_slot_no_run_holds():
    """A run on a slot can kill every process of that slot's uid (kill(-1)): the probe that picks the sandbox's
    Python takes a slot of its own, so that no run can kill it (it ran as slot 0's uid, and a killed probe failed the
    run, or silently put every later run under the shared ``nobody`` uid)."""
    from grpo_trl._sandbox_host import uids

    uid, handle = uids.acquire()  # a "run" of this process holds a slot ...
    stop = time.monotonic() + 60
    code = "from grpo_trl._sandbox_host import interpreter, uids\nexe = interpreter()\nprint(uids.dedicated, exe)"
    probe = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        while probe.poll() is None and time.monotonic() < stop:
            for pid in _uid_pids(uid):  # ... and its uid's processes are killed, over and over
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
        out, err = probe.communicate(timeout=60)
    finally:
        uids.release(handle)
    assert probe.returncode == 0, err[-2000:]
    assert out.split()[0] == "True", out  # a killed probe made every later run fall back to the shared nobody uid


@needs_root
def test_a_tree_deeper_than_pythons_recursion_limit_is_removed(mode):
    """1,500 nested folders in /dev/shm (tmpfs: fast to make and remove): ``shutil.rmtree`` recursed past Python's
    limit, so the run raised RecursionError out of ``run_python`` ("uid"), left the tree behind, and every later
    grpo-trl process failed at its first run, removing the dead run's folder."""
    top = f"/dev/shm/grpo-deep-{secrets.token_hex(4)}"
    code = (
        f"import os\nos.mkdir({top!r})\nos.chdir({top!r})\n"
        + "for _ in range(1500):\n    os.mkdir('d')\n    os.chdir('d')"
    )
    try:
        r = run_python(code)
        assert r.ok, r.stderr
        assert not os.path.lexists(top)
    finally:
        if os.path.lexists(top):
            subprocess.run(["rm", "-rf", top], check=False)


def test_cleanup_never_changes_modes_through_a_link(tmp_path):
    """What grpo-trl removes after a run (its directory; as root what its uid left in /tmp) may be swapped for a link
    by a process of the run: removing it never chmods the link's target nor the folder holding it (it made them
    0700: /tmp, or the sandbox's base folder)."""
    from grpo_trl._sandbox_host import rmtree

    target, parent = tmp_path / "target", tmp_path / "parent"
    target.mkdir()
    (target / "f").write_text("x")
    parent.mkdir()
    (parent / "link").symlink_to(target)
    for path in (target, parent):
        path.chmod(0o755)
    rmtree(parent / "link")
    assert [oct(p.stat().st_mode & 0o777) for p in (target, parent)] == ["0o755"] * 2
    assert (target / "f").read_text() == "x"
