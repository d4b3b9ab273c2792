"""The fork server (``_serve``: ``python -I -c <this> fd boot``) and the launcher (``_main``) of each sandboxed run:
on Linux a supervisor forks the run, then kills all it left (its subreaper, or with "namespaces" the init of its own
PID, mount and IPC namespaces, every mount read-only but a private tmpfs); as root the run has its own uid.
The job (JSON): mode uid dir mnt disk inodes limits. Exit 125 (message on stderr) if it cannot.
"""


def _main(job: dict) -> list[str]:
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

    mode, uid, run_dir, argv = job["mode"], job["uid"], job["dir"], ["-c", *map(str, job["limits"])]
    if mode == "none":  # not Linux: nothing to set up
        return argv
    check(libc.prctl(1, 9, 0, 0, 0), "PR_SET_PDEATHSIG")  # die with grpo-trl ...
    if os.getppid() != job["parent"]:
        os._exit(125)  # ... which already died
    check(libc.prctl(38, 1, 0, 0, 0), "PR_SET_NO_NEW_PRIVS")
    nosuid_nodev = 0x2 | 0x4
    if mode == "namespaces":
        check(libc.unshare(0x00020000 | 0x20000000 | 0x08000000), "unshare")  # NEWNS | NEWPID | NEWIPC
        attr = (ctypes.c_uint64 * 4)(0x1, 0, 1 << 18, 0)  # every mount read-only and MS_PRIVATE (Linux >= 5.12)
        check(libc.syscall(442, -100, b"/", 0x8000, attr, ctypes.sizeof(attr)), "mount_setattr")  # AT_RECURSIVE
        disk, inodes = job["disk"], job["inodes"]
        mount(
            b"tmpfs", job["mnt"].encode(), b"tmpfs", nosuid_nodev, f"size={disk},nr_inodes={inodes},mode=0711".encode()
        )
        os.chdir(job["mnt"])  # binds below come from here by relative path, which later mounts cannot hide
        os.mkdir("work", 0o700)
        for src, dirs, files in os.walk(run_dir):  # the run's inputs (main.py, files=), written by grpo-trl
            rel = os.path.join("work", os.path.relpath(src, run_dir))
            for d in dirs:
                os.mkdir(os.path.join(rel, d), 0o700)
            for f in files:
                with open(os.path.join(src, f), "rb") as fin, open(os.path.join(rel, f), "xb") as fout:
                    fout.write(fin.read())
            for name in [rel, *(os.path.join(rel, n) for n in dirs + files)]:
                os.chown(name, uid, uid)
        shared = {os.path.realpath(p) for p in ("/tmp", "/var/tmp", "/dev/shm", "/run/lock") if os.path.isdir(p)}
        for i, path in enumerate(sorted(shared)):
            os.mkdir(f"shared{i}")
            os.chmod(f"shared{i}", 0o1777)
            mount(f"shared{i}".encode(), path.encode(), None, 0x1000)  # MS_BIND
        os.umask(0o022)
        os.makedirs(run_dir, exist_ok=True)  # inside a private tmpfs when /tmp now hides the real one
        mount(b"work", run_dir.encode(), None, 0x1000)

    status_r, status_w = os.pipe()
    supervisor = os.fork()
    if supervisor == 0:
        try:
            os.close(status_r)
            os.setpgid(
                0, 0
            )  # the server kills the launcher's group: this one ends when it has killed all the run left
            if mode == "namespaces":  # the namespace's init
                mount(b"proc", b"/proc", b"proc", nosuid_nodev | 0x8)  # MS_NOEXEC
            else:  # every process the run starts stays this one's descendant
                check(libc.prctl(36, 1, 0, 0, 0), "PR_SET_CHILD_SUBREAPER")
            run = os.fork()
            if run == 0:
                os.close(status_w)
                if uid is not None:
                    os.setgroups([])
                    os.setresgid(uid, uid, uid), os.setresuid(uid, uid, uid)
                os.chdir(run_dir)
                os.umask(0o077)
                return argv
            _supervise(os, run, status_w)
        except BaseException as e:  # noqa: BLE001 - report and stop, whatever it was
            os.write(2, f"sandbox supervisor: {e}\n".encode())
            os._exit(125)
    os.close(status_w)
    data = b"".join(iter(lambda: os.read(status_r, 64), b""))
    exited = os.waitpid(supervisor, 0)[1]  # once it has killed all the run left
    status = int(data) if data else exited
    if os.WIFSIGNALED(status):  # end as the run did: its exit code, or the signal that killed it
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0: no core file
        os.kill(os.getpid(), os.WTERMSIG(status))
        os._exit(128 + os.WTERMSIG(status))
    os._exit(os.waitstatus_to_exitcode(status))


def _supervise(os, run: int, status_w: int) -> None:
    """Wait until ``run`` exits or grpo-trl is done with it (its end of the control socket, fd 3), kill every
    descendant left (orphans included), send the run's status and exit (137 without one)."""
    import contextlib
    import select

    select.select([os.pidfd_open(run), 3], [], [])
    status = None
    for _ in range(1000):  # bounded: each round reaps, then kills every descendant left
        try:
            while (reaped := os.waitpid(-1, os.WNOHANG))[0]:
                status = reaped[1] if reaped[0] == run else status
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
    if status is not None:
        os.write(status_w, str(status).encode())
    os._exit(0 if status is not None else 137)


def _serve(fd: int) -> dict:
    """Fork a launcher per request on socket ``fd`` (a job; stdin, stdout, stderr, control socket); returns the job in
    it. On the control socket: the launcher's exit status (``WNOWAIT``: the pid is never reused); when grpo-trl is
    done with it, kill the launcher's group, then close it. Exits when grpo-trl closes ``fd``."""
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
                    for target, source in enumerate(fds):  # stdin, stdout, stderr, control (3)
                        os.dup2(source, target)
                    os.closerange(4, os.sysconf("SC_OPEN_MAX"))
                    job = {**json.loads(data), "parent": me}
                    os.chdir(job["dir"])
                    os.environ["HOME"] = os.environ["TMPDIR"] = job["dir"]
                    os.umask(0o077)
                    return job
                for f in fds[:3]:
                    os.close(f)
                runs[fds[3]] = pid
                sel.register(fds[3], selectors.EVENT_READ)
            elif key.fileobj == wake_r:
                os.read(wake_r, 4096)
                for control, pid in runs.items():
                    done = None if pid in ended else os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
                    if done is not None:
                        ended.add(pid)
                        with contextlib.suppress(OSError):  # grpo-trl may be done with the run already
                            os.write(
                                control,
                                b"%d\n" % (done.si_status if done.si_code == os.CLD_EXITED else -done.si_status),
                            )
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
        os.close(3)  # the control socket: only the run's own process gets here
    except OSError as e:
        os.write(2, f"sandbox launcher: {e}\n".encode())
        os._exit(125)
    del _main, _serve
    exec(globals().pop("_boot"), {"__name__": "__main__", "__builtins__": __builtins__})
