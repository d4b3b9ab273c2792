"""Runs in the sandboxed child (``python -I -c``) before the user's code: binds the limits (soft = hard),
death signal, ``no_new_privs``, own keyrings; runs ``main.py`` as ``__main__``; exits without teardown.
argv: cpu_seconds memory_bytes file_bytes max_processes max_open_files. Importing this module does nothing.
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
    ):
        resource.setrlimit(res, value)
    try:
        import ctypes

        prctl = ctypes.CDLL(None).prctl
    except Exception:  # noqa: BLE001 - not Linux: the parent's deadline still applies
        return
    _own_keyrings(ctypes, os)
    prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG = 1, SIGKILL = 9
    if prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS = 38
        raise SystemExit("sandbox: cannot set no_new_privs")


def _own_keyrings(ctypes, os) -> None:
    """Join a new empty session keyring (not grpo-trl's); under a per-run uid, empty that uid's user keyrings."""
    keyctl = {"x86_64": 250, "aarch64": 219}.get(os.uname().machine)
    if keyctl is None:
        return
    syscall = ctypes.CDLL(None).syscall
    # KEYCTL_JOIN_SESSION_KEYRING, anonymous; where it fails, keyctl itself is refused (no keyrings, or a seccomp
    # profile such as Docker's default), so the run cannot reach any keyring either
    syscall(keyctl, 1, None)
    if os.getuid() >= 1_790_000_000:
        for ring in (-4, -5):  # KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING
            syscall(keyctl, 7, ring)  # KEYCTL_CLEAR


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
    del atexit, os, _f, _limit, _own_keyrings, _exit_after
    try:
        # popped, not kept in this module (sys.modules["__main__"]), where main.py's code and constants stay reachable
        exec(globals().pop("_code"), {"__name__": "__main__", "__file__": "main.py", "__builtins__": __builtins__})
        _status[0] = 0
    except SystemExit as _e:
        _status[0] = 0 if _e.code is None else _e.code if isinstance(_e.code, int) else 1
        raise
