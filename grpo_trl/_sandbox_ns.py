"""The fork server (``_serve``: ``python -I -c <this> fd boot``) and the launcher (``_main``) of each sandboxed run:
a supervisor forks the run, then kills all it left (on Linux its subreaper, or with "namespaces" the init of its own
PID, mount and IPC namespaces, every mount read-only but a private tmpfs); as root the run has its own uid.
The job (JSON): mode uid dir mnt disk inodes limits. Exit 125 (message on stderr) if it cannot.
"""


def _main(job: dict) -> list[str]:
    """Returns (the boot argv) only in the run's own process; every other process ends inside."""
    import ctypes  # loaded in the fork server already
    import os
    import shutil
    import signal

    libc = ctypes.CDLL(None, use_errno=True)

    def check(ret: int, what: str) -> None:
        if ret != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"{what}: {os.strerror(err)}")

    def mount(src: bytes | None, target: bytes, fstype: bytes | None, flags: int, data: bytes | None = None) -> None:
        check(libc.mount(src, target, fstype, ctypes.c_ulong(flags), data), f"mount {target.decode()}")

    def chown_tree(top: str) -> None:  # the run's inputs, written by grpo-trl, to the run's own uid
        for path, dirs, files in os.walk(top):
            for name in [path, *(os.path.join(path, n) for n in dirs + files)]:
                os.chown(name, uid, uid)

    mode, uid, run_dir, argv = job["mode"], job["uid"], job["dir"], ["-c", *map(str, job["limits"])]
    if mode != "none":  # "none": not Linux
        check(libc.prctl(38, 1, 0, 0, 0), "PR_SET_NO_NEW_PRIVS")
    if mode == "namespaces":
        check(libc.unshare(0x00020000 | 0x20000000 | 0x08000000), "unshare")  # NEWNS | NEWPID | NEWIPC
        attr = (ctypes.c_uint64 * 4)(0x1, 0, 1 << 18, 0)  # every mount read-only and MS_PRIVATE (Linux >= 5.12)
        check(libc.syscall(442, -100, b"/", 0x8000, attr, ctypes.sizeof(attr)), "mount_setattr")  # AT_RECURSIVE
        size = f"size={job['disk']},nr_inodes={job['inodes']},mode=0711".encode()
        mount(b"tmpfs", job["mnt"].encode(), b"tmpfs", 0x2 | 0x4, size)  # MS_NOSUID | MS_NODEV
        os.chdir(job["mnt"])  # binds below come from here by relative path, which later mounts cannot hide
        shutil.copytree(run_dir, "work")  # the run's inputs (main.py, files=), written by grpo-trl
        chown_tree("work")
        shared = {os.path.realpath(p) for p in ("/tmp", "/var/tmp", "/dev/shm", "/run/lock") if os.path.isdir(p)}
        for i, path in enumerate(sorted(shared)):
            os.mkdir(f"shared{i}")
            os.chmod(f"shared{i}", 0o1777)
            mount(f"shared{i}".encode(), path.encode(), None, 0x1000)  # MS_BIND
        os.umask(0o022)
        os.makedirs(run_dir, exist_ok=True)  # inside a private tmpfs when /tmp now hides the real one
        mount(b"work", run_dir.encode(), None, 0x1000)
        if os.fork():
            os._exit(0)  # the namespace's first process, its init, supervises the run
        mount(b"proc", b"/proc", b"proc", 0x2 | 0x4 | 0x8)  # MS_NOSUID | MS_NODEV | MS_NOEXEC
    elif mode != "none":  # every process the run starts stays this one's descendant
        check(libc.prctl(36, 1, 0, 0, 0), "PR_SET_CHILD_SUBREAPER")
        if mode == "uid":
            chown_tree(run_dir)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False), os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    run = os.fork()
    if run == 0:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.close(wake_r), os.close(wake_w)
        if mode == "none":  # its group is what the supervisor kills
            os.setpgid(0, 0)
        if uid is not None:
            os.setgroups([])
            os.setresgid(uid, uid, uid), os.setresuid(uid, uid, uid)
        os.chdir(run_dir)
        os.umask(0o077)
        return argv
    libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE: a run of the same uid cannot ptrace it nor take its fd 3
    _supervise(os, run, wake_r, mode != "none")


def _supervise(os, run: int, wake: int, linux: bool) -> None:
    """Wait until ``run`` exits or grpo-trl is done with it (fd 3, its control socket, is readable: closed or cut),
    kill it and every descendant left, orphans included (not ``linux``: its group); then send its status on fd 3."""
    import contextlib
    import select

    status = None
    while status is None:
        done = 3 in select.select([wake, 3], [], [])[0]
        with contextlib.suppress(BlockingIOError):
            os.read(wake, 512)
        pid, status = os.waitpid(run, os.WNOHANG)
        if not pid:
            status = None
            if done:
                break
    with contextlib.suppress(OSError):
        os.killpg(run, 9) if not linux else os.kill(run, 9)
    for _ in range(1000 if linux else 0):  # bounded: each round reaps, then kills every descendant left
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
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
        with contextlib.suppress(OSError):
            os.write(3, b"\n%d\n" % os.waitstatus_to_exitcode(status))  # on a line of its own
    os._exit(0)


def _serve(fd: int) -> dict:
    """Fork a launcher per request on socket ``fd`` (a job; stdin, stdout, stderr, control socket as fd 3); returns
    the job in it. Exits when grpo-trl closes ``fd``."""
    import gc
    import json
    import os
    import shutil  # noqa: F401 - loaded once here: each namespaces launcher copies a run's inputs with it
    import signal
    import socket
    import sys
    import typing  # noqa: F401 - what every code_tests harness imports: loaded once here

    gc.freeze()  # a run's collections leave the server's objects alone: fewer pages copied after fork()
    del sys.modules["gc"]  # as in a fresh interpreter (code_tests refuses a run that imports it)
    server = socket.socket(fileno=fd)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # launchers are reaped by the kernel
    if sys.platform == "linux":  # and a namespace's init, orphaned by its launcher (else pid 1's, which may not reap)
        import ctypes

        ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    while True:
        data, fds, _, _ = socket.recv_fds(server, 1 << 16, 4)
        if not data:
            os._exit(0)
        if os.fork() == 0:
            server.detach()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            os.setsid()
            for target, source in enumerate(fds):  # stdin, stdout, stderr, control (3)
                os.dup2(source, target)
            os.closerange(4, os.sysconf("SC_OPEN_MAX"))
            job = json.loads(data)
            os.chdir(job["dir"])
            os.environ["HOME"] = os.environ["TMPDIR"] = job["dir"]
            os.umask(0o077)
            return job
        for f in fds:
            os.close(f)


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
