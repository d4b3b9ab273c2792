"""One call bounded in wall time by a daemon thread, abandoned at the deadline (Python cannot stop a thread): tools
off the main thread and endpoint probes (timed rewards: ``rewards/isolated.py``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


def in_thread(call: Callable[[], Any], timeout: float | None, late: BaseException, name: str = "timed-call") -> Any:
    """``call()``'s value (or what it raised) if it returns within ``timeout`` s (None: no bound), else ``late``."""
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
