"""Model-written code attacks the sandbox (grpo_trl/sandbox.py); each attack is contained, the test process unharmed.

Every loop in these programs is bounded by the test itself, and the only network address used is 127.0.0.1 on a
port this test opens.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from grpo_trl._sandbox_host import NOBODY, UID_BASE, UID_SLOTS, base_dir
from grpo_trl.sandbox import Limits, run_many, run_python

ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="the uid drop and its guarantees apply when grpo-trl runs as root")


def _alive(pid: int) -> bool:
    """``pid`` exists and is not a zombie (dead, waiting for its parent)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in (b"Z", b"X")


def _sandbox_pids() -> list[int]:
    """Live (non-zombie) processes owned by any sandbox uid."""
    pids = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            uid = os.stat(f"/proc/{p}").st_uid
        except OSError:
            continue
        if (UID_BASE <= uid < UID_BASE + UID_SLOTS or uid == NOBODY) and _alive(int(p)):
            pids.append(int(p))
    return pids


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


def test_fork_loop_is_capped_and_nothing_survives_the_run():
    code = textwrap.dedent(
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
    if ROOT:
        assert count <= 8  # RLIMIT_NPROC binds the run's own uid
    assert _wait_gone(pids) == []


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


def test_network_is_not_isolated_loopback_connect_succeeds():
    """Documents the limit the README states: a local sandbox does not isolate the network."""
    with _loopback_server(10) as (server, port):
        code = f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=5)\ns.sendall(b'hi')"
        r = run_python(code)
        conn, _ = server.accept()
        with conn:
            conn.settimeout(5)
            assert conn.recv(2) == b"hi"
    assert r.ok


@needs_root
def test_killing_its_parent_or_everyone_fails():
    code = textwrap.dedent(
        """
        import os, signal
        for target in (os.getppid(), 1, -1):
            try:
                os.kill(target, signal.SIGKILL)
                print('sent', target)
            except OSError as e:
                print('denied', target, type(e).__name__)
        """
    )
    r = run_python(code)
    assert f"denied {os.getpid()} PermissionError" in r.stdout  # its parent is this test process
    assert "denied 1 PermissionError" in r.stdout
    # kill(-1) reaches only the run's own uid (it killed itself, so it printed nothing after)
    os.kill(os.getpid(), 0)  # still alive


def test_printing_a_gigabyte_is_cut_at_the_output_bound():
    code = "import sys\nblock = 'x' * (1 << 20)\nfor _ in range(1024):\n    sys.stdout.write(block)"
    start = time.monotonic()
    r = run_python(code, limits=Limits(max_output_bytes=100_000))
    assert r.truncated and not r.ok
    assert len(r.stdout) == 100_000
    assert time.monotonic() - start < 5


def test_runs_die_with_the_process_that_started_them():
    """SIGKILL of the grpo-trl process leaves no sandboxed run behind (PR_SET_PDEATHSIG)."""
    with _loopback_server(30) as (server, port):
        child = textwrap.dedent(
            f"""
            from grpo_trl.sandbox import Limits, run_python
            run_python("import os, socket, time\\ns = socket.create_connection(('127.0.0.1', {port}))\\n"
                       "s.sendall(str(os.getpid()).encode())\\ntime.sleep(60)", limits=Limits(wall_seconds=60))
            """
        )
        starter = subprocess.Popen([sys.executable, "-c", child], env={**os.environ})
        try:
            conn, _ = server.accept()
            with conn:
                conn.settimeout(10)
                pid = int(conn.recv(32))
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
