"""math-verify behind a pool of worker processes: per-item deadlines from any thread, parallel across cores.

``MathVerifier.score`` takes ``(gold, answer)`` pairs. Bare LaTeX is given to math-verify between ``$...$`` (it reads
``2\\sqrt{3}`` as 2 otherwise), prose is given as written (so "The answer is 72." still reads 72), see ``math_form``.
Work is split over up to ``workers`` child processes (``python -I``, started on first need and reused across calls and
steps, shared by every verifier in the process); a child that overruns an item's ``timeout`` is killed and restarted,
and that item scores 0.0, like a math-verify timeout.

Example:
    >>> math_form("2\\\\sqrt{3}"), math_form("The answer is 72."), math_form("$x$")
    ('$2\\\\sqrt{3}$', 'The answer is 72.', '$x$')
"""

from __future__ import annotations

import atexit
import functools
import json
import logging
import math
import os
import queue
import re
import select
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction
from pathlib import Path

logger = logging.getLogger(__name__)

# Plain integers (no leading zeros) compare exactly like math-verify compares them; tested against math-verify.
_PLAIN_INT = re.compile(r"-?(?:0|[1-9][0-9]{0,14})\Z")
# A plain number, as math-verify reads it: an integer, a short decimal (a sympy Float), or \frac{a}{b} (a Rational)
_NUMBER = re.compile(r"(-?)(?:(0|[1-9]\d{0,14})(?:\.(\d{1,6}))?|\\[dt]?frac\{(0|[1-9]\d{0,5})\}\{([1-9]\d{0,5})\})")
_WRAPPED = re.compile(r"\$\s*(.*?)\s*\$|\\boxed\{\s*(.*?)\s*\}", re.DOTALL)
# A worked gold ("So the answer is $\boxed{72}$."): one \boxed number, prose without digits or commands around it
_GOLD_BOX = re.compile(r"[A-Za-z ,.:;!?'$]*\\boxed\{((?:[^{}]|\{[^{}]*\})*)\}[A-Za-z ,.:;!?'$]*\Z")
MAX_ANSWER_CHARS = 2_000  # a located answer longer than this is wrong without asking math-verify
CHUNK = 256  # most items written to a child at once (their results always fit the pipe: no deadlock)
MIN_CHUNK = 8  # fewer items than this per child are not worth a second child
STARTUP_S = 30.0  # a fresh child's imports (sympy), before it says it is ready
_WORKER = Path(__file__).with_name("_verify_worker.py")
_DELIMITED = re.compile(r"\$|\\\(|\\\[|\\boxed|\\fbox")
_TEXT_ARG = re.compile(r"\\(?:text|textbf|mathrm|mbox|operatorname)\s*\{[^{}]*\}")
_COMMAND = re.compile(r"\\[A-Za-z]+")
_MATH_WORDS = re.compile(r"sqrt|pi|sin|cos|tan|log|ln|exp|infty|inf|deg", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z]{2,}")
_MATH_CHARS = re.compile(r"[\w\s\\{}^_+\-*/=().,\[\]|<>!:;'%&~]*")


def math_form(text: str) -> str:
    """``text`` as math-verify should read it: LaTeX and bare expressions go between ``$...$``; text that already
    has delimiters (``$``, ``\\(``, ``\\[``, ``\\boxed``) or reads as prose (words outside ``\\text{}``, or characters
    that are not math, like ``####``) is left as is.
    """
    if _DELIMITED.search(text) or is_prose(text):
        return text
    return f"${text}$"


def is_prose(text: str) -> bool:
    """``text`` has no math delimiters and reads as prose: words outside ``\\text{}``, or characters that are not
    math (``####``)."""
    if _DELIMITED.search(text):
        return False
    bare = _MATH_WORDS.sub(" ", _COMMAND.sub(" ", _TEXT_ARG.sub(" ", text)))
    return bool(_WORD.search(bare)) or not _MATH_CHARS.fullmatch(text)


def number(text: str, gold: bool = False) -> tuple[Fraction, bool] | None:
    """The exact value of ``text`` and whether it is a decimal, when it is a plain number as math-verify reads it
    (``72``, ``-0.25``, ``$\\boxed{\\frac{7}{12}}$``; a ``gold`` may be one boxed number in digit-free prose)."""
    text = text.strip()
    box = _GOLD_BOX.match(text) if gold else None
    text = box[1].strip() if box else text
    for _ in range(3):
        wrapped = _WRAPPED.fullmatch(text)
        text = (wrapped[1] if wrapped[1] is not None else wrapped[2]) if wrapped else text
    match = _NUMBER.fullmatch(text)
    if match is None or (match[3] and len(match[2]) > 9):  # at most 15 digits: exact in a sympy Float
        return None
    sign, whole, decimals, num, den = match.groups()
    value = Fraction(int(num), int(den)) if num else Fraction(f"{whole}.{decimals or 0}")
    return (-value if sign else value), decimals is not None


@functools.lru_cache(maxsize=4096)
def _gold_number(gold: str) -> tuple[Fraction, bool] | None:
    return number(gold, gold=True) if len(gold) < 2_000 else None


def same_number(gold: tuple[Fraction, bool], answer: tuple[Fraction, bool]) -> float | None:
    """math-verify's verdict on two plain numbers where it is certain: exact values compare exactly, a decimal
    (a sympy Float) to 6 places, so values 1e-5 apart differ; None: ask math-verify (1/3 and 0.333333 are equal)."""
    if gold[0] == answer[0]:
        return 1.0
    return 0.0 if not (gold[1] or answer[1]) or abs(gold[0] - answer[0]) > 1e-5 else None


def _request(gold: str, answer: str) -> tuple[str, str, bool]:
    """What a worker is sent: both in math form, and whether the answer is one LaTeX expression (see the worker)."""
    form = math_form(answer)
    return math_form(gold), form, form != answer or answer.startswith("\\boxed{")


class _Child:
    """One ``_verify_worker.py`` process, its pipes and its own read buffer (select-safe)."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.buf = b""
        self.fresh = True

    def _start(self) -> None:
        self.buf = b""
        self.fresh = True
        self.proc = subprocess.Popen(
            # -I: isolated mode, so a math_verify.py (or sympy.py) in the working directory cannot hijack the child
            [sys.executable, "-I", str(_WORKER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def _readline(self, timeout: float) -> bytes | None:
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
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

    def _ready(self) -> bool:
        """Wait up to ``STARTUP_S`` for a fresh child's imports (it says ``"ready"``); a hostile first item used to
        get that allowance too, so each one a timeout restarted the child for cost ``timeout`` + 30 s."""
        self.fresh = self._readline(STARTUP_S) != b'"ready"'
        return not self.fresh

    def run(self, items: list[tuple[str, str, bool]], timeout: float) -> tuple[list[float | None], int]:
        """Pipeline ``items`` through the child; each result must arrive within ``timeout`` of the previous one."""
        results: list[float | None] = []
        timeouts = 0
        pending = list(items)
        while pending:
            chunk = pending[:CHUNK]
            if self.proc is None or self.proc.poll() is not None:
                self._start()
            if self.fresh and not self._ready():  # its imports are bounded apart: an item gets only its timeout
                self.kill()
                timeouts += 1
                results.append(0.0)
                pending = pending[1:]
                continue
            try:
                self.proc.stdin.write(b"".join(json.dumps(item).encode() + b"\n" for item in chunk))
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError):
                self.kill()
                results.append(0.0)
                pending = pending[1:]
                continue
            for i, (_, answer, _) in enumerate(chunk):
                line = self._readline(timeout)
                if line is None:
                    timeouts += 1
                    logger.warning(
                        "math-verify exceeded %.1f s on an answer of %d chars; scored 0.0", timeout, len(answer)
                    )
                    self.kill()  # the rest of the chunk is sent again to a fresh child,
                    self._start()  # started now, so its imports overlap with what the caller does next
                    results.append(0.0)
                    pending = pending[i + 1 :]
                    break
                results.append(json.loads(line))
            else:
                pending = pending[len(chunk) :]
        return results, timeouts


class _Pool:
    """Children shared by every verifier in the process; a caller holds one child at a time (no deadlock)."""

    def __init__(self) -> None:
        self.children: list[_Child] = []
        self.idle: queue.LifoQueue[_Child] = queue.LifoQueue()  # the child used last: its caches are warm
        self.lock = threading.Lock()
        self.executor: ThreadPoolExecutor | None = None
        self.executor_size = 0

    def grow(self, n: int) -> None:
        with self.lock:
            while len(self.children) < n:
                child = _Child()
                self.children.append(child)
                self.idle.put(child)
            if self.executor_size < n:
                if self.executor is not None:
                    self.executor.shutdown(wait=False)  # running calls finish on it; new ones use the larger one
                self.executor = ThreadPoolExecutor(max_workers=n, thread_name_prefix="math-verify")
                self.executor_size = n

    def start(self, n: int) -> None:
        """Start ``n`` children now, without waiting for their imports (they overlap with the caller's work)."""
        self.grow(n)
        with self.lock:
            for child in self.children:
                if child.proc is None:
                    child._start()

    def close(self) -> None:
        for child in list(self.children):
            child.kill()

    def cpu_seconds(self) -> float:
        """CPU time used so far by the live workers (Linux ``/proc``; 0.0 elsewhere), for benchmarks."""
        total = 0
        for child in list(self.children):
            try:
                fields = Path(f"/proc/{child.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])  # utime + stime, in clock ticks
            except (AttributeError, OSError, IndexError, ValueError):
                continue
        return total / os.sysconf("SC_CLK_TCK")

    def run(self, items: list[tuple[str, str, bool]], timeout: float, workers: int) -> tuple[list[float | None], int]:
        self.grow(workers)
        size = min(CHUNK, max(MIN_CHUNK, math.ceil(len(items) / (2 * workers))))
        chunks = [(start, items[start : start + size]) for start in range(0, len(items), size)]
        results: list[float | None] = [None] * len(items)
        timeouts = 0
        todo = iter(chunks)
        todo_lock = threading.Lock()

        def drain() -> int:
            child = self.idle.get()
            lost = 0
            try:
                while True:
                    with todo_lock:
                        nxt = next(todo, None)
                    if nxt is None:
                        return lost
                    start, chunk = nxt
                    out, t = child.run(chunk, timeout)
                    results[start : start + len(chunk)] = out
                    lost += t
            finally:
                self.idle.put(child)

        tasks = min(workers, len(chunks))
        if tasks <= 1:
            timeouts = drain()
        else:
            for future in [self.executor.submit(drain) for _ in range(tasks)]:
                timeouts += future.result()
        return results, timeouts


_POOL = _Pool()
atexit.register(_POOL.close)


def default_workers() -> int:
    """Worker processes per machine process: the usable cores, at most 4."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return max(1, min(4, cores))


class MathVerifier:
    """math-verify ``verify(parse(gold), parse(answer))`` with a hard deadline per item, usable from any thread.

    Results are cached per (gold, answer) pair, and plain integer pairs are compared in-process (identical results,
    no round trip). ``workers`` bounds the child processes (default: usable cores, at most 4).
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

    def clear_cache(self) -> None:
        """Forget cached scores (the child processes keep their parsed golds)."""
        with self._lock:
            self._cache.clear()

    def start(self) -> None:
        """Start the worker processes in the background, so that the first call does not wait for their imports."""
        _POOL.start(self.workers)

    def close(self) -> None:
        """Stop the worker processes (they restart on the next call)."""
        _POOL.close()

    def score(self, pairs: list[tuple[str, str]]) -> list[float | None]:
        """Scores for ``(gold, answer)`` pairs: 1.0 equivalent, 0.0 not, ``None`` when the gold cannot be parsed."""
        out: list[float | None] = [None] * len(pairs)
        ask: dict[tuple[str, str], list[int]] = {}
        with self._lock:
            for i, (gold, answer) in enumerate(pairs):
                key = (gold, answer)
                if key in self._cache:
                    out[i] = self._cache[key]
                    continue
                gold_value = _gold_number(gold)
                answer_value = number(answer) if gold_value and len(answer) < 200 else None
                verdict = same_number(gold_value, answer_value) if answer_value else None
                if verdict is not None:
                    out[i] = self._remember(key, verdict)
                elif len(answer) > MAX_ANSWER_CHARS:
                    out[i] = self._remember(key, 0.0)
                else:
                    ask.setdefault(key, []).append(i)
        if ask:
            keys = list(ask)
            results, timeouts = _POOL.run([_request(g, a) for g, a in keys], self.timeout, self.workers)
            with self._lock:
                self.timeouts += timeouts
                for key, result in zip(keys, results):
                    self._remember(key, result)
                    for i in ask[key]:
                        out[i] = result
        return out

    def _remember(self, key: tuple[str, str], result: float | None) -> float | None:
        if len(self._cache) >= self.cache_size:
            self._cache.clear()
        self._cache[key] = result
        return result


__all__ = ["MAX_ANSWER_CHARS", "MathVerifier", "default_workers", "is_prose", "math_form"]
