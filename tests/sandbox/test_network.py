"""The network is off in every sandbox mode (``Limits.network``, the seccomp filter of grpo_trl/_sandbox_boot.py): no
socket but AF_UNIX, whatever family, type or numbering; what needs AF_UNIX still works; ``network=True`` opts in.
The only address used is 127.0.0.1, on ports this test opens; each listener is bounded by a timeout.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import sys
import threading

import pytest

import grpo_trl.sandbox as sandbox
from grpo_trl.rewards.code import CodeTests
from grpo_trl.sandbox import Limits, isolation, run_python
from grpo_trl.tools.python import python as python_tool

pytestmark = [
    pytest.mark.fault,
    pytest.mark.skipif(os.uname().machine not in ("x86_64", "aarch64") or sys.platform != "linux", reason="Linux"),
]
# every mode this machine runs: both root modes where namespaces work; as root the not-root ones too (the run is root)
MODES = ["namespaces", "uid"] if isolation() == "namespaces" else [isolation()]
MODES += ["subreaper", "none"] if os.geteuid() == 0 else ["none"] if "subreaper" in MODES else []
SOCKET_NR, SOCKETPAIR_NR = {"x86_64": (41, 53), "aarch64": (198, 199)}[os.uname().machine]


@pytest.fixture(params=MODES)
def mode(request, monkeypatch):
    monkeypatch.setattr(sandbox, "_mode", request.param)
    return request.param


@contextlib.contextmanager
def _listeners(seconds: float = 15):
    """A TCP and a UDP socket on one 127.0.0.1 port, read by a thread until the block ends (at most ``seconds``):
    yields the port and the list of what reached them."""
    got: list[bytes] = []
    stop = threading.Event()
    with socket.socket() as tcp, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        tcp.bind(("127.0.0.1", 0))
        udp.bind(("127.0.0.1", tcp.getsockname()[1]))
        tcp.listen(8)
        tcp.settimeout(0.05)
        udp.settimeout(0.05)

        def serve() -> None:
            for _ in range(int(seconds / 0.1)):
                before, ending = len(got), stop.is_set()
                with contextlib.suppress(TimeoutError):
                    conn, _ = tcp.accept()
                    with conn:
                        conn.settimeout(2)
                        with contextlib.suppress(OSError):
                            got.append(b"tcp:" + conn.recv(64))
                with contextlib.suppress(TimeoutError):
                    got.append(b"udp:" + udp.recv(64))
                if ending and len(got) == before:  # a whole round after the block ended read nothing: all is read
                    return

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        try:
            yield tcp.getsockname()[1], got
        finally:
            stop.set()
            thread.join(seconds)


# each attempt prints its name and the errno it failed with, or OPEN; then what needs AF_UNIX prints its result
PROBE = """
import asyncio, ctypes, errno, multiprocessing, socket, subprocess, sys, urllib.request
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def attempt(name, f):
    try:
        f()
        print(name, "OPEN")
    except OSError as e:
        print(name, getattr(e, "reason", e).errno)
def tcp():
    with socket.socket() as s:
        s.settimeout(5); s.connect(("127.0.0.1", PORT)); s.sendall(b"tcp")
def udp():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.sendto(b"udp", ("127.0.0.1", PORT))
attempt("tcp", tcp)
attempt("udp", udp)
attempt("create_connection", lambda: socket.create_connection(("127.0.0.1", PORT), timeout=5).sendall(b"cc"))
attempt("urlopen", lambda: urllib.request.urlopen(f"http://127.0.0.1:{PORT}", timeout=5))
attempt("inet6", lambda: socket.socket(socket.AF_INET6).close())
attempt("packet", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW).close())
attempt("netlink", lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW).close())
said = set()
for family in range(64):  # every address family but AF_UNIX, every socket type
    for kind in (1, 2, 3, 4, 5, 6, 10):
        if family != socket.AF_UNIX:
            fd = libc.syscall(SOCKET_NR, family, kind, 0)
            said.add(ctypes.get_errno() if fd < 0 else "OPEN")
            fd = libc.syscall(SOCKETPAIR_NR, family, kind, 0, ctypes.create_string_buffer(8))
            said.add(ctypes.get_errno() if fd < 0 else "OPEN")
for nr, family in ((SOCKET_NR, (1 << 32) | 2), (SOCKET_NR | 0x40000000, 2)):  # AF_INET in the upper half, x32
    fd = libc.syscall(ctypes.c_long(nr), ctypes.c_long(family), 1, 0)
    said.add(ctypes.get_errno() if fd < 0 else "OPEN")
print("families", *sorted(map(str, said)))
print("io_uring", ctypes.get_errno() if libc.syscall(425, 1, ctypes.create_string_buffer(120)) < 0 else "OPEN")
a, b = socket.socketpair()
a.sendall(b"unix"); print("socketpair", b.recv(4).decode())
if __name__ == "__main__":
    with multiprocessing.Pool(2) as pool:
        print("pool", sum(pool.map(abs, [-1, -2, -3])))
print("subprocess", subprocess.run([sys.executable, "-c", "print(5)"], capture_output=True, text=True).stdout.strip())
async def main():
    await asyncio.sleep(0.01)
    return 7
print("asyncio", asyncio.run(main()))
"""
WORKS = ["socketpair unix", "pool 6", "subprocess 5", "asyncio 7"]


def _probe(port: int, network: bool) -> dict[str, str]:
    code = PROBE.replace("SOCKETPAIR_NR", str(SOCKETPAIR_NR)).replace("SOCKET_NR", str(SOCKET_NR))
    code = code.replace("PORT", str(port))
    r = run_python(code, limits=Limits(cpu_seconds=20, wall_seconds=60, network=network))
    assert r.ok, r.stderr
    lines = r.stdout.splitlines()
    assert lines[-4:] == WORKS, r.stdout
    return dict(line.split(" ", 1) for line in lines[:-4])


def test_no_socket_but_af_unix_and_nothing_reaches_a_listener(mode):
    """Every family but AF_UNIX, every type, by socket and socketpair; AF_INET in a register's upper half and through
    x32's bit: EPERM (x32 may answer ENOSYS); io_uring (which makes sockets itself) too; TCP, UDP, create_connection
    and urlopen to a live 127.0.0.1 listener fail and it receives nothing; an AF_UNIX socketpair, a Pool, a
    subprocess and asyncio still work."""
    with _listeners() as (port, got):
        said = _probe(port, network=False)
    eperm = str(errno.EPERM)
    assert said.pop("families") in (eperm, f"{eperm} {errno.ENOSYS}"), said
    assert said == dict.fromkeys(
        ["tcp", "udp", "create_connection", "urlopen", "inet6", "packet", "netlink"], eperm
    ) | {"io_uring": eperm}
    assert got == []


def test_network_true_reaches_the_listener(mode):
    with _listeners() as (port, got):
        said = _probe(port, network=True)
    assert said["tcp"] == said["udp"] == said["create_connection"] == "OPEN", said
    assert said["io_uring"] == str(errno.EPERM)  # refused either way: its operations pass no filter
    assert {b"tcp:tcp", b"udp:udp", b"tcp:cc"} <= set(got), got


CONNECT = "import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=5).sendall(b'hi')\nprint('sent')"


@pytest.mark.parametrize("entry", ["code_tests", "python tool"])
def test_code_tests_and_the_python_tool_are_off_by_default(entry):
    """What recipes run: the reward's solution and the tool's snippet cannot connect; ``code_tests`` opts in with
    ``network: true``."""
    with _listeners() as (port, got):
        code = CONNECT.format(port=port)
        if entry == "python tool":
            assert "PermissionError" in python_tool(code)
        else:
            block, tests = f"```python\n{code}\n```", [{"asserts": ["assert True"]}]
            assert CodeTests(max_workers=1)([block], tests=tests) == [0.0]
            assert CodeTests(max_workers=1, network=True)([block], tests=tests) == [1.0]
    assert got == ([] if entry == "python tool" else [b"tcp:hi"])
