"""One run per output directory: ``<output_dir>/.grpo-trl/lock`` (an OS lock) and ``lock.json`` (whose it is)."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from pathlib import Path

from grpo_trl.io import read_json, write_json
from grpo_trl.run.names import STATE

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
                who = read_json(self.info)
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
        write_json(self.info, this_process(), mine=True)
        return None

    def release(self) -> None:
        if self._lock.is_locked:
            try:
                self.info.unlink(missing_ok=True)
            except OSError:  # a folder turned read-only: the next run takes a lock.json over when the OS lock is free
                pass
            self._lock.release()


HEARTBEAT_S = 1.0  # how often a live run touches .grpo-trl/heartbeat.json


class Heartbeat:
    """``<output_dir>/.grpo-trl/heartbeat.json`` (the run it belongs to), touched every ``HEARTBEAT_S`` by a thread
    while the run lives. Its mtime, on the filesystem's clock, bounds when a killed run can last have written: the
    next run closes the killed run's window there, so a file made after the kill is never taken for the run's."""

    def __init__(self, folder: str | Path, run: dict):
        self.path = Path(folder) / STATE / "heartbeat.json"
        self.run = {k: run.get(k) for k in ("pid", "host", "fs_start")}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        write_json(self.path, self.run, mine=True)
        self._thread = threading.Thread(target=self._beat, name="grpo-trl-heartbeat", daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            try:
                os.utime(self.path)
            except OSError:  # the directory went away or turned read-only: the run's own writes will say so
                pass

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


def last_alive(folder: str | Path, run: dict) -> float | None:
    """When ``run`` (a manifest run record) was last known alive, on the filesystem's clock: its heartbeat's mtime
    plus two missed beats, or ``None`` when it left no heartbeat (killed before its first, or an older grpo-trl)."""
    path = Path(folder) / STATE / "heartbeat.json"
    try:
        who = read_json(path)
        mtime = path.stat().st_mtime
    except (OSError, ValueError):
        return None
    if not isinstance(who, dict) or any(who.get(k) != run.get(k) for k in ("pid", "host", "fs_start")):
        return None
    return mtime + 3 * HEARTBEAT_S
