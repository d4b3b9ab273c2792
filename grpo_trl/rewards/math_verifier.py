"""math-verify with a hard deadline per item: plain numbers decided in-process as math-verify would, the rest in
worker children forked once math-verify is imported (``isolated.Child``, shared, reused); a worker overrunning an
item is killed, the item scores 0.0 and the rest go on in a fresh worker."""

from __future__ import annotations

import atexit
import contextlib
import functools
import logging
import math
import os
import re
import threading
import time
from collections.abc import Iterator
from fractions import Fraction

from grpo_trl.rewards.isolated import Child, ChildFault, RewardTimeout
from grpo_trl.rewards.text import is_prose, math_form  # noqa: F401 - re-exported

logger = logging.getLogger(__name__)

MAX_ANSWER_CHARS = 2_000  # a located answer longer than this is wrong without asking math-verify
MIN_CHUNK = 8  # items per worker: fewer are not worth a second worker
STARTUP_S = 30.0  # a fresh worker's warm-up, bounded apart from its items
# A plain number, as math-verify reads it: an integer, a short decimal (a sympy Float), or \frac{a}{b} (a Rational)
_NUMBER = re.compile(r"(-?)(?:(0|[1-9]\d{0,14})(?:\.(\d{1,6}))?|\\[dt]?frac\{(0|[1-9]\d{0,5})\}\{([1-9]\d{0,5})\})")
_WRAPPED = re.compile(r"\$\s*(.*?)\s*\$|\\boxed\{\s*(.*?)\s*\}", re.DOTALL)
# A worked gold ("So the answer is $\boxed{72}$."): one \boxed number, prose without digits or commands around it
_GOLD_BOX = re.compile(r"[A-Za-z ,.:;!?'$]*\\boxed\{((?:[^{}]|\{[^{}]*\})*)\}[A-Za-z ,.:;!?'$]*\Z")


def number(text: str, gold: bool = False) -> tuple[Fraction, bool] | None:
    """``(exact value, is a decimal)`` of a plain number as math-verify reads it (``72``, ``-0.25``,
    ``$\\boxed{\\frac{7}{12}}$``; a ``gold`` may be one boxed number in digit-free prose), else None."""
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
def gold_number(gold: str) -> tuple[Fraction, bool] | None:
    return number(gold, gold=True) if len(gold) < 2_000 else None


def same_number(gold: tuple[Fraction, bool], answer: tuple[Fraction, bool]) -> float | None:
    """math-verify's verdict on two plain numbers where it is certain (a decimal is a sympy Float: 6 places, so
    values 1e-5 apart differ); None: ask math-verify (1/3 and 0.333333 are equal)."""
    if gold[0] == answer[0]:
        return 1.0
    return 0.0 if not (gold[1] or answer[1]) or abs(gold[0] - answer[0]) > 1e-5 else None


def request(gold: str, answer: str) -> tuple[str, str, bool]:
    """``verdict``'s arguments: both in math form, and whether the answer is one LaTeX expression."""
    form = math_form(answer)
    return math_form(gold), form, form != answer or answer.startswith("\\boxed{")


# One of each common answer form (roots, fractions, intervals, sets, polynomials, prose), compared as in a run
_WARM = [
    ("$1$", "1"), ("$3\\sqrt{2}$", "\\sqrt{18}"), ("$\\frac{5}{8}$", "0.625"), ("$2\\pi$", "\\pi \\cdot 2"),
    ("The answer is $(-\\infty, 2]$.", "[2, \\infty)"), ("$\\{4, 5\\}$", "\\{5,4\\}"), ("$y^2 - 1$", "(y-1)(y+1)"),
]  # fmt: skip


def verdict(gold: str, answer: str, latex: bool) -> float | None:
    """1.0 / 0.0 as math-verify verifies ``answer`` against ``gold`` (parsed once), None when the gold has no value;
    ``latex``: the answer read as TRL's ``accuracy_reward`` does, else with math-verify's default extraction."""
    from math_verify import LatexExtractionConfig, parse, verify

    if not (parsed_gold := _parsed(gold)):
        return None
    # TRL's reading: one LaTeX extraction (its default normalization includes units), the first match
    as_trl = {"extraction_config": [LatexExtractionConfig(boxed_match_priority=0)], "extraction_mode": "first_match"}
    parsed = parse(answer, parsing_timeout=None, **(as_trl if latex else {}))
    return float(verify(parsed_gold, parsed, timeout_seconds=None))


@functools.lru_cache(maxsize=10_000)  # each gold parsed once per worker
def _parsed(gold: str) -> list:
    from math_verify import parse

    return parse(gold, parsing_timeout=None)


def _serve(requests: Iterator[list]) -> Iterator:  # pragma: no cover - runs in a worker child
    """A worker: warm (sympy's first-use work), say so, then one verdict per item it is sent."""
    logging.disable(logging.WARNING)  # math-verify warns that its own timeout is off: the parent has one
    for gold, answer in _WARM:
        verdict(gold, f"\\boxed{{{answer}}}", True)
    yield "ready"
    for items in requests:
        for item in items:
            try:
                yield verdict(*item)
            except Exception:  # noqa: BLE001 - math-verify failing on hostile input is a wrong answer
                yield 0.0


class _Pool:
    """Workers shared by every verifier in the process; a caller takes the idle ones (the one used last first)."""

    def __init__(self) -> None:
        self.idle: list[Child] = []
        self.fresh: set[Child] = set()
        self.size, self.forking, self.freed = 0, threading.Lock(), threading.Condition()

    def _fork(self) -> Child:
        import math_verify  # noqa: F401 - imported once here (the parent never runs it), inherited by every worker

        with self.forking:
            child = Child(_serve, worker=True)
        self.fresh.add(child)
        return child

    def start(self, n: int) -> None:
        """At least ``n`` workers, warm when this returns (they warm up at once, each in its process)."""
        with self.freed:
            grow, self.size = max(0, n - self.size), max(n, self.size)
        children: list[Child] = []
        try:
            while len(children) < grow:
                children.append(self._fork())
            for child in children:
                with contextlib.suppress(RewardTimeout, ChildFault):  # else its first use waits for it again
                    child.next(time.monotonic() + STARTUP_S)
                    self.fresh.discard(child)
        finally:  # a fork that failed leaves no worker counted
            self.give(children, unborn=grow - len(children))

    def take(self, n: int) -> list[Child]:
        with self.freed:
            self.freed.wait_for(lambda: self.idle)
            return [self.idle.pop() for _ in range(min(n, len(self.idle)))]

    def give(self, children: list[Child], unborn: int = 0) -> None:
        with self.freed:
            self.idle.extend(children)
            self.size -= unborn
            self.freed.notify_all()

    def close(self) -> None:
        with self.freed:
            idle, self.idle, self.size = self.idle, [], 0
        list(map(Child.close, idle))

    def run(self, items: list[tuple[str, str, bool]], timeout: float, workers: int) -> tuple[list, int]:
        """``verdict`` of each item, each within ``timeout`` s of the one before it in its worker (a fresh worker's
        warm-up bounded apart); ``(results, items that overran and scored 0.0)``; an overrun worker is replaced."""
        self.start(workers)
        children = self.take(min(workers, math.ceil(len(items) / MIN_CHUNK)))
        size = math.ceil(len(items) / len(children))  # one span per worker
        spans = [(start, min(start + size, len(items))) for start in range(0, len(items), size)]
        results, lost = [0.0] * len(items), 0
        try:
            for child, (start, end) in zip(children, spans):
                child.send(items[start:end])
            for k, (start, end) in enumerate(spans):
                for i in range(start, end):
                    try:
                        if children[k] in self.fresh and children[k].next(time.monotonic() + STARTUP_S):
                            self.fresh.discard(children[k])  # "ready"
                        results[i] = children[k].next(time.monotonic() + timeout)
                    except (RewardTimeout, ChildFault):
                        lost += 1
                        logger.warning("math-verify exceeded %.1f s on an answer; scored 0.0", timeout)
                        children[k].close()
                        self.fresh.discard(children[k])
                        children[k] = self._fork()
                        if i + 1 < end:
                            children[k].send(items[i + 1 : end])
        finally:
            self.give(children)
        return results, lost


_POOL = _Pool()
atexit.register(_POOL.close)
os.register_at_fork(after_in_child=_POOL.__init__)  # a forked process has its own workers, never its parent's


class MathVerifier:
    """math-verify ``verify(parse(gold), parse(answer))`` with a hard deadline per item, from any thread; results
    cached per (gold, answer); ``workers`` bounds the children of one call (default: usable cores, at most 4)."""

    def __init__(self, timeout: float = 5.0, cache_size: int = 100_000, workers: int | None = None):
        self.timeout, self.cache_size = timeout, cache_size
        self.workers = workers or min(4, len(os.sched_getaffinity(0)))
        self._cache: dict[tuple[str, str], float | None] = {}
        self._lock = threading.Lock()
        self.timeouts = 0

    def __reduce__(self) -> tuple:  # picklable: the cache and lock are not carried over
        return MathVerifier, (self.timeout, self.cache_size, self.workers)

    def start(self) -> None:
        """Fork the workers and wait until they are warm, so that the first call does not wait for it."""
        _POOL.start(self.workers)

    def clear_cache(self) -> None:
        self._cache.clear()

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
                    self._remember({key: verdict or 0.0})  # a longer answer is wrong without asking math-verify
                out[i] = self._cache[key]
        if ask:
            results, lost = _POOL.run([request(g, a) for g, a in ask], self.timeout, self.workers)
            with self._lock:
                self.timeouts += lost
                self._remember(dict(zip(ask, results)))
            for rows, result in zip(ask.values(), results):
                for i in rows:
                    out[i] = result
        return out

    def _remember(self, scores: dict) -> None:
        if len(self._cache) + len(scores) > self.cache_size:
            self._cache.clear()
        self._cache.update(scores)
