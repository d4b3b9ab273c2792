"""Non-daemon threads that rewards leave running: named at the end of the CLI, which then exits without waiting.

``SafeReward`` calls ``note_threads(before, name)`` after each call with the threads alive before it;
``grpo-trl train`` calls ``exit_if_stray_threads(code)`` last.
"""

from __future__ import annotations

import logging
import threading
import time

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
