"""The control rewards of the demo tests: the ``countdown`` (or ``gsm8k``) scores of a batch, shuffled across its
completions.

Same scores and the same share of correct answers as the real reward, but no longer tied to what each completion
says: a GRPO run rewarded by it must not get better at the task (``tests/e2e/test_demo_learns.py``).
"""

from __future__ import annotations

import random

from grpo_trl.rewards.countdown import countdown
from grpo_trl.rewards.math import gsm8k

_rng = random.Random(0)


def shuffled_countdown(completions: list, nums: list, target: list, **kwargs) -> list[float]:
    scores = countdown(completions, nums=nums, target=target)
    _rng.shuffle(scores)
    return scores


def shuffled_gsm8k(completions: list, solution: list, **kwargs) -> list[float]:
    scores = gsm8k(completions, solution=solution)
    _rng.shuffle(scores)
    return scores
