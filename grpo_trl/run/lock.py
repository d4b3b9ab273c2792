"""One run per output directory: an OS lock (``filelock``) on ``.grpo-trl/lock`` and ``lock.json`` saying whose
it is; the kernel frees the lock when its process dies, so a ``lock.json`` found with the lock free is a dead run's."""

from __future__ import annotations

import logging
import os
import socket
import time
from pathlib import Path

from filelock import FileLock, Timeout

from grpo_trl.io import read_json, write_json
from grpo_trl.run.names import STATE

logger = logging.getLogger("grpo_trl")


def this_process() -> dict:
    """Who is writing: pid, host and start time (``lock.json`` and each run record of the manifest)."""
    return {"pid": os.getpid(), "host": socket.gethostname(), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


class RunLock:
    """The OS lock, held by the main process; a dead run's ``lock.json`` is taken over with a warning."""

    def __init__(self, folder: str | Path):
        state = Path(folder) / STATE
        state.mkdir(parents=True, exist_ok=True)
        self.info, self._lock = state / "lock.json", FileLock(str(state / "lock"), timeout=0)

    def owner(self, wait_s: float = 0.5) -> dict | None:
        deadline = time.monotonic() + wait_s
        while True:  # the holder writes lock.json right after taking the lock: give it a moment
            try:
                if isinstance(who := read_json(self.info), dict):
                    return who
            except (OSError, ValueError):
                pass
            if time.monotonic() > deadline:
                return None
            time.sleep(0.02)

    def acquire(self) -> str | None:
        """Take the lock; ``None`` on success, else a sentence naming the run that holds it."""
        try:
            self._lock.acquire(timeout=0)
        except Timeout:
            if (who := self.owner()) is None:
                return "is in use by another run (its .grpo-trl/lock.json is unreadable)"
            return f"is in use by another run: PID {who.get('pid')} on {who.get('host')}, started {who.get('started')}"
        if (stale := self.owner(wait_s=0)) and stale.get("pid") != os.getpid():
            logger.warning(
                "taking over the lock of PID %s on %s (started %s): that run is gone (its OS lock was free)",
                stale.get("pid"), stale.get("host"), stale.get("started"),
            )  # fmt: skip
        write_json(self.info, this_process(), mine=True)
        return None

    def release(self) -> None:
        if self._lock.is_locked:
            try:
                self.info.unlink(missing_ok=True)
            except OSError:  # a read-only folder: the next run takes a lock.json over when the OS lock is free
                pass
            self._lock.release()
