"""Shaping rewards from the long-CoT literature: ``cosine``, ``repetition_penalty``, ``soft_overlong`` (TRL's own),
``length``. Lengths are ``completion_ids`` token counts, else whitespace-separated words."""

from __future__ import annotations

import math
from collections.abc import Callable

from grpo_trl.rewards.math import Accuracy
from grpo_trl.rewards.registry import register_reward, text_of


def _ids(completions: list, completion_ids: list | None) -> list[list]:
    """Token ids per completion, else its whitespace-separated words."""
    return list(completion_ids) if completion_ids is not None else [t.split() for t in text_of(completions)]


def _judged(accuracy: Accuracy, completions: list, solution: list, completion_ids: list | None) -> list:
    """``(correct, length)`` per completion, ``correct`` None where ``accuracy`` scores None."""
    correct = [None if s is None else s == 1.0 for s in accuracy(completions, solution)]
    return list(zip(correct, map(len, _ids(completions, completion_ids)), strict=True))


@register_reward("cosine", uses_trainer={"max_len": "max_completion_length"})
class Cosine:
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
        self.accuracy = Accuracy(timeout=timeout, require_answer_tag=require_answer_tag, answer_tag=answer_tag)
        self.max_len = max_len
        self.wrong = (max_value_wrong, min_value_wrong)
        self.correct = (min_value_correct, max_value_correct)

    def __call__(self, completions: list, solution: list, completion_ids: list | None = None, **kwargs) -> list:
        out = []
        for ok, n in _judged(self.accuracy, completions, solution, completion_ids):
            lo, hi = self.correct if ok else self.wrong
            progress = min(n, self.max_len) / self.max_len
            out.append(None if ok is None else lo + 0.5 * (hi - lo) * (1.0 + math.cos(progress * math.pi)))
        return out


@register_reward("length")
class Length:
    """Kimi 1.5 length reward: within the batch, ``lam = 0.5 - (len - min) / (max - min)``; right gets ``lam``,
    wrong gets ``min(0, lam)``; 0.0 for everyone when all lengths are equal."""

    def __init__(self, timeout: float = 5.0, require_answer_tag: bool = True, answer_tag: str = "answer"):
        self.accuracy = Accuracy(timeout=timeout, require_answer_tag=require_answer_tag, answer_tag=answer_tag)

    def __call__(self, completions: list, solution: list, completion_ids: list | None = None, **kwargs) -> list:
        judged = _judged(self.accuracy, completions, solution, completion_ids)
        lo, hi = min((n for _, n in judged), default=0), max((n for _, n in judged), default=0)
        lams = [0.0 if hi == lo else 0.5 - (n - lo) / (hi - lo) for _, n in judged]
        return [None if ok is None else (lam if ok else min(0.0, lam)) for (ok, _), lam in zip(judged, lams)]


def _on_ids(impl: Callable) -> Callable:
    """TRL's reward ``impl`` (it reads ``completion_ids``) given words when the trainer passes no ids."""

    def reward(completions: list, completion_ids: list | None = None, **kwargs) -> list[float]:
        return impl(completion_ids=_ids(completions, completion_ids))

    return reward


@register_reward("repetition_penalty", factory=True)
def repetition_penalty(ngram_size: int = 3, max_penalty: float = -1.0) -> Callable:
    """Penalty for repeated n-grams, ``max_penalty`` x fraction repeated (Demystifying Long CoT, App. C.2; TRL's)."""
    from trl.rewards import get_repetition_penalty_reward

    return _on_ids(get_repetition_penalty_reward(ngram_size=ngram_size, max_penalty=max_penalty))


@register_reward("soft_overlong", factory=True, uses_trainer={"max_completion_len": "max_completion_length"})
def soft_overlong(max_completion_len: int, soft_punish_cache: int = 0) -> Callable:
    """DAPO overlong punishment (Eq. 13; TRL's): 0 up to ``max_completion_len - soft_punish_cache``, then a linear
    ramp to -1. ``max_completion_len`` defaults to the recipe's ``trainer.max_completion_length``."""
    from trl.rewards import get_soft_overlong_punishment

    if not 0 <= soft_punish_cache <= max_completion_len:  # the ramp starts at max_completion_len - soft_punish_cache
        raise ValueError(
            f"soft_punish_cache must be 0 to max_completion_len ({max_completion_len}), not {soft_punish_cache}"
        )
    return _on_ids(get_soft_overlong_punishment(max_completion_len, soft_punish_cache))
