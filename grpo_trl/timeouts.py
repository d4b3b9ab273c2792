"""One call bounded in wall time by a worker thread: what tools and timed rewards use where nothing better works.

Python cannot stop a thread: at the deadline the caller gets its ``TimeoutError`` and the call goes on in a daemon
thread whose late value is never used. (A timed reward runs in a forked child where it can, ``rewards/isolated.py``;
a tool in the main thread uses ``SIGALRM``, ``tools/registry.py``.)

Example:
    >>> import time
    >>> in_thread(lambda: 6 * 7, 1.0, TimeoutError("late"))
    42
    >>> in_thread(lambda: time.sleep(5), 0.05, TimeoutError("late"))
    Traceback (most recent call last):
    ...
    TimeoutError: late
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


def in_thread(call: Callable[[], Any], timeout: float | None, late: BaseException, name: str = "timed-call") -> Any:
    """``call()`` in a daemon thread named ``name``, waited on for ``timeout`` seconds (None: no bound): its value,
    or what it raised (re-raised here), or ``late`` raised when it has not returned by then."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=target, name=name, daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise late
    if "error" in box:
        raise box["error"]
    return box.get("value")
