"""DAPO dynamic sampling (``data.dynamic_sampling``): the pieces that decide, with no trainer in sight.

A group whose completions all get the same total reward has zero advantage: it costs a generation and teaches
nothing. With ``data.dynamic_sampling: {max_resample: N}``, such groups are dropped from the generation batch and
replaced by groups of fresh prompts, generated in up to ``N`` extra rounds, until the batch is full::

    data:
      builder: countdown
      dynamic_sampling: {max_resample: 2}

This module holds the parts that need no trainer: the option's check, which groups have zero variance, which
groups make the batch (:func:`choose_groups`), the order fresh prompts come in (:class:`RefillOrder`) and the
concatenation of batches from different generation calls (:func:`merge_batches`).
:mod:`grpo_trl.data.refill_install` wires them into ``GRPOTrainer``.

Example:
    >>> zero_variance([1.0, 1.0, 0.0, 1.0, float("nan"), 2.0, 2.0, 2.0], group_size=4)
    [False, True]
    >>> choose_groups([[False, True], [True, False]], need=2)   # (round, group): round 0's good group, then round 1's
    [(0, 0), (1, 1)]
"""

from __future__ import annotations

import math
from typing import Any

from grpo_trl.errors import GrpoTrlError, Problem

KEYS = {"max_resample": 2}
FIX = "a mapping like {max_resample: 2} (extra generation rounds per batch, an integer >= 1)"
# tensors aligned with the completion tokens (right-padded) and their padding; the prompt's are left-padded
COMPLETION_PAD = {
    "completion_mask": 0,
    "old_per_token_logps": 0.0,
    "ref_per_token_logps": 0.0,
    "sampling_per_token_logps": 0.0,
    "importance_sampling_ratio": 1.0,
    "tool_mask": 1,
}


JOINED = ("prompt_ids", "prompt_mask", "completion_ids", "advantages")
# the same refusal as merge_batches', before training: data with images makes multimodal batches
IMAGES = "cannot join generation batches of prompts with images (multimodal inputs)"
IMAGES_FIX = "remove data.dynamic_sampling for this model, or use data.sampler"


def dynamic_sampling_problems(option: Any) -> list[Problem]:
    """Problems in a ``data.dynamic_sampling`` option (no file named).

    >>> [str(p) for p in dynamic_sampling_problems({"max_resample": 0})]
    ['data.dynamic_sampling.max_resample: must be an integer >= 1 (extra generation rounds per batch), got 0']
    """
    if option is None:
        return []
    if not isinstance(option, dict):
        return [Problem("", "data.dynamic_sampling", f"must be {FIX}, got {option!r}")]
    known = ", ".join(sorted(KEYS))
    problems = [
        Problem("", f"data.dynamic_sampling.{k}", f"unknown option; options: {known}") for k in option if k not in KEYS
    ]
    n = option.get("max_resample", KEYS["max_resample"])
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        what = "must be an integer >= 1 (extra generation rounds per batch)"
        problems.append(Problem("", "data.dynamic_sampling.max_resample", f"{what}, got {n!r}"))
    return problems


def whole_groups_problems(per_device_batch: int, steps_per_generation: int, num_generations: int) -> list[Problem]:
    """``data.dynamic_sampling`` keeps each process's own groups, so a group must not span two processes.

    >>> [p.key for p in whole_groups_problems(2, 1, 4)], whole_groups_problems(4, 2, 8)
    (['data.dynamic_sampling'], [])
    """
    local = per_device_batch * steps_per_generation
    if local % num_generations == 0:
        return []
    return [
        Problem(
            "",
            "data.dynamic_sampling",
            f"needs whole groups on each process: per_device_train_batch_size x steps_per_generation = {local} is "
            f"not a multiple of num_generations = {num_generations}",
            "make trainer.per_device_train_batch_size (or steps_per_generation) a multiple of num_generations",
        )
    ]


def zero_variance(rewards: list[float], group_size: int) -> list[bool]:
    """Per group of ``group_size`` consecutive total rewards: True when it teaches nothing, i.e. its scorable rewards
    (NaN: every reward function returned None) number fewer than two or are all equal (spread <= 1e-8), as TRL's
    ``frac_reward_zero_std`` counts them."""
    flags = []
    for start in range(0, len(rewards), group_size):
        valid = [r for r in rewards[start : start + group_size] if not math.isnan(r)]
        flags.append(len(valid) < 2 or max(valid) - min(valid) <= 1e-8)
    return flags


def total_rewards(rewards_per_func: Any, weights: Any) -> list[float]:
    """TRL's total reward per completion: the weighted sum of the reward functions, NaN where all were None."""
    import torch

    totals = (rewards_per_func * weights.to(rewards_per_func.device).unsqueeze(0)).nansum(dim=1)
    totals[torch.isnan(rewards_per_func).all(dim=1)] = torch.nan
    return totals.tolist()


def choose_groups(flags: list[list[bool]], need: int) -> list[tuple[int, int]]:
    """The groups that make a batch of ``need`` groups, as ``(round, group)``, from each round's zero-variance flags:
    the groups with variance in generation order; when the rounds are spent and they are too few, the zero-variance
    groups fill the rest, earliest first (a full batch keeps TRL's step shapes; they add no gradient)."""
    good = [(r, g) for r, row in enumerate(flags) for g, zero in enumerate(row) if not zero]
    if len(good) >= need:
        return good[:need]
    fill = [(r, g) for r, row in enumerate(flags) for g, zero in enumerate(row) if zero]
    return sorted(good + fill[: need - len(good)])


class RefillOrder:
    """Where fresh prompts come from: every dataset index once per pass, each pass a seeded permutation (as TRL's
    ``RepeatSampler`` shuffles, with its own seed so it does not replay the training order). Its position is saved
    in checkpoints, so a resumed run takes the same prompts. ``skip(index)``: pass over indices for now (prompts
    ``data.sampler`` holds in cooldown), unless a whole pass offers nothing else."""

    def __init__(self, size: int, seed: int = 0):
        self.size, self.seed = size, seed
        self.epoch, self.position = 0, 0

    def _pass(self, epoch: int) -> list[int]:
        import torch

        generator = torch.Generator().manual_seed(self.seed + 100_003 * (epoch + 1))
        return torch.randperm(self.size, generator=generator).tolist()

    def take(self, count: int, skip: Any = None) -> list[int]:
        """The next ``count`` dataset indices."""
        out: list[int] = []
        order, passed = self._pass(self.epoch), 0
        while len(out) < count:
            if self.position >= self.size:
                self.epoch, self.position = self.epoch + 1, 0
                order = self._pass(self.epoch)
            index = order[self.position]
            self.position += 1
            passed += 1
            if skip is None or passed > self.size or not skip(index):
                out.append(index)
                passed = 0
        return out

    def state(self) -> dict:
        return {"epoch": self.epoch, "position": self.position}

    def load_state(self, state: dict) -> None:
        self.epoch, self.position = int(state["epoch"]), int(state["position"])


def _pad(tensor: Any, width: int, value: float, left: bool) -> Any:
    import torch

    missing = width - tensor.size(1)
    if missing <= 0:
        return tensor
    pad = torch.full((tensor.size(0), missing), value, dtype=tensor.dtype, device=tensor.device)
    return torch.cat([pad, tensor] if left else [tensor, pad], dim=1)


def merge_batches(batches: list[dict], rows: list[list[int]], pad_token_id: int) -> dict:
    """One generation batch from the rows ``rows[i]`` of ``batches[i]`` (outputs of TRL's generation, each padded
    to its own widths): prompts left-padded, completions and what aligns with them right-padded to the widest.
    ``num_items_in_batch`` is left out (the caller counts it across processes)."""
    import torch

    keys = [k for k in batches[0] if k != "num_items_in_batch"]
    unknown = [k for k in keys if k not in COMPLETION_PAD and k not in JOINED]
    if unknown:
        raise GrpoTrlError(
            f"data.dynamic_sampling cannot join generation batches holding {', '.join(unknown)} (multimodal inputs)",
            key="data.dynamic_sampling",
            fix="remove data.dynamic_sampling for this model, or use data.sampler",
        )
    prompt_width = max(b["prompt_ids"].size(1) for b in batches)
    completion_width = max(b["completion_ids"].size(1) for b in batches)
    merged = {}
    for key in keys:
        parts = []
        for batch, picked in zip(batches, rows):
            tensor = batch[key][torch.tensor(picked, dtype=torch.long, device=batch[key].device)]
            if key in ("prompt_ids", "prompt_mask"):
                tensor = _pad(tensor, prompt_width, pad_token_id if key == "prompt_ids" else 0, left=True)
            elif key == "completion_ids":
                tensor = _pad(tensor, completion_width, pad_token_id, left=False)
            elif key in COMPLETION_PAD and tensor.dim() == 2 and tensor.size(1) == batch["completion_ids"].size(1):
                tensor = _pad(tensor, completion_width, COMPLETION_PAD[key], left=False)  # (B, 1): sequence-level
            parts.append(tensor)
        merged[key] = torch.cat(parts, dim=0)
    return merged
