"""One run per output directory: ``<output_dir>/.grpo-trl/lock`` (an OS lock) and ``lock.json`` (whose it is)."""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from pathlib import Path

from grpo_trl.run_names import STATE, write_json

logger = logging.getLogger("grpo_trl")


def this_process() -> dict:
    """Who is writing: pid, host and start time, as ``lock.json`` and each run record of the manifest say it."""
    return {"pid": os.getpid(), "host": socket.gethostname(), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


class RunLock:
    """One run per output directory: an OS lock (``filelock``) held by the main process, with ``lock.json`` saying
    whose it is. The kernel frees the OS lock when its process dies, so a ``lock.json`` found with the lock free is
    a dead run's: taken over with a warning."""

    def __init__(self, folder: str | Path):
        from filelock import FileLock

        self.state = Path(folder) / STATE
        self.info = self.state / "lock.json"
        self.state.mkdir(parents=True, exist_ok=True)
        self._lock = FileLock(str(self.state / "lock"), timeout=0)

    def owner(self, wait_s: float = 0.5) -> dict | None:
        deadline = time.monotonic() + wait_s
        while True:  # the holder writes lock.json right after taking the lock: give it a moment
            try:
                who = json.loads(self.info.read_text())
                if isinstance(who, dict):
                    return who
                raise ValueError("not a mapping")
            except (OSError, ValueError):
                if time.monotonic() > deadline:
                    return None
                time.sleep(0.02)

    def acquire(self) -> str | None:
        """Take the lock; ``None`` on success, else a sentence naming the run that holds it."""
        from filelock import Timeout

        try:
            self._lock.acquire(timeout=0)
        except Timeout:
            who = self.owner()
            if who is None:
                return "is in use by another run (its .grpo-trl/lock.json is unreadable)"
            return f"is in use by another run: PID {who.get('pid')} on {who.get('host')}, started {who.get('started')}"
        stale = self.owner(wait_s=0)
        if stale and stale.get("pid") != os.getpid():
            logger.warning(
                "taking over the lock of PID %s on %s (started %s): that run is gone (its OS lock was free)",
                stale.get("pid"), stale.get("host"), stale.get("started"),
            )  # fmt: skip
        write_json(self.info, this_process())
        return None

    def release(self) -> None:
        if self._lock.is_locked:
            self.info.unlink(missing_ok=True)
            self._lock.release()
