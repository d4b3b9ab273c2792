"""Shaping rewards from the long-CoT literature: ``cosine``, ``repetition_penalty``, ``soft_overlong`` (TRL's own),
``length``. Lengths are ``completion_ids`` token counts, else whitespace-separated words."""

from __future__ import annotations

import math

from grpo_trl.rewards.math import Accuracy
from grpo_trl.rewards.registry import register_reward, text_of


def _ids(completions: list, completion_ids: list | None) -> list[list]:
    """Token ids per completion, else its whitespace-separated words."""
    return list(completion_ids) if completion_ids is not None else [t.split() for t in text_of(completions)]


def _lengths(completions: list, completion_ids: list | None) -> list[int]:
    return [len(ids) for ids in _ids(completions, completion_ids)]


class _Correctness:
    """Correct or not, as ``accuracy`` judges it (for the length-aware rewards)."""

    def __init__(self, timeout: float, require_answer_tag: bool = True, answer_tag: str = "answer"):
        self.accuracy = Accuracy(timeout=timeout, require_answer_tag=require_answer_tag, answer_tag=answer_tag)

    def __call__(self, completions: list, solution: list) -> list[bool | None]:
        return [None if s is None else s == 1.0 for s in self.accuracy(completions, solution)]


@register_reward("cosine", uses_trainer={"max_len": "max_completion_length"})
class Cosine(_Correctness):
    """Correctness scaled by length on a cosine schedule (Demystifying Long CoT, App. C.1; TRL's formula)."""

    def __init__(
        self,
        max_len: int,
        min_value_wrong: float = -1.0,
        max_value_wrong: float = -0.5,
        min_value_correct: float = 0.5,
        max_value_correct: float = 1.0,
        timeout: float = 5.0,
        require_answer_tag: bool = True,
        answer_tag: str = "answer",
    ):
        super().__init__(timeout, require_answer_tag, answer_tag)
        self.max_len = max_len
        self.wrong = (max_value_wrong, min_value_wrong)
        self.correct = (min_value_correct, max_value_correct)

    def __call__(self, completions: list, solution: list, completion_ids: list | None = None, **kwargs) -> list:
        out = []
        for ok, n in zip(super().__call__(completions, solution), _lengths(completions, completion_ids), strict=True):
            if ok is None:
                out.append(None)
                continue
            lo, hi = self.correct if ok else self.wrong
            progress = min(n, self.max_len) / self.max_len
            out.append(lo + 0.5 * (hi - lo) * (1.0 + math.cos(progress * math.pi)))
        return out


@register_reward("length")
class Length(_Correctness):
    """Kimi 1.5 length reward: within the batch, ``lam = 0.5 - (len - min) / (max - min)``; right gets ``lam``,
    wrong gets ``min(0, lam)``; 0.0 for everyone when all lengths are equal."""

    def __init__(self, timeout: float = 5.0, require_answer_tag: bool = True, answer_tag: str = "answer"):
        super().__init__(timeout, require_answer_tag, answer_tag)

    def __call__(self, completions: list, solution: list, completion_ids: list | None = None, **kwargs) -> list:
        lengths = _lengths(completions, completion_ids)
        correct = super().__call__(completions, solution)
        lo, hi = min(lengths, default=0), max(lengths, default=0)
        if hi == lo:
            return [None if ok is None else 0.0 for ok in correct]
        out = []
        for ok, n in zip(correct, lengths, strict=True):
            lam = 0.5 - (n - lo) / (hi - lo)
            out.append(None if ok is None else (lam if ok else min(0.0, lam)))
        return out


@register_reward("repetition_penalty")
class RepetitionPenalty:
    """Penalty for repeated n-grams, ``max_penalty`` x fraction repeated (Demystifying Long CoT, App. C.2; TRL's)."""

    def __init__(self, ngram_size: int = 3, max_penalty: float = -1.0):
        from trl.rewards import get_repetition_penalty_reward

        self.impl = get_repetition_penalty_reward(ngram_size=ngram_size, max_penalty=max_penalty)

    def __call__(self, completions: list, completion_ids: list | None = None, **kwargs) -> list[float]:
        return self.impl(completion_ids=_ids(completions, completion_ids))


@register_reward("soft_overlong", uses_trainer={"max_completion_len": "max_completion_length"})
class SoftOverlong:
    """DAPO overlong punishment (Eq. 13; TRL's): 0 up to ``max_completion_len - soft_punish_cache``, then a linear
    ramp to -1. ``max_completion_len`` defaults to the recipe's ``trainer.max_completion_length``."""

    def __init__(self, max_completion_len: int, soft_punish_cache: int = 0):
        from trl.rewards import get_soft_overlong_punishment

        self.impl = get_soft_overlong_punishment(max_completion_len, soft_punish_cache)

    def __call__(self, completions: list, completion_ids: list | None = None, **kwargs) -> list[float]:
        return self.impl(completion_ids=_ids(completions, completion_ids))
