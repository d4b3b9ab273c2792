"""math-verify behind worker processes (``python -I``, shared, reused): a deadline per item from any thread.

Plain numbers are decided in-process as math-verify would; the rest goes to a child, which is killed and restarted
when an item overruns its ``timeout`` (that item scores 0.0). Bare LaTeX is read between ``$...$``, prose as written.

Example:
    >>> math_form("2\\\\sqrt{3}"), math_form("The answer is 72."), math_form("$x$")
    ('$2\\\\sqrt{3}$', 'The answer is 72.', '$x$')
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import math
import os
import queue
import select
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from grpo_trl.rewards._verify_worker import _PLAIN_INT, gold_number, is_prose, math_form, number, request, same_number

logger = logging.getLogger(__name__)

MAX_ANSWER_CHARS = 2_000  # a located answer longer than this is wrong without asking math-verify
CHUNK = 256  # most items written to a child at once (their results always fit the pipe: no deadlock)
MIN_CHUNK = 8  # fewer items than this per child are not worth a second child
STARTUP_S = 30.0  # a fresh child's imports (sympy), before it says it is ready
_WORKER = Path(__file__).with_name("_verify_worker.py")


class _Child:
    """One ``_verify_worker.py`` process, its pipes and its own read buffer (select-safe)."""

    proc: subprocess.Popen | None = None
    buf = b""
    fresh = True

    def start(self) -> None:
        self.buf, self.fresh = b"", True
        self.proc = subprocess.Popen(  # -I: a math_verify.py (or sympy.py) in the cwd cannot hijack the child
            [sys.executable, "-I", str(_WORKER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def readline(self, timeout: float) -> bytes | None:
        deadline, fd = time.monotonic() + timeout, self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:  # the child died
                return None
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return line

    def run(self, items: list[tuple[str, str, bool]], timeout: float) -> tuple[list[float | None], int]:
        """Pipeline ``items`` through the child; each result must arrive within ``timeout`` of the previous one.
        A fresh child's imports are bounded apart (``STARTUP_S``): an item gets only its own ``timeout``."""
        results: list[float | None] = []
        timeouts = 0
        while len(results) < len(items):
            chunk = items[len(results) : len(results) + CHUNK]
            if self.proc is None or self.proc.poll() is not None:
                self.start()
            try:
                if self.fresh and self.readline(STARTUP_S) != b'"ready"':
                    raise TimeoutError
                self.fresh = False
                self.proc.stdin.write(b"".join(json.dumps(item).encode() + b"\n" for item in chunk))
                self.proc.stdin.flush()
                for _, answer, _ in chunk:
                    line = self.readline(timeout)
                    if line is None:
                        logger.warning(
                            "math-verify exceeded %.1f s on a %d-char answer; scored 0.0", timeout, len(answer)
                        )
                        raise TimeoutError
                    results.append(json.loads(line))
            except (TimeoutError, OSError):  # the item in hand scores 0.0; the rest go to a fresh child, started now
                timeouts += 1
                results.append(0.0)
                self.kill()
                self.start()
        return results, timeouts


class _Pool:
    """Children shared by every verifier in the process; a caller holds one child at a time (no deadlock), the one
    used last first (its caches are warm)."""

    def __init__(self) -> None:
        self.children: list[_Child] = []
        self.idle: queue.LifoQueue[_Child] = queue.LifoQueue()
        self.lock = threading.Lock()
        self.threads = ThreadPoolExecutor(max_workers=32, thread_name_prefix="math-verify")  # threads made on need

    def start(self, n: int) -> None:
        """At least ``n`` children, started now without waiting for their imports (they overlap the caller's work)."""
        with self.lock:
            while len(self.children) < n:
                self.children.append(_Child())
                self.idle.put(self.children[-1])
            idle = []  # only idle children are started here: one in use is the caller's to restart
            with contextlib.suppress(queue.Empty):
                while True:
                    idle.append(self.idle.get_nowait())
            for child in reversed(idle):  # back in the same order: the one used last stays first
                if child.proc is None:
                    child.start()
                self.idle.put(child)

    def close(self) -> None:
        for child in list(self.children):
            child.kill()

    def run(self, items: list[tuple[str, str, bool]], timeout: float, workers: int) -> tuple[list[float | None], int]:
        self.start(workers)
        size = min(CHUNK, max(MIN_CHUNK, math.ceil(len(items) / (2 * workers))))
        todo = iter(range(0, len(items), size))
        results: list[float | None] = [None] * len(items)

        def drain() -> int:  # one child takes chunks until none are left
            child, lost = self.idle.get(), 0
            try:
                for start in todo:  # a shared iterator: each chunk is taken once
                    results[start : start + size], t = child.run(items[start : start + size], timeout)
                    lost += t
                return lost
            finally:
                self.idle.put(child)

        tasks = min(workers, math.ceil(len(items) / size))
        if tasks <= 1:
            return results, drain()
        return results, sum(f.result() for f in [self.threads.submit(drain) for _ in range(tasks)])


_POOL = _Pool()
atexit.register(_POOL.close)


def default_workers() -> int:
    """Worker processes per machine process: the usable cores, at most 4."""
    return max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


class MathVerifier:
    """math-verify ``verify(parse(gold), parse(answer))`` with a hard deadline per item, usable from any thread.

    Results are cached per (gold, answer) pair; plain numbers are compared in-process (``number``, ``same_number``:
    math-verify's verdict, no round trip). ``workers`` bounds the child processes (default: usable cores, at most 4).
    """

    def __init__(self, timeout: float = 5.0, cache_size: int = 100_000, workers: int | None = None):
        self.timeout = timeout
        self.cache_size = cache_size
        self.workers = workers or default_workers()
        self._cache: dict[tuple[str, str], float | None] = {}
        self._lock = threading.Lock()
        self.timeouts = 0

    def __getstate__(self) -> dict:  # picklable: the cache and lock are not carried over
        return {"timeout": self.timeout, "cache_size": self.cache_size, "workers": self.workers}

    def __setstate__(self, state: dict) -> None:
        self.__init__(**state)

    def start(self) -> None:
        """Start the worker processes in the background, so that the first call does not wait for their imports."""
        _POOL.start(self.workers)

    def clear_cache(self) -> None:
        """Forget cached scores (the child processes keep their parsed golds)."""
        with self._lock:
            self._cache.clear()

    def close(self) -> None:
        """Stop the worker processes (they restart on the next call)."""
        _POOL.close()

    def score(self, pairs: list[tuple[str, str]]) -> list[float | None]:
        """Scores for ``(gold, answer)`` pairs: 1.0 equivalent, 0.0 not, ``None`` when the gold cannot be parsed."""
        out: list[float | None] = [None] * len(pairs)
        ask: dict[tuple[str, str], list[int]] = {}
        with self._lock:
            for i, key in enumerate(pairs):
                if key not in self._cache:
                    gold_value = gold_number(key[0])
                    answer_value = number(key[1]) if gold_value and len(key[1]) < 200 else None
                    verdict = same_number(gold_value, answer_value) if answer_value else None
                    if verdict is None and len(key[1]) <= MAX_ANSWER_CHARS:
                        ask.setdefault(key, []).append(i)
                        continue
                    self._remember(key, verdict or 0.0)  # a longer answer is wrong without asking math-verify
                out[i] = self._cache[key]
        if ask:
            results, timeouts = _POOL.run([request(g, a) for g, a in ask], self.timeout, self.workers)
            with self._lock:
                self.timeouts += timeouts
                for (key, rows), result in zip(ask.items(), results):
                    self._remember(key, result)
                    for i in rows:
                        out[i] = result
        return out

    def _remember(self, key: tuple[str, str], result: float | None) -> None:
        if len(self._cache) >= self.cache_size:
            self._cache.clear()
        self._cache[key] = result


__all__ = ["MAX_ANSWER_CHARS", "MathVerifier", "_PLAIN_INT", "default_workers", "is_prose", "math_form", "number"]
