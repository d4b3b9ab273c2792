"""Probes of the sandbox's seccomp filter (grpo_trl/_sandbox_boot.py): the keyring syscalls stay refused however a
run reaches for them (other numberings, a 32-bit program, a thread, a forked or spawned child), and ordinary code
that never touches a keyring runs as it does outside.
"""

from __future__ import annotations

import errno
import os
import struct
import subprocess
import sys
import textwrap

import pytest

import grpo_trl.sandbox as sandbox
from grpo_trl.sandbox import Limits, isolation, run_python

pytestmark = pytest.mark.fault

ROOT = os.geteuid() == 0
X86_64 = os.uname().machine == "x86_64" and sys.platform == "linux"
KEYCTL = {"x86_64": 250, "aarch64": 219}.get(os.uname().machine)
needs_filter = pytest.mark.skipif(KEYCTL is None or sys.platform != "linux", reason="the filter is Linux x86_64/arm64")
MODES = (["namespaces", "uid"] if isolation() == "namespaces" else [isolation()]) + (["subreaper"] if ROOT else [])


@pytest.fixture(params=MODES)
def any_mode(request, monkeypatch):
    monkeypatch.setattr(sandbox, "_mode", request.param)
    return request.param


@pytest.mark.skipif(not X86_64, reason="x32 and the syscall register's upper half are x86_64's")
def test_keyctl_under_other_numberings_never_runs(any_mode):
    """keyctl(KEYCTL_GET_KEYRING_ID, session) through x32's bit, bit 31 and rax's upper half: refused (EPERM) or no
    such syscall (ENOSYS); a serial number back would mean it ran. getpid through the upper half still works."""
    probe = textwrap.dedent(
        """
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        for nr in (0x40000000 | 250, 0x80000000 | 250, 0xC0000000 | 250, (1 << 32) | 250, (1 << 63) | 250):
            print(libc.syscall(ctypes.c_long(nr - (1 << 64) if nr >> 63 else nr), 0, -3, 0), ctypes.get_errno())
        print(libc.syscall(ctypes.c_long((1 << 32) | 39)) == os.getpid())
        """
    )
    r = run_python(probe)
    assert r.ok, r.stderr
    *refused, getpid = r.stdout.splitlines()
    assert {tuple(map(int, line.split())) for line in refused} <= {(-1, errno.EPERM), (-1, errno.ENOSYS)}, r.stdout
    assert getpid == "True"


@needs_filter
def test_memory_outside_the_address_space_limit_is_refused(any_mode):
    """memfd files and SysV IPC objects hold memory RLIMIT_AS does not count: under a 128 MB ``memory_mb``, 320 MB of
    memfd files, 384 MB of shared memory, 600 MB of message queues and 800 MB of semaphores in 2 s (a semaphore
    limit of 10^9 allowed tens of GB). Each is refused (EPERM), in the run and in a child of it."""
    probe = textwrap.dedent(
        """
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        def probe():
            try:
                os.close(os.memfd_create("m"))
                said = [0]
            except OSError as e:
                said = [e.errno]
            for made in (libc.shmget(0, 1 << 20, 0o1600), libc.msgget(0, 0o1600), libc.semget(0, 1, 0o1600)):
                said.append(ctypes.get_errno() if made < 0 else 0)
            return " ".join(map(str, said))
        print(probe())
        r, w = os.pipe()
        if os.fork() == 0:
            os.write(w, probe().encode())
            os._exit(0)
        os.wait()
        print(os.read(r, 100).decode())
        """
    )
    r = run_python(probe, limits=Limits(memory_mb=128))
    assert r.ok, r.stderr
    assert r.stdout.splitlines() == [" ".join([str(errno.EPERM)] * 4)] * 2


@needs_filter
def test_a_user_namespace_cannot_be_made(any_mode):
    """A run exec'ing a fresh interpreter (dumpable again) became root of a user namespace of its own and mounted a
    tmpfs there: 300 MB under a 128 MB ``memory_mb``, and the kernel's whole namespaced-root surface. unshare and
    clone with CLONE_NEWUSER are refused (EPERM); clone3 (its flags out of the filter's reach) is absent (ENOSYS)."""
    clone = {"x86_64": 56, "aarch64": 220}[os.uname().machine]
    inner = textwrap.dedent(
        f"""
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        print(libc.unshare(0x10000000), ctypes.get_errno())  # CLONE_NEWUSER
        print(libc.syscall({clone}, 0x10000011, 0, 0, 0, 0), ctypes.get_errno())  # and SIGCHLD
        print(libc.syscall(435, 0, 0), ctypes.get_errno())
        """
    )
    r = run_python(f"import os, sys\nos.execv(sys.executable, [sys.executable, '-c', {inner!r}])")
    assert r.ok, r.stderr
    assert r.stdout.split() == ["-1", str(errno.EPERM)] * 2 + ["-1", str(errno.ENOSYS)]


def _i386_program() -> bytes:
    """A static i386 ELF: keyctl(KEYCTL_GET_KEYRING_ID, session) by ``int 0x80``, then exit(its result); ``hlt``
    (SIGSEGV in user mode) if exit returns."""
    code = bytes.fromhex("b820010000 31db b9fdffffff 31d2 cd80 89c3 b801000000 cd80 f4".replace(" ", ""))
    base, size = 0x08048000, 84 + len(code)
    header = (
        b"\x7fELF\x01\x01\x01"
        + bytes(9)
        + struct.pack("<HHIIIIIHHHHHH", 2, 3, 1, base + 84, 52, 0, 0, 52, 32, 1, 0, 0, 0)
    )
    return header + struct.pack("<8I", 1, 0, base, base, size, size, 5, 0x1000) + code


@pytest.mark.skipif(not X86_64, reason="the i386 ABI is x86_64's")
def test_a_32_bit_program_it_starts_cannot_make_any_syscall(any_mode):
    """A 32-bit program exec'd by the run: every syscall is of another ABI, so not even its exit goes through and it
    dies on the ``hlt`` after it (outside the sandbox it exits normally)."""
    probe = textwrap.dedent(
        f"""
        import os, subprocess
        with open("k32", "wb") as f:
            f.write({_i386_program()!r})
        os.chmod("k32", 0o755)
        print(subprocess.run(["./k32"]).returncode)
        """
    )
    r = run_python(probe)
    assert r.ok, r.stderr
    assert int(r.stdout) == -11  # SIGSEGV: exit(2) itself was refused


@needs_filter
def test_keyctl_from_a_thread_a_fork_and_a_spawned_child_is_refused(any_mode):
    """The filter is installed before any thread or child exists, so each inherits it."""
    worker = textwrap.dedent(
        f"""
        import ctypes
        def keyctl(_=None):
            libc = ctypes.CDLL(None, use_errno=True)
            return libc.syscall({KEYCTL}, 0, -3, 0), ctypes.get_errno()
        """
    )
    probe = textwrap.dedent(
        """
        import multiprocessing as mp, threading
        from worker import keyctl
        if __name__ == "__main__":
            out = []
            t = threading.Thread(target=lambda: out.append(keyctl()))
            t.start()
            t.join()
            for method in ("fork", "spawn", "forkserver"):
                with mp.get_context(method).Pool(1) as pool:
                    out.append(pool.apply(keyctl))
            print(sorted(set(out)), len(out))
        """
    )
    r = run_python(probe, files={"worker.py": worker}, limits=Limits(cpu_seconds=20, wall_seconds=60))
    assert r.ok, r.stderr
    assert r.stdout.split() == ["[(-1,", f"{errno.EPERM})]", "4"], r.stdout


ORDINARY = {
    "subprocess": "import subprocess, sys\nprint(subprocess.run([sys.executable, '-c', 'print(7)'], "
    "capture_output=True, text=True).stdout.strip(), subprocess.run('echo hi | cat', shell=True, "
    "capture_output=True, text=True).stdout.strip())",
    "asyncio": "import asyncio\nasync def main():\n    p = await asyncio.create_subprocess_exec('true')\n"
    "    await asyncio.sleep(0.01)\n    return await p.wait()\nprint(asyncio.run(main()))",
    "threads": "from concurrent.futures import ThreadPoolExecutor\nwith ThreadPoolExecutor(4) as e:\n"
    "    print(sum(e.map(abs, range(100))))",
    "randomness": "import os, secrets, uuid, ssl, hashlib\nprint(len(os.urandom(16)), len(secrets.token_bytes(8)), "
    "uuid.uuid4().version, hashlib.sha256(b'').hexdigest()[:4], ssl.create_default_context() is not None)",
    "shared memory": "from multiprocessing import shared_memory\nm = shared_memory.SharedMemory(create=True, size=8)\n"
    "m.buf[0] = 5\nprint(m.buf[0])\nm.close()\nm.unlink()",
    "signals": "import signal, time\nsignal.signal(signal.SIGALRM, lambda *a: print('alarm'))\n"
    "signal.setitimer(signal.ITIMER_REAL, 0.01)\ntime.sleep(0.2)",
}
EXPECTED = {
    "subprocess": "7 hi",
    "asyncio": "0",
    "threads": "4950",
    "randomness": "16 8 4 e3b0 True",
    "shared memory": "5",
    "signals": "alarm",
}


@needs_filter
@pytest.mark.parametrize("name", ORDINARY)
def test_ordinary_code_runs_under_the_filter(any_mode, name):
    r = run_python(ORDINARY[name], limits=Limits(cpu_seconds=20, wall_seconds=60, memory_mb=1024))
    assert r.ok, r.stderr
    assert r.stdout.strip() == EXPECTED[name]


@needs_filter
def test_humaneval_style_asserts_score_under_the_filter(any_mode):
    """The code_tests reward's assert harness (threads, an audit hook) and a stdin/stdout case, graded as before."""
    from grpo_trl.rewards.code import CodeTests

    tests = {"asserts": ["assert add(1, 2) == 3", "assert add(0, 0) == 0"]}
    io = {"io": [{"input": "21", "output": "42"}]}
    good = "```python\ndef add(a, b):\n    return a + b\n```"
    half = "```python\ndef add(a, b):\n    return a - b\n```"
    doubled = "```python\nprint(int(input()) * 2)\n```"
    assert CodeTests(max_workers=2)([good, half, doubled], tests=[tests, tests, io]) == [1.0, 0.5, 1.0]


_SESSION_PROBE = """
import ctypes, sys
import grpo_trl.sandbox as sandbox
libc = ctypes.CDLL(None, use_errno=True)
if libc.syscall({keyctl}, 1, b"probe-login-session") < 0:  # KEYCTL_JOIN_SESSION_KEYRING, as a login would
    print("no keyrings"); sys.exit()
key = libc.syscall({add_key}, b"user", b"{name}", b"secret", 6, -3)  # into the session keyring
libc.syscall({keyctl}, 5, key, 0x3F000000)  # KEYCTL_SETPERM: its possessor may do all, nobody else anything
sandbox._mode = sys.argv[1]
r = sandbox.run_python("print(sum('{name}' in line for line in open('/proc/keys')))")
print(r.stdout.strip() if r.ok else r.stderr)
"""


@needs_filter
@pytest.mark.parametrize("mode", MODES)
def test_a_possessor_only_key_of_grpo_trls_session_is_not_visible_to_a_run(mode):
    """A key in the session keyring grpo-trl runs in, readable only by its possessor: a run must not possess it."""
    name = f"grpo-probe-{os.getpid()}"
    add_key = {"x86_64": 248, "aarch64": 217}[os.uname().machine]
    script = _SESSION_PROBE.format(keyctl=KEYCTL, add_key=add_key, name=name)
    out = subprocess.run(
        [sys.executable, "-c", script, mode], capture_output=True, text=True, timeout=120, check=True
    ).stdout.strip()
    if out == "no keyrings":
        pytest.skip("keyctl is refused here")
    assert out == "0", out


@pytest.mark.xfail(
    strict=True,
    reason="main.py runs in a namespace that is not sys.modules['__main__'], so pickle cannot find its functions: "
    "multiprocessing.Pool(...).map(f, ...) with f defined in main.py fails in the sandbox but works under "
    "`python main.py` (not the filter's doing: the same before it)",
)
def test_a_pool_mapping_a_function_of_main_py_works():
    code = (
        "import multiprocessing as mp\ndef square(x):\n    return x * x\nif __name__ == '__main__':\n"
        "    with mp.get_context('fork').Pool(2) as pool:\n        print(pool.map(square, range(4)))"
    )
    r = run_python(code, limits=Limits(cpu_seconds=20, wall_seconds=60))
    assert r.ok, r.stderr
    assert r.stdout.strip() == "[0, 1, 4, 9]"
