"""Correctness rewards for math answers: ``accuracy`` (math-verify) and ``gsm8k`` (exact / numeric match).

Example:
    >>> gsm8k(["<answer>72</answer>", "<answer>72.0</answer>", "<answer>71</answer>"], solution=["72"] * 3)
    [2.0, 1.5, 0.0]
"""

from __future__ import annotations

import json
import logging
import os
import re
import select
import subprocess
import sys
import threading
import time

from grpo_trl.rewards.registry import register_reward, text_of
from grpo_trl.rewards.text import extract_answer, extract_tag, parse_number

logger = logging.getLogger(__name__)

# Plain integers (no leading zeros) compare exactly like math-verify compares them; tested against math-verify.
_PLAIN_INT = re.compile(r"-?(?:0|[1-9][0-9]{0,14})\Z")
MAX_ANSWER_CHARS = 2_000  # answers longer than this are wrong without asking math-verify
CHUNK = 256  # items written to the child at once (their results always fit the pipe: no deadlock)


class MathVerifier:
    """math-verify ``verify(parse(gold), parse(answer))`` with a hard deadline per item, usable from any thread.

    Work runs in a child process (started on first need) that is killed and restarted when an item overruns
    ``timeout`` seconds; that item scores 0.0, like a math-verify timeout. Results are cached per (gold, answer) pair,
    and plain integer pairs are compared in-process (identical results, no round trip).
    """

    def __init__(self, timeout: float = 5.0, cache_size: int = 100_000):
        self.timeout = timeout
        self.cache_size = cache_size
        self._cache: dict[tuple[str, str], float | None] = {}
        self._proc: subprocess.Popen | None = None
        self._buf = b""
        self._lock = threading.Lock()
        self.timeouts = 0

    def __getstate__(self) -> dict:  # picklable: the child process and lock are not carried over
        return {"timeout": self.timeout, "cache_size": self.cache_size}

    def __setstate__(self, state: dict) -> None:
        self.__init__(**state)

    def clear_cache(self) -> None:
        """Forget cached scores (the child process keeps its parsed golds)."""
        with self._lock:
            self._cache.clear()

    def _start(self) -> subprocess.Popen:
        self._buf = b""
        return subprocess.Popen(
            [sys.executable, "-m", "grpo_trl.rewards._verify_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )

    def _kill(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None

    def close(self) -> None:
        with self._lock:
            self._kill()

    def __del__(self) -> None:
        try:
            self._kill()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def _readline(self, timeout: float) -> bytes | None:
        """One result line from the child within ``timeout`` seconds, else None (own buffer: select-safe)."""
        deadline = time.monotonic() + timeout
        fd = self._proc.stdout.fileno()
        while b"\n" not in self._buf:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:  # the child died
                return None
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line

    def _ask_many(self, items: list[tuple[str, str]]) -> list[float | None]:
        """Pipeline ``items`` through the child in chunks; each result must arrive within ``timeout`` of the last."""
        results: list[float | None] = []
        pending = list(items)
        while pending:
            chunk = pending[:CHUNK]
            startup = 0.0
            if self._proc is None or self._proc.poll() is not None:
                # the first call pays for the child's start-up (importing sympy): allowed on top of the item budget
                self._proc, startup = self._start(), 30.0
            try:
                self._proc.stdin.write(b"".join(json.dumps(item).encode() + b"\n" for item in chunk))
                self._proc.stdin.flush()
            except (BrokenPipeError, OSError):
                self._kill()
                results.append(0.0)
                pending = pending[1:]
                continue
            for i, (_, answer) in enumerate(chunk):
                line = self._readline(self.timeout + (startup if i == 0 else 0.0))
                if line is None:
                    self.timeouts += 1
                    logger.warning(
                        "math-verify exceeded %.1f s on an answer of %d chars; scored 0.0", self.timeout, len(answer)
                    )
                    self._kill()  # the rest of the chunk is sent again to a fresh child
                    results.append(0.0)
                    pending = pending[i + 1 :]
                    break
                results.append(json.loads(line))
            else:
                pending = pending[len(chunk) :]
        return results

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
                g, a = gold.strip(), answer.strip()
                if _PLAIN_INT.match(g) and _PLAIN_INT.match(a):
                    out[i] = self._remember(key, 1.0 if int(g) == int(a) else 0.0)
                elif len(answer) > MAX_ANSWER_CHARS:
                    out[i] = self._remember(key, 0.0)
                else:
                    ask.setdefault(key, []).append(i)
            if ask:
                for key, result in zip(ask, self._ask_many(list(ask))):
                    self._remember(key, result)
                    for i in ask[key]:
                        out[i] = result
        return out

    def _remember(self, key: tuple[str, str], result: float | None) -> float | None:
        if len(self._cache) >= self.cache_size:
            self._cache.clear()
        self._cache[key] = result
        return result


@register_reward("accuracy")
class Accuracy:
    """1.0 when the answer is mathematically equal to ``solution`` (math-verify), 0.0 if not, None if gold unparseable.

    The answer is the last ``<answer>`` block (``answer_tag``); with ``require_answer_tag=False`` a completion without
    one is handed to math-verify whole. ``timeout`` bounds each item in seconds, from any thread.
    """

    def __init__(self, timeout: float = 5.0, require_answer_tag: bool = True, answer_tag: str = "answer"):
        self.verifier = MathVerifier(timeout=timeout)
        self.require_answer_tag = require_answer_tag
        self.answer_tag = answer_tag

    def __call__(self, completions: list, solution: list, **kwargs) -> list[float | None]:
        texts = text_of(completions)
        pairs, rows = [], []
        out: list[float | None] = [0.0] * len(texts)
        for i, (text, gold) in enumerate(zip(texts, solution, strict=True)):
            answer = extract_tag(text, self.answer_tag)
            if answer is None and not self.require_answer_tag:
                answer = text
            if answer is None:
                continue
            pairs.append((str(gold), answer))
            rows.append(i)
        for i, score in zip(rows, self.verifier.score(pairs)):
            out[i] = score
        # An unparseable gold makes the row not applicable even when the completion has no answer.
        if len(rows) < len(texts):
            scored = set(rows)
            missing = [i for i in range(len(texts)) if i not in scored]
            gold_ok = self.verifier.score([(str(solution[i]), str(solution[i])) for i in missing])
            for i, ok in zip(missing, gold_ok):
                out[i] = None if ok is None else 0.0
        return out


def _norm(answer: str) -> str:
    return answer.strip().rstrip(".").strip()


@register_reward("gsm8k")
def gsm8k(
    completions: list, solution: list, exact: float = 2.0, numeric: float = 1.5, answer_tag: str = "answer", **kwargs
) -> list[float]:
    """``exact`` for an exact string match with ``solution``, ``numeric`` for numeric equality, else 0.0.

    The answer is the last ``<answer_tag>``, else ``\\boxed{}``, else ``####``, else the last number. Numeric
    equality ignores ``$``, thousands commas, units and trailing ``.0`` ("$1,234.00 dollars" equals "1234").
    """
    out = []
    for text, gold in zip(text_of(completions), solution, strict=True):
        answer = extract_answer(text, answer_tag)
        gold = str(gold)
        if answer is None:
            out.append(0.0)
        elif _norm(answer) == _norm(gold):
            out.append(exact)
        else:
            a, g = parse_number(answer), parse_number(gold)
            out.append(numeric if a is not None and g is not None and abs(a - g) < 1e-9 * max(1.0, abs(g)) else 0.0)
    return out


__all__ = ["Accuracy", "MathVerifier", "gsm8k"]
