"""An online sampler that spends fewer generations on prompts whose groups taught nothing (``data.sampler``).

A group whose completions all get the same reward has zero advantage. After such a group, the prompt's sampling
weight drops to ``zero_variance_weight`` for ``cooldown_epochs`` epochs, then returns to 1 (so a prompt the model
has since learned, or forgotten, is tried again); a group with variance restores it at once::

    data:
      builder: countdown
      sampler: {zero_variance_weight: 0.1, cooldown_epochs: 2}

How it sits on TRL: :class:`ZeroVarianceSampler` runs TRL's own ``RepeatSampler`` over each epoch's order (same
groups, same repeats for ``num_iterations`` and ``steps_per_generation``); only the order of prompts changes.
With every weight 1 an epoch is TRL's own shuffled permutation; otherwise each prompt appears about
``N * w / sum(w)`` times (systematic sampling: the epoch keeps its length, low-weight prompts appear rarely, the
others sometimes twice). The outcome of each group is read after each generation by
:mod:`grpo_trl.data.dynamic_sampling` from the trainer's gathered per-completion advantages (the same on every process,
so all processes keep the same weights); that read, and installing the sampler, are the two TRL internals used, both
in :mod:`grpo_trl.trl_adapter`. The state is saved in every checkpoint (``zero_variance_sampler.json``) and restored
on ``--resume``, so a resumed epoch replays the same order.

Example:
    >>> from datasets import Dataset
    >>> prompts = Dataset.from_dict({"prompt": ["a", "b", "c", "d"]})
    >>> sampler = ZeroVarianceSampler(prompts, mini_repeat_count=2, batch_size=2, seed=0)
    >>> sorted(set(sampler)) == [0, 1, 2, 3]          # epoch 1: every prompt, as TRL would
    True
    >>> sampler.observe(["a", "a", "b", "b"], [0.0, 0.0, 1.0, -1.0], group_size=2)  # "a" taught nothing
    >>> [round(w, 1) for w in sampler.weights(sampler.history, sampler.epoch + 1)]
    [0.1, 1.0, 1.0, 1.0]
"""

from __future__ import annotations

import math
from typing import Any

from grpo_trl.data.pass_rate import prompt_hash
from grpo_trl.errors import Problem

KEYS = {"zero_variance_weight": 0.1, "cooldown_epochs": 2}


def sampler_problems(option: Any) -> list[Problem]:
    """Problems in a ``data.sampler`` option (no file named).

    >>> [str(p) for p in sampler_problems({"zero_variance_weight": 0})]
    ['data.sampler.zero_variance_weight: must be a number in (0, 1], got 0']
    """
    if option is None:
        return []
    if not isinstance(option, dict):
        return [Problem("", "data.sampler", "must be a mapping like {zero_variance_weight: 0.1, cooldown_epochs: 2}")]
    known = ", ".join(sorted(KEYS))
    problems = [Problem("", f"data.sampler.{k}", f"unknown option; options: {known}") for k in option if k not in KEYS]
    w = option.get("zero_variance_weight", KEYS["zero_variance_weight"])
    if isinstance(w, bool) or not isinstance(w, int | float) or not (0 < w <= 1):
        problems.append(Problem("", "data.sampler.zero_variance_weight", f"must be a number in (0, 1], got {w!r}"))
    c = option.get("cooldown_epochs", KEYS["cooldown_epochs"])
    if isinstance(c, bool) or not isinstance(c, int) or c < 1:
        problems.append(Problem("", "data.sampler.cooldown_epochs", f"must be an integer >= 1, got {c!r}"))
    return problems


def systematic_counts(weights: list[float], total: int, u: float) -> list[int]:
    """How often each index appears among ``total`` draws proportional to ``weights`` (systematic sampling with
    offset ``u`` in [0, 1)): every count is the floor or the ceiling of its expectation, and they sum to ``total``.

    >>> systematic_counts([1, 1, 1, 1], 4, 0.5), systematic_counts([1, 0.1, 1, 0.1], 4, 0.0)
    ([1, 1, 1, 1], [2, 0, 2, 0])
    """
    scale = total / math.fsum(weights)
    counts, cumulative, nxt = [], 0.0, u
    for w in weights:
        cumulative += w * scale
        c = 0
        while nxt < cumulative - 1e-9 and sum(counts) + c < total:
            c += 1
            nxt += 1.0
        counts.append(c)
    counts[-1] += total - sum(counts)  # float rounding at the very end
    return counts


class ZeroVarianceSampler:
    """TRL's ``RepeatSampler`` over each epoch's prompt order, drawn from per-prompt weights (see the module doc).
    Same arguments as ``RepeatSampler``, plus the two of ``data.sampler``."""

    def __init__(
        self,
        data_source: Any,
        mini_repeat_count: int,
        batch_size: int = 1,
        repeat_count: int = 1,
        shuffle: bool = True,
        seed: int | None = None,
        *,
        zero_variance_weight: float = 0.1,
        cooldown_epochs: int = 2,
    ):
        self.data_source = data_source
        self.mini_repeat_count = mini_repeat_count
        self.batch_size = batch_size
        self.repeat_count = repeat_count
        self.shuffle = shuffle
        self.seed = seed
        self.num_samples = len(data_source)
        self.zero_variance_weight = float(zero_variance_weight)
        self.cooldown_epochs = int(cooldown_epochs)
        self.epoch = 0  # epochs started
        self.history: dict[str, int] = {}  # prompt hash -> epoch of its last group, kept only if zero-variance
        self.epoch_start_history: dict[str, int] = {}  # the history the current epoch was drawn from
        self._replay = False
        self._hashes: list[str] | None = None
        self.observed_groups = 0
        self.zero_variance_groups = 0

    @property
    def hashes(self) -> list[str]:
        if self._hashes is None:
            self._hashes = [prompt_hash(p) for p in self.data_source["prompt"]]
        return self._hashes

    def weights(self, history: dict[str, int], epoch: int) -> list[float]:
        low = self.zero_variance_weight
        return [low if epoch - history.get(h, -(10**9)) <= self.cooldown_epochs else 1.0 for h in self.hashes]

    def epoch_order(self) -> list[int]:
        """The dataset indices of the next epoch, in order (length ``N`` as in TRL)."""
        import torch

        if not self._replay:
            self.epoch_start_history = dict(self.history)
            self.epoch += 1
        self._replay = False
        generator = torch.Generator().manual_seed((self.seed or 0) + self.epoch - 1)
        if not self.shuffle:
            return list(range(self.num_samples))
        weights = self.weights(self.epoch_start_history, self.epoch)
        if all(w == 1.0 for w in weights):
            return torch.randperm(self.num_samples, generator=generator).tolist()
        u = torch.rand(1, generator=generator).item()
        counts = systematic_counts(weights, self.num_samples, u)
        pool = [i for i, c in enumerate(counts) for _ in range(c)]
        return [pool[j] for j in torch.randperm(len(pool), generator=generator).tolist()]

    def __len__(self) -> int:
        return (self.num_samples // self.batch_size) * self.batch_size * self.mini_repeat_count * self.repeat_count

    def __iter__(self):
        from grpo_trl.trl_adapter import repeat_sampler

        order = self.epoch_order()
        inner = repeat_sampler(order, self.mini_repeat_count, self.batch_size, self.repeat_count)
        for position in inner:
            yield order[position]

    def observe(self, prompts: list, advantages: list[float], group_size: int) -> None:
        """Record each group's outcome: zero-variance (every advantage ~0) lowers its prompt's weight."""
        for start in range(0, len(advantages) - group_size + 1, group_size):
            key = prompt_hash(prompts[start])
            self.observed_groups += 1
            if all(abs(a) < 1e-6 for a in advantages[start : start + group_size]):
                self.zero_variance_groups += 1
                self.history[key] = self.epoch
            else:
                self.history.pop(key, None)

    def state(self) -> dict:
        return {
            "epoch": self.epoch,
            "history": self.history,
            "epoch_start_history": self.epoch_start_history,
            "observed_groups": self.observed_groups,
            "zero_variance_groups": self.zero_variance_groups,
        }

    def load_state(self, state: dict, replay: bool = True) -> None:
        """Continue from a checkpoint. ``replay``: the checkpoint fell inside an epoch, which the trainer restarts
        and fast-forwards, so the next epoch drawn is that one again, in the same order."""
        self.epoch = int(state["epoch"])
        self.epoch_start_history = dict(state["epoch_start_history"])
        self.history = dict(state["history"])
        self.observed_groups = int(state.get("observed_groups", 0))
        self.zero_variance_groups = int(state.get("zero_variance_groups", 0))
        self._replay = replay and self.epoch > 0
