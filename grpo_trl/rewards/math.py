"""Correctness rewards for math answers: ``accuracy`` (math-verify) and ``gsm8k`` (exact / numeric match).

Example:
    >>> gsm8k(["<answer>72</answer>", "<answer>72.0</answer>", "<answer>71</answer>"], solution=["72"] * 3)
    [2.0, 1.5, 0.0]
"""

from __future__ import annotations

from grpo_trl.rewards.math_verifier import _PLAIN_INT, MAX_ANSWER_CHARS, MathVerifier, math_form  # noqa: F401
from grpo_trl.rewards.registry import register_reward, text_of
from grpo_trl.rewards.text import extract_answer, extract_boxed, extract_tag, parse_number


def locate_answer(text: str, answer_tag: str = "answer", require_answer_tag: bool = True) -> str | None:
    r"""The span of ``text`` that holds its final answer, found before anything is parsed (linear time).

    The last ``<answer_tag>`` block; with ``require_answer_tag=False`` and no such block, the last ``\boxed{}``
    (as ``\boxed{...}``), else the last ``MAX_ANSWER_CHARS`` characters, where a final answer is written.

    >>> locate_answer("x" * 5000 + r" so \boxed{214}", require_answer_tag=False)
    '\\boxed{214}'
    >>> locate_answer("no tag") is None
    True
    """
    answer = extract_tag(text, answer_tag)
    if answer is not None or require_answer_tag:
        return answer
    boxed = extract_boxed(text)
    if boxed is not None:
        return f"\\boxed{{{boxed}}}"
    return text[-MAX_ANSWER_CHARS:]


@register_reward("accuracy", passes_at=1.0)
class Accuracy:
    """1.0 when the answer is mathematically equal to ``solution`` (math-verify), 0.0 if not, None if gold unparseable.

    The answer is the last ``<answer>`` block (``answer_tag``); with ``require_answer_tag=False`` a completion without
    one is judged by its last ``\\boxed{}``, else by its last 2,000 characters (so "#### 552" and "The answer is 72."
    count, unlike TRL's ``accuracy_reward``). ``timeout`` bounds each item in seconds, from any thread; ``workers``
    bounds the math-verify processes (default: usable cores, at most 4).
    """

    def __init__(
        self,
        timeout: float = 5.0,
        require_answer_tag: bool = True,
        answer_tag: str = "answer",
        workers: int | None = None,
    ):
        self.verifier = MathVerifier(timeout=timeout, workers=workers)
        self.require_answer_tag = require_answer_tag
        self.answer_tag = answer_tag

    def answer_of(self, text: str) -> str | None:
        """The answer span this reward judges in ``text`` (None: no answer, scores 0)."""
        return locate_answer(text, self.answer_tag, self.require_answer_tag)

    def __call__(self, completions: list, solution: list, **kwargs) -> list[float | None]:
        texts = text_of(completions)
        pairs, rows = [], []
        out: list[float | None] = [0.0] * len(texts)
        for i, (text, gold) in enumerate(zip(texts, solution, strict=True)):
            answer = self.answer_of(text)
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


@register_reward("gsm8k", passes_at="numeric")  # a correct number, exact or not
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


__all__ = ["MAX_ANSWER_CHARS", "Accuracy", "MathVerifier", "gsm8k", "locate_answer", "math_form"]
