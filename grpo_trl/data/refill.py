"""DAPO dynamic sampling (``data.dynamic_sampling: {max_resample: N}``): zero-variance groups of a generation batch
are replaced by groups of fresh prompts, in up to ``N`` extra rounds of TRL's generation call. Every decision that
sets the number of calls is taken on gathered numbers, so all processes make the same calls."""

from __future__ import annotations

import math
from typing import Any

from grpo_trl.data.options import DynamicSamplingOptions
from grpo_trl.errors import GrpoTrlError, Problem

STATE_FILE = "dynamic_sampling.json"
METRIC = "dynamic_sampling/"
# tensors aligned with the completion tokens (right-padded) and their padding; the prompt's are left-padded
COMPLETION_PAD = {"completion_mask": 0, "tool_mask": 1, "importance_sampling_ratio": 1.0} | {
    f"{k}_per_token_logps": 0.0 for k in ("old", "ref", "sampling")
}
JOINED = ("prompt_ids", "prompt_mask", "completion_ids", "advantages")
# data.dynamic_sampling with images: refused before training (multimodal batches cannot be joined)
IMAGES = "cannot join generation batches of prompts with images (multimodal inputs)"
IMAGES_FIX = "remove data.dynamic_sampling for this model, or use data.sampler"


def whole_groups_problems(per_device_batch: int, steps_per_generation: int, num_generations: int) -> list[Problem]:
    """Each process keeps its own groups, so a group must not span two processes."""
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
    """Per group: fewer than two scorable rewards (NaN: none), or all equal (spread <= 1e-8), as TRL's
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
    """The ``(round, group)`` pairs of a batch of ``need`` groups: those with variance in generation order, then
    zero-variance ones, earliest first, when the rounds are spent (a full batch keeps TRL's step shapes)."""
    good = [(r, g) for r, row in enumerate(flags) for g, zero in enumerate(row) if not zero]
    if len(good) >= need:
        return good[:need]
    fill = [(r, g) for r, row in enumerate(flags) for g, zero in enumerate(row) if zero]
    return sorted(good + fill[: need - len(good)])


class RefillOrder:
    """Fresh prompts: each pass a seeded permutation of the indices (not the training order), position checkpointed.
    ``skip(index)``: pass over an index (``data.sampler``'s cooldown) unless a whole pass offers nothing else."""

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

    def load_state(self, state: dict, replay: bool = False) -> None:
        self.epoch, self.position = int(state["epoch"]), int(state["position"])


def merge_batches(batches: list[dict], rows: list[list[int]], pad_token_id: int) -> dict:
    """One generation batch from rows ``rows[i]`` of ``batches[i]``: prompts left-padded, completions and what
    aligns with them right-padded to the widest. ``num_items_in_batch`` is left to the caller."""
    import torch

    from grpo_trl.trl_adapter import pad

    keys = [k for k in batches[0] if k != "num_items_in_batch"]
    unknown = [k for k in keys if k not in COMPLETION_PAD and k not in JOINED]
    if unknown:
        raise GrpoTrlError(
            f"data.dynamic_sampling cannot join generation batches holding {', '.join(unknown)} (multimodal inputs)",
            key="data.dynamic_sampling",
            fix=IMAGES_FIX,
        )
    merged = {}
    for key in keys:
        picked = [row for batch, ids in zip(batches, rows) for row in batch[key][ids]]
        value = pad_token_id if key in ("prompt_ids", "completion_ids") else COMPLETION_PAD.get(key, 0)
        side = "left" if key.startswith("prompt") else "right"
        merged[key] = torch.stack(picked) if picked[0].dim() == 0 else pad(picked, value, side)
    return merged


class Refill:
    """``wrapper(generate, inputs)`` for ``trl_adapter.wrap_generation``: zero-variance groups refilled."""

    def __init__(self, trainer: Any, max_resample: int, order: RefillOrder, sampler: Any = None):
        self.trainer, self.max_resample, self.order = trainer, max_resample, order
        self.sampler = sampler  # data.sampler: prompts it holds in cooldown are passed over

    def _flags(self, rewards: Any, local_groups: int) -> list[bool]:
        """This process's groups: zero variance or not, from the rewards of all processes (same on each)."""
        if rewards is None:  # no rewards seen (a TRL that scores elsewhere): nothing to refill
            return [False] * local_groups
        flags = zero_variance(total_rewards(rewards, self.trainer.reward_weights), self.trainer.num_generations)
        start = self.trainer.accelerator.process_index * local_groups
        return flags[start : start + local_groups]

    def _skip(self) -> Any:
        if self.sampler is None:
            return None
        weights = self.sampler.weights(self.sampler.history, self.sampler.epoch)
        return lambda index: weights[index] < 1.0

    def _max(self, value: int) -> int:
        import torch

        accelerator = self.trainer.accelerator
        return int(accelerator.gather(torch.tensor([value], device=accelerator.device)).max().item())

    def __call__(self, generate: Any, inputs: list) -> dict:
        trainer = self.trainer
        if not trainer.model.training:
            return generate(inputs)[0]
        size, accelerator = trainer.num_generations, trainer.accelerator
        need = len(inputs) // size
        output, rewards = generate(inputs)
        outputs, flags = [output], [self._flags(rewards, need)]
        while len(outputs) <= self.max_resample:
            have = sum(not zero for row in flags for zero in row)
            lacking = self._max(max(0, need - have))  # the same on every process: same number of calls
            if lacking == 0:
                break
            indices = self.order.take(lacking * accelerator.num_processes, self._skip())
            mine = indices[accelerator.process_index * lacking : (accelerator.process_index + 1) * lacking]
            output, rewards = generate([trainer.train_dataset[i] for i in mine for _ in range(size)])
            outputs.append(output)
            flags.append(self._flags(rewards, lacking))
        chosen = choose_groups(flags, need)
        self._log(flags, chosen, need)
        if len(outputs) == 1:
            return outputs[0]  # nothing to refill: TRL's batch as it is
        rows: list[list[int]] = [[] for _ in outputs]
        for r, g in chosen:
            rows[r].extend(range(g * size, (g + 1) * size))
        tokenizer = getattr(trainer.processing_class, "tokenizer", trainer.processing_class)
        merged = merge_batches(outputs, rows, tokenizer.pad_token_id)
        mask = merged["completion_mask"] * merged["tool_mask"] if "tool_mask" in merged else merged["completion_mask"]
        merged["num_items_in_batch"] = accelerator.gather(mask.sum()).sum()  # the loss normalizer, all processes
        return merged

    def _log(self, flags: list[list[bool]], chosen: list[tuple[int, int]], need: int) -> None:
        import torch

        from grpo_trl.trl_adapter import add_train_metric

        zero, kept_zero = sum(z for row in flags for z in row), sum(flags[r][g] for r, g in chosen)
        local = torch.tensor([sum(len(row) for row in flags), zero, kept_zero, need], dtype=torch.float64)
        accelerator = self.trainer.accelerator
        generated, zero, kept_zero, need = accelerator.gather(local.to(accelerator.device)).view(-1, 4).sum(0).tolist()
        for name, value in (
            ("zero_std_generated", zero / generated),  # of all groups generated for this batch
            ("dropped", (generated - need) / generated),  # generated, not trained on
            ("zero_std_kept", kept_zero / need),  # of the groups in the optimized batch
            ("generations", generated * self.trainer.num_generations),  # completions, all processes
            ("resample_rounds", len(flags) - 1),
        ):
            add_train_metric(self.trainer, METRIC + name, float(value))


def install(trainer: Any, data_cfg: dict) -> Refill | None:
    """With ``data.dynamic_sampling`` set: refill ``trainer``'s generation batches (install after ``data.sampler``)."""
    from grpo_trl.data.image_tokens import IMAGE_COLUMNS
    from grpo_trl.data.sampler import CheckpointState, ZeroVarianceSampler
    from grpo_trl.trl_adapter import train_sampler, wrap_generation

    option = data_cfg.get("dynamic_sampling")
    if option is None:
        return None
    args, dataset = trainer.args, trainer.train_dataset
    found = whole_groups_problems(args.per_device_train_batch_size, args.steps_per_generation, args.num_generations)
    if found:
        raise GrpoTrlError(found)
    if not hasattr(dataset, "__getitem__") or not hasattr(dataset, "__len__"):
        raise GrpoTrlError(
            "data.dynamic_sampling draws fresh prompts by index; this training dataset is a stream",
            key="data.dynamic_sampling",
            fix="use a map-style dataset, or remove data.dynamic_sampling",
        )
    if set(IMAGE_COLUMNS) & set(getattr(dataset, "column_names", None) or ()):
        raise GrpoTrlError(IMAGES, key="data.dynamic_sampling", fix=IMAGES_FIX)  # not at the first refill, mid-run
    probe = train_sampler(trainer)
    order = RefillOrder(len(dataset), seed=args.seed)
    max_resample = DynamicSamplingOptions(**option).max_resample
    refill = Refill(trainer, max_resample, order, probe if isinstance(probe, ZeroVarianceSampler) else None)
    wrap_generation(trainer, refill)
    trainer.add_callback(CheckpointState(STATE_FILE, order))
    return refill
