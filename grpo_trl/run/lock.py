"""One run per output directory: an OS lock (``filelock``) on ``.grpo-trl/lock``, ``lock.json`` saying whose it is,
and ``heartbeat.json`` whose mtime bounds when a killed run last wrote."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from pathlib import Path

from filelock import FileLock, Timeout

from grpo_trl.io import read_json, write_json
from grpo_trl.run.names import STATE

logger = logging.getLogger("grpo_trl")
HEARTBEAT_S = 1.0  # how often a live run touches .grpo-trl/heartbeat.json


def this_process() -> dict:
    """Who is writing: pid, host and start time (``lock.json`` and each run record of the manifest)."""
    return {"pid": os.getpid(), "host": socket.gethostname(), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


class RunLock:
    """The OS lock, held by the main process; the kernel frees it when its process dies, so a ``lock.json`` found
    with the lock free is a dead run's: taken over with a warning."""

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


class Heartbeat:
    """``.grpo-trl/heartbeat.json`` (its run), touched every ``HEARTBEAT_S`` by a thread while the run lives: its
    mtime, on the filesystem's clock, closes a killed run's window, so a file made after the kill is not the run's."""

    def __init__(self, folder: str | Path, run: dict):
        self.path, self.run = (
            Path(folder) / STATE / "heartbeat.json",
            {k: run.get(k) for k in ("pid", "host", "fs_start")},
        )
        self._stop, self._thread = threading.Event(), threading.Thread(target=self._beat, daemon=True)

    def start(self) -> None:
        write_json(self.path, self.run, mine=True)
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            try:
                os.utime(self.path)
            except OSError:  # the directory went away or turned read-only: the run's own writes will say so
                pass

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()


def last_alive(folder: str | Path, run: dict) -> float | None:
    """When ``run`` was last known alive (filesystem clock): its heartbeat's mtime plus two missed beats, or ``None``
    when it left no heartbeat of its own."""
    path = Path(folder) / STATE / "heartbeat.json"
    try:
        who, mtime = read_json(path), path.stat().st_mtime
    except (OSError, ValueError):
        return None
    if not isinstance(who, dict) or any(who.get(k) != run.get(k) for k in ("pid", "host", "fs_start")):
        return None
    return mtime + 3 * HEARTBEAT_S
