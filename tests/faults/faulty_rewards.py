"""Deliberately broken rewards for the fault tests (referenced as tests.faults.faulty_rewards:NAME)."""

import math
import time

from grpo_trl.rewards.text import completion_text


def _texts(completions):
    return [completion_text(c) for c in completions]


def raises_sometimes(completions, **kwargs):
    """Raises whenever a batch holds a completion whose text hashes to 0 mod 10 (about 10% of rows)."""
    texts = _texts(completions)
    if any(sum(map(ord, t)) % 10 == 0 for t in texts):
        raise RuntimeError("bad row")
    return [1.0] * len(texts)


def wrong_length(completions, **kwargs):
    return [1.0] * (len(completions) - 1)


def hangs_on_a_row(completions, **kwargs):
    """Never returns when the batch holds a given row (here: the first batch of every run)."""
    if kwargs["trainer_state"].global_step == 0:
        time.sleep(3600)
    return [1.0] * len(completions)


def returns_nan(completions, **kwargs):
    return [math.nan if i % 2 else 1.0 for i in range(len(completions))]
