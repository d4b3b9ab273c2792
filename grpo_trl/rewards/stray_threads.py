"""What a reward leaves behind in the trainer's process, put right: the working directory and standard streams
(``Place``, around each call), and non-daemon threads, named at the end of the CLI, which then exits without waiting.

``SafeReward`` calls ``note_threads(before, name)`` after each call with the threads alive before it;
``grpo-trl train`` calls ``exit_if_stray_threads(code)`` last.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable

logger = logging.getLogger("grpo_trl.rewards.call")

_STRAYS: dict[threading.Thread, str] = {}  # non-daemon threads a reward started, -> the reward's name


def note_threads(before: set, name: str) -> None:
    """Remember the non-daemon threads started since ``before`` (a set of threads) as left by reward ``name``."""
    for t in threading.enumerate():
        if t not in before and not t.daemon and t.is_alive():
            _STRAYS[t] = name


def exit_if_stray_threads(code: int, grace: float = 2.0) -> None:
    """End of the CLI: if a reward left a non-daemon thread running, name it and exit now instead of waiting on it.

    Training has saved by then; Python would otherwise wait for the thread forever.
    """
    deadline = time.monotonic() + grace
    alive = []
    for t, name in list(_STRAYS.items()):
        t.join(max(0.0, deadline - time.monotonic()))
        if t.is_alive():
            alive.append((t, name))
    if not alive:
        return
    for t, name in alive:
        logger.warning(
            "reward %r left thread %r running (not a daemon); exiting without waiting for it "
            "(start it with daemon=True or join it before returning)",
            name,
            t.name,
        )
    import atexit
    import os
    import sys

    getattr(atexit, "_run_exitfuncs", lambda: None)()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


class Place:
    """The working directory and ``sys.stdout`` / ``sys.stderr`` before a reward call, put back after it: a reward
    that calls ``os.chdir`` or closes ``sys.stdout`` must not move the run's saves or silence its summary."""

    def __init__(self) -> None:
        try:
            self.cwd: str | None = os.getcwd()
        except OSError:  # the directory was removed under the run: nothing to go back to
            self.cwd = None
        self.streams = (sys.stdout, sys.stderr)

    def restore(self, warn: Callable[[str], None]) -> None:
        if self.cwd is not None:
            try:
                moved = os.getcwd() != self.cwd
            except OSError:
                moved = True
            if moved:
                try:
                    os.chdir(self.cwd)
                    warn(f"changed the working directory (os.chdir); put back to {self.cwd}")
                except OSError:
                    pass
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
