"""The fork server (``_serve``: ``python -I -c <this> fd boot``) and the launcher (``_main``) of each sandboxed run.
As root: own PID, mount and IPC namespaces, every mount read-only but a private tmpfs (run dir, /tmp...); else its
uid ("uid") or, not root, its subreaper. argv: grpo_pid uid run_dir mount_dir disk_bytes inodes bounds... ("uid":
uid run_dir - 0 0; not root: - run_dir stop_fd 0 0; "none": ""). Exit 125 (message on stderr) if it cannot.
"""


def _main(argv: list[str]) -> list[str]:
    """Returns (the boot argv) only in the run's own process; every other process ends inside."""
    import ctypes  # loaded in the fork server already
    import os

    libc = ctypes.CDLL(None, use_errno=True)

    def check(ret: int, what: str) -> None:
        if ret != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"{what}: {os.strerror(err)}")

    def mount(src: bytes | None, target: bytes, fstype: bytes | None, flags: int, data: bytes | None = None) -> None:
        check(libc.mount(src, target, fstype, ctypes.c_ulong(flags), data), f"mount {target.decode()}")

    grpo_pid, uid, run_dir, mnt, disk, inodes = argv[1:7]
    if uid == "":  # "none" (not Linux): nothing to set up
        return ["-c", *argv[7:]]
    check(libc.prctl(1, 9, 0, 0, 0), "PR_SET_PDEATHSIG")  # die with grpo-trl ...
    if os.getppid() != int(grpo_pid):
        os._exit(125)  # ... which already died
    check(libc.prctl(38, 1, 0, 0, 0), "PR_SET_NO_NEW_PRIVS")
    if uid == "-":  # not root: no namespaces, but every process the run starts is this one's descendant
        _subreap(libc, check, int(mnt))  # mnt: the fd through which grpo-trl stops the run
        return ["-c", *argv[7:]]
    uid = int(uid)
    if mnt == "-":  # "uid" mode: no namespaces, only the run's own uid (grpo-trl gave it the run directory)
        _become(os, uid)
        return ["-c", *argv[7:]]
    check(libc.unshare(0x00020000 | 0x20000000 | 0x08000000), "unshare")  # CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC

    attr = (ctypes.c_uint64 * 4)(0x1, 0, 1 << 18, 0)  # every mount read-only and MS_PRIVATE (Linux >= 5.12)
    check(libc.syscall(442, -100, b"/", 0x8000, attr, ctypes.sizeof(attr)), "mount_setattr")  # AT_RECURSIVE
    nosuid_nodev = 0x2 | 0x4
    mount(b"tmpfs", mnt.encode(), b"tmpfs", nosuid_nodev, f"size={disk},nr_inodes={inodes},mode=0711".encode())
    os.chdir(mnt)  # binds below come from here by relative path, which later mounts over the same paths cannot hide
    os.mkdir("work", 0o700)
    os.chown("work", uid, uid)
    for src, dirs, files in os.walk(run_dir):  # the run's inputs (main.py, files=), written by grpo-trl
        rel = os.path.join("work", os.path.relpath(src, run_dir))
        for d in dirs:
            os.mkdir(os.path.join(rel, d), 0o700)
            os.chown(os.path.join(rel, d), uid, uid)
        for f in files:
            with open(os.path.join(src, f), "rb") as fin, open(os.path.join(rel, f), "xb") as fout:
                fout.write(fin.read())
            os.chown(os.path.join(rel, f), uid, uid)
    shared = {os.path.realpath(p) for p in ("/tmp", "/var/tmp", "/dev/shm", "/run/lock") if os.path.isdir(p)}
    for i, path in enumerate(sorted(shared)):
        os.mkdir(f"shared{i}")
        os.chmod(f"shared{i}", 0o1777)
        mount(f"shared{i}".encode(), path.encode(), None, 0x1000)  # MS_BIND
    os.umask(0o022)
    os.makedirs(run_dir, exist_ok=True)  # inside a private tmpfs when /tmp now hides the real one
    mount(b"work", run_dir.encode(), None, 0x1000)

    status_r, status_w = os.pipe()
    alive_r, alive_w = os.pipe()  # init's way to see that this launcher is gone
    init = os.fork()
    if init == 0:
        try:
            os.close(status_r)
            os.close(alive_w)
            check(libc.prctl(1, 9, 0, 0, 0), "PR_SET_PDEATHSIG")
            os.set_blocking(alive_r, False)
            try:
                os.read(alive_r, 1)
                os._exit(125)  # end of file: the launcher died before the line above
            except BlockingIOError:
                pass
            mount(b"proc", b"/proc", b"proc", nosuid_nodev | 0x8)  # MS_NOEXEC
            run = os.fork()
            if run == 0:
                os.close(status_w)
                os.close(alive_r)
                _become(os, uid)
                os.chdir(run_dir)
                os.umask(0o077)
                return ["-c", *argv[7:]]
            while True:  # reap orphans too (this is the namespace's init) until the run itself exits
                pid, status = os.waitpid(-1, 0)
                if pid == run:
                    os.write(status_w, str(status).encode())
                    os._exit(0)  # the kernel now kills every process left in the namespace
        except BaseException as e:  # noqa: BLE001 - report and stop, whatever it was
            os.write(2, f"sandbox init: {e}\n".encode())
            os._exit(125)
    os.close(status_w)
    os.close(alive_r)
    data = b"".join(iter(lambda: os.read(status_r, 64), b""))
    os.waitpid(init, 0)  # returns once the namespace is empty
    if not data:
        os._exit(125)
    _end_as(libc, int(data))


def _become(os, uid: int) -> None:
    os.setgroups([])
    os.setresgid(uid, uid, uid), os.setresuid(uid, uid, uid)


def _end_as(libc, status: int) -> None:
    """Exit as the run did: its exit code, or the signal that killed it (whose default action applies here)."""
    import os

    if os.WIFSIGNALED(status):
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0: no core file
        os.kill(os.getpid(), os.WTERMSIG(status))
        os._exit(128 + os.WTERMSIG(status))
    os._exit(os.waitstatus_to_exitcode(status))


def _subreap(libc, check, stop: int) -> None:
    """Fork the run (which returns) and stay its subreaper; when it exits, or ``stop`` is written or closed, kill
    every descendant (orphans included), then end as the run ended."""
    import contextlib
    import os
    import select

    check(libc.prctl(36, 1, 0, 0, 0), "PR_SET_CHILD_SUBREAPER")
    run = os.fork()
    if run == 0:
        os.close(stop)
        return
    select.select([os.pidfd_open(run), stop], [], [])
    pid, status = os.waitpid(run, os.WNOHANG)
    for _ in range(1000):  # bounded: each round reaps, then kills every descendant left
        try:
            while True:
                reaped, st = os.waitpid(-1, os.WNOHANG)
                if reaped == 0:
                    break
                if reaped == run and not pid:
                    pid, status = reaped, st
        except ChildProcessError:
            break  # no child left: an orphan would have become one, so no descendant is left either
        parents: dict[int, list[int]] = {}
        for p in os.listdir("/proc"):
            try:
                with open(f"/proc/{p}/stat", "rb") as f:
                    parents.setdefault(int(f.read().rsplit(b")", 1)[1].split()[1]), []).append(int(p))
            except (OSError, ValueError, IndexError):
                continue
        todo = list(parents.get(os.getpid(), []))
        while todo:
            child = todo.pop()
            todo += parents.get(child, [])
            with contextlib.suppress(OSError):
                os.kill(child, 9)
        select.select([], [], [], 0.002)
    if not pid:
        os._exit(137)  # stopped by grpo-trl before the run ended
    _end_as(libc, status)


def _serve(fd: int) -> list[str]:
    """Fork a launcher per request on socket ``fd`` (argv; stdin, stdout, stderr, control socket[, stop fd]); returns
    that argv in it. On the control socket: the launcher's pid, then its exit status (``WNOWAIT``: the pid is never
    reused); when grpo-trl closes it, kill the launcher's group. Exits when grpo-trl closes ``fd``."""
    import contextlib
    import gc
    import json
    import os
    import selectors
    import signal
    import socket
    import sys
    import typing  # noqa: F401 - what every code_tests harness imports: loaded once here

    gc.freeze()  # a run's collections leave the server's objects alone: fewer pages copied after fork()
    del sys.modules["gc"]  # as in a fresh interpreter (code_tests refuses a run that imports it)
    server, me = socket.socket(fileno=fd), os.getpid()
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    sel = selectors.DefaultSelector()
    sel.register(server, selectors.EVENT_READ)
    sel.register(wake_r, selectors.EVENT_READ)
    runs: dict[int, int] = {}  # control fd -> launcher pid, until grpo-trl is done with the run
    ended: set[int] = set()

    def send(control: int, value: int) -> None:
        with contextlib.suppress(OSError):  # grpo-trl may be done with the run already
            os.write(control, b"%d\n" % value)

    while True:
        for key, _ in sel.select():
            if key.fileobj is server:
                data, fds, _, _ = socket.recv_fds(server, 1 << 16, 5)
                if not data:
                    os._exit(0)
                pid = os.fork()
                if pid == 0:
                    sel.close()
                    server.detach()
                    signal.set_wakeup_fd(-1)
                    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                    os.setsid()
                    for target, source in enumerate(fds[:3] + fds[4:]):  # stdin, stdout, stderr, stop (3)
                        os.dup2(source, target)
                    os.closerange(len(fds) - 1, os.sysconf("SC_OPEN_MAX"))
                    argv = json.loads(data)
                    argv[1] = str(me)
                    os.chdir(argv[3])
                    os.environ["HOME"] = os.environ["TMPDIR"] = argv[3]
                    os.umask(0o077)
                    return argv
                for f in fds[:3] + fds[4:]:
                    os.close(f)
                runs[fds[3]] = pid
                sel.register(fds[3], selectors.EVENT_READ)
                send(fds[3], pid)
            elif key.fileobj == wake_r:
                os.read(wake_r, 4096)
                for control, pid in runs.items():
                    done = None if pid in ended else os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
                    if done is not None:
                        ended.add(pid)
                        send(control, done.si_status if done.si_code == os.CLD_EXITED else -done.si_status)
            else:  # grpo-trl is done with the run
                pid = runs.pop(key.fd)
                sel.unregister(key.fd)
                for kill in (os.killpg, os.kill):
                    with contextlib.suppress(OSError):
                        kill(pid, 9)
                os.waitpid(pid, 0)
                ended.discard(pid)
                os.close(key.fd)


if __name__ == "__main__":  # argv: fd boot
    import os
    import sys

    _boot = compile(sys.argv[2], "<sandbox boot>", "exec")
    try:
        sys.argv = _main(_serve(int(sys.argv[1])))
    except OSError as e:
        os.write(2, f"sandbox launcher: {e}\n".encode())
        os._exit(125)
    del _main, _serve
    exec(globals().pop("_boot"), {"__name__": "__main__", "__builtins__": __builtins__})
