"""What a reward leaves behind in the trainer's process, put right: cwd, streams, builtins (``Place``, around each
call); the non-daemon threads and processes it started (``Place.note_threads``) are named at the end of the CLI,
which exits without them."""

from __future__ import annotations

import atexit
import builtins
import contextlib
import logging
import os
import sys
import threading
import time
from collections.abc import Callable

logger = logging.getLogger("grpo_trl.rewards.call")

_LEFT: dict[object, str] = {}  # non-daemon threads and multiprocessing children a reward started -> its name
GRACE = 2.0  # seconds the end of the CLI waits for what is left running before it exits without it


def _children() -> set:
    mp = sys.modules.get("multiprocessing")  # not imported: no children
    return set(mp.active_children()) if mp is not None else set()


def exit_if_stray_threads(code: int, grace: float = GRACE, everything: bool = False) -> None:
    """End of the CLI: non-daemon threads and processes rewards left (``everything``: any) get ``grace`` seconds,
    then are named in a warning, the processes terminated, and the program exits with ``code`` without them (the
    ``atexit`` handlers run, bounded by ``grace`` too)."""
    left = dict(_LEFT)
    if everything:
        for what in [*threading.enumerate(), *_children()]:
            if what not in (threading.main_thread(), threading.current_thread()) and not what.daemon:
                left.setdefault(what, "")
    deadline = time.monotonic() + grace
    for what in left:
        what.join(max(0.0, deadline - time.monotonic()))
    alive = {what: name for what, name in left.items() if what.is_alive()}
    if not alive and not everything:  # everything: still bound the exit handlers a plugin or a reward registered
        return
    for what, name in alive.items():
        process = not isinstance(what, threading.Thread)
        logger.warning(
            "%s left %s %r running (not a daemon); exiting without waiting for it%s (start it with daemon=True or "
            "join it before returning)", f"reward {name!r}" if name else "user code (an environment, a plugin)",
            "process" if process else "thread", what.name, " (terminated)" if process else "",
        )  # fmt: skip
        for stop in (what.terminate, what.kill) if process else ():
            stop()
            what.join(1.0)
    runner = threading.Thread(target=getattr(atexit, "_run_exitfuncs", lambda: None), name="atexit", daemon=True)
    runner.start()
    runner.join(grace)
    if runner.is_alive():
        logger.warning("an exit handler (atexit) did not return within %s s; exiting without waiting for it", grace)
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a closed stream: nothing to flush
            stream.flush()
    os._exit(code)


_FD_COPIES: dict[tuple[int, int, int], int] = {}  # (fd, st_dev, st_ino) of a standard fd -> a copy kept to put back


def _fd_identity(fd: int) -> tuple[int, int, int] | None:
    try:
        st = os.fstat(fd)
    except OSError:
        return None
    return fd, st.st_dev, st.st_ino


def _cwd() -> str | None:
    try:
        return os.getcwd()
    except OSError:  # the directory was removed under the run
        return None


class Place:
    """The cwd, ``sys.stdout`` / ``sys.stderr`` (and fds 1, 2), the recursion limit, ``builtins`` and threads before a
    reward call: put back (a reward must not move the run's saves, silence its summary or break grpo-trl's code)."""

    def __init__(self) -> None:
        self.cwd = _cwd()
        self.streams = (sys.stdout, sys.stderr)
        self.recursion = sys.getrecursionlimit()
        self.builtins = dict(vars(builtins))
        self.fds = [_fd_identity(1), _fd_identity(2)]
        self.threads, self.children = set(threading.enumerate()), _children()
        for ident in self.fds:
            if ident is not None and ident not in _FD_COPIES:
                with contextlib.suppress(OSError):
                    _FD_COPIES[ident] = os.dup(ident[0])

    def note_threads(self, name: str) -> None:
        """Remember the non-daemon threads and processes started since as reward ``name``'s (named at the end)."""
        threads = threading.enumerate()
        _LEFT.update((t, name) for t in threads if t not in self.threads and not t.daemon and t.is_alive())
        _LEFT.update((child, name) for child in _children() - self.children if not child.daemon)

    def restore(self, warn: Callable[[str], None]) -> None:
        if sys.getrecursionlimit() != self.recursion:
            sys.setrecursionlimit(self.recursion)
            warn(f"changed the recursion limit (sys.setrecursionlimit); put back to {self.recursion}")
        live = vars(builtins)
        changed = [k for k, v in self.builtins.items() if k not in live or live[k] is not v]
        if changed:
            live.update({k: self.builtins[k] for k in changed})
            warn(f"replaced or removed builtins ({', '.join(sorted(changed)[:5])}); put back")
        for before in self.fds:
            if before is not None and _fd_identity(before[0]) != before and before in _FD_COPIES:
                with contextlib.suppress(OSError):
                    os.dup2(_FD_COPIES[before], before[0])
                    warn(f"closed or redirected file descriptor {before[0]}; put back")
        if self.cwd is not None and _cwd() != self.cwd:
            with contextlib.suppress(OSError):
                os.chdir(self.cwd)
                warn(f"changed the working directory (os.chdir); put back to {self.cwd}")
        for name, before, fd in (("stdout", self.streams[0], 1), ("stderr", self.streams[1], 2)):
            now = getattr(sys, name)
            if now is before and not getattr(now, "closed", False):
                continue
            if before is not None and not getattr(before, "closed", False):
                setattr(sys, name, before)
            else:
                encoding = getattr(before, "encoding", None) or "utf-8"
                setattr(sys, name, open(fd, "w", encoding=encoding, errors="replace", closefd=False, buffering=1))  # noqa: SIM115
            warn(f"closed or replaced sys.{name}; put back")
