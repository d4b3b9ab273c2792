"""Runs in the sandboxed child (``python -I -c``) before the user's code: binds the limits (soft = hard),
death signal, ``no_new_privs``, a seccomp filter (no keyrings, no network); runs ``main.py`` as ``__main__``; exits
without teardown. argv: cpu_seconds memory_bytes file_bytes max_processes max_open_files network (1: allowed).
Importing this module does nothing.
"""


def _limit(argv: list[str]) -> None:
    import os
    import resource

    cpu, mem, fsize, nproc, nofile = (int(a) for a in argv[1:6])
    mine = 0  # processes this uid already has (1 under a dedicated uid): the process limit counts the whole uid
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                mine += os.stat("/proc/" + p).st_uid == os.getuid()
            except OSError:
                pass
    for res, value in (
        (resource.RLIMIT_CPU, (cpu, cpu + 1)),
        (resource.RLIMIT_AS, (mem, mem)),
        (resource.RLIMIT_FSIZE, (fsize, fsize)),
        (resource.RLIMIT_NPROC, (mine - 1 + nproc,) * 2),
        (resource.RLIMIT_CORE, (0, 0)),
        (resource.RLIMIT_NOFILE, (nofile, nofile)),
        # no POSIX message queue (Linux): one outlives its processes, and without an IPC namespace of the run's own
        # nothing lists it to remove it ("uid": left behind, under its uid, for every later run on that slot)
        (getattr(resource, "RLIMIT_MSGQUEUE", resource.RLIMIT_CORE), (0, 0)),
    ):
        resource.setrlimit(res, value)
    try:
        import ctypes

        prctl = ctypes.CDLL(None).prctl
    except Exception:  # noqa: BLE001 - not Linux: the parent's deadline still applies
        return
    prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG = 1, SIGKILL = 9
    if prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS = 38
        raise SystemExit("sandbox: cannot set no_new_privs")
    _seccomp(ctypes, os, prctl, argv[6] == "1")


def _seccomp(ctypes, os, prctl, network: bool) -> None:
    """Leave grpo-trl's session keyring for a new empty one (else the run possesses its keys), then a seccomp filter
    refuses add_key, request_key and keyctl (EPERM), and every syscall of another ABI: no run reads grpo-trl's keys
    or leaves one for the next run under the same uid; memfd_create, shmget, msgget and semget: memory outside
    RLIMIT_AS (GBs); a user namespace (unshare, clone with CLONE_NEWUSER; clone3, whose flags it cannot read, says
    ENOSYS: libc falls back to clone): root in one mounts a tmpfs of any size; io_uring (its operations, sockets
    included, pass no filter); unless ``network``, a socket or socketpair of any family but AF_UNIX. Where seccomp
    is refused, a per-run uid's user keyrings are emptied instead, and the network stays reachable."""
    arch, clone, sockets, refused = {  # add_key request_key keyctl memfd_create shmget msgget semget unshare io_uring
        "x86_64": (0xC000003E, 56, (41, 53), (248, 249, 250, 319, 29, 68, 64, 272, 425)),
        "aarch64": (0xC00000B7, 220, (198, 199), (217, 218, 219, 279, 194, 186, 190, 97, 425)),
    }.get(os.uname().machine, (0, 0, (), ()))
    if not arch:
        return
    syscall = ctypes.CDLL(None).syscall
    syscall(refused[2], 1, None)  # KEYCTL_JOIN_SESSION_KEYRING, anonymous
    deny, allow, absent = 0x00050001, 0x7FFF0000, 0x00050026  # SECCOMP_RET_ERRNO | EPERM, ALLOW, ERRNO | ENOSYS
    n, (sock, pair) = len(refused), (0xFFFFFFFF,) * 2 if network else sockets  # no syscall number has bit 30 left
    rules = [  # (code, jump if true, jump if false, k): classic BPF over struct seccomp_data
        (0x20, 0, 0, 4), (0x15, 1, 0, arch), (0x06, 0, 0, deny),  # ld arch; another ABI (i386, arm32): refused
        (0x20, 0, 0, 0), (0x54, 0, 0, 0xBFFFFFFF),  # ld nr; without x32's bit
        *((0x15, n + 8 - i, 0, nr) for i, nr in enumerate(refused)),  # one of them: to deny
        (0x15, 9, 0, 435),  # clone3: to absent
        (0x15, 0, 2, clone), (0x20, 0, 0, 16), (0x45, 5, 4, 0x10000000),  # clone: ld flags; CLONE_NEWUSER: to deny
        (0x15, 1, 0, sock), (0x15, 0, 2, pair),  # socket, socketpair: ld the family; AF_UNIX: to allow, else deny
        (0x20, 0, 0, 16), (0x15, 0, 1, 1),
        (0x06, 0, 0, allow), (0x06, 0, 0, deny), (0x06, 0, 0, absent),
    ]  # fmt: skip
    filters = (ctypes.c_uint64 * len(rules))(*(c | t << 16 | f << 24 | k << 32 for c, t, f, k in rules))

    class Program(ctypes.Structure):  # struct sock_fprog
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    program = Program(len(rules), ctypes.addressof(filters))
    if prctl(22, 2, ctypes.byref(program), 0, 0) == 0:  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
        return
    if os.getuid() >= 1_790_000_000:
        for ring in (-4, -5):  # KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING
            syscall(refused[2], 7, ring)  # KEYCTL_CLEAR


def _exit_after(sys, os, status: list[int]) -> None:
    """Run last at exit: flush, leave with ``status``, skip the teardown (it copies a forked process's pages)."""
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001, S110 - replaced or closed by the code: nothing more to write
            pass
    os._exit(status[0])


if __name__ == "__main__":
    import atexit
    import os
    import sys

    _limit(sys.argv)
    sys.argv = ["main.py"]
    sys.path.insert(0, ".")
    with open("main.py", encoding="utf-8") as _f:
        _code = compile(_f.read(), "main.py", "exec")
    _status = [1]  # Python's exit status after an uncaught exception
    atexit.register(_exit_after, sys, os, _status)
    del atexit, os, _f, _limit, _seccomp, _exit_after
    try:
        # popped, not kept in this module (sys.modules["__main__"]), where main.py's code and constants stay reachable
        exec(globals().pop("_code"), {"__name__": "__main__", "__file__": "main.py", "__builtins__": __builtins__})
        _status[0] = 0
    except SystemExit as _e:
        _status[0] = 0 if _e.code is None else _e.code if isinstance(_e.code, int) else 1
        raise
