"""Installing DAPO dynamic sampling (``data.dynamic_sampling``, see :mod:`grpo_trl.data.refill`) on a
``GRPOTrainer``.

How it sits on TRL: TRL's ``_prepare_inputs`` calls ``_generate_and_score_completions`` once per generation batch
(every ``steps_per_generation * num_iterations`` steps), then shuffles the result and splits it into the
``steps_per_generation`` slices it buffers. :class:`Refill` wraps that one call (``trl_adapter.wrap_generation``):
it runs it, finds the zero-variance groups from the gathered rewards, calls it again on groups of fresh prompts
(at most ``max_resample`` times) and returns one batch of the original size, joined from the calls' outputs. So
``steps_per_generation`` and ``num_iterations`` work as in TRL (the joined batch is what gets split and reused), and
evaluation passes through untouched.

Several processes: each one generates its own slice, and a group never spans two (checked at install), so each
process picks its own groups. Every decision that sets the number of generation calls is taken on gathered
numbers (the most groups any process still lacks), so every process makes the same calls and none waits on a
collective the others skip; fresh prompts come from one seeded order, each process taking its share of a round.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from grpo_trl.data.dynamic_sampling import write_checkpoint_state
from grpo_trl.data.refill import (
    IMAGES,
    IMAGES_FIX,
    KEYS,
    RefillOrder,
    choose_groups,
    merge_batches,
    total_rewards,
    whole_groups_problems,
    zero_variance,
)
from grpo_trl.data.sampler import ZeroVarianceSampler
from grpo_trl.errors import GrpoTrlError
from grpo_trl.trl_adapter import add_train_metric, train_sampler, wrap_generation

STATE_FILE = "dynamic_sampling.json"
METRIC = "dynamic_sampling/"


class Refill:
    """``wrapper(generate, inputs)`` for ``trl_adapter.wrap_generation``: one generation batch, its zero-variance
    groups replaced by fresh ones while the budget lasts."""

    def __init__(self, trainer: Any, max_resample: int, order: RefillOrder, sampler: ZeroVarianceSampler | None):
        self.trainer = trainer
        self.max_resample = max_resample
        self.order = order
        self.sampler = sampler  # data.sampler: prompts it holds in cooldown are passed over

    def _flags(self, rewards: Any, local_groups: int) -> list[bool]:
        """This process's groups: zero variance or not, from the rewards of all processes (same on each)."""
        if rewards is None:  # no rewards seen (a TRL that scores elsewhere): nothing to refill
            return [False] * local_groups
        size = self.trainer.num_generations
        flags = zero_variance(total_rewards(rewards, self.trainer.reward_weights), size)
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
            fresh = [trainer.train_dataset[i] for i in mine for _ in range(size)]
            output, rewards = generate(fresh)
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

        generated = sum(len(row) for row in flags)
        zero = sum(zero for row in flags for zero in row)
        kept_zero = sum(flags[r][g] for r, g in chosen)
        local = torch.tensor([generated, zero, kept_zero, need], dtype=torch.float64)
        accelerator = self.trainer.accelerator
        generated, zero, kept_zero, need = accelerator.gather(local.to(accelerator.device)).view(-1, 4).sum(0).tolist()
        size = self.trainer.num_generations
        for name, value in (
            ("zero_std_generated", zero / generated),  # of all groups generated for this batch
            ("dropped", (generated - need) / generated),  # generated, not trained on
            ("zero_std_kept", kept_zero / need),  # of the groups in the optimized batch
            ("generations", generated * size),  # completions generated for this batch, all processes
            ("resample_rounds", len(flags) - 1),
        ):
            add_train_metric(self.trainer, METRIC + name, float(value))


class RefillStateCallback(TrainerCallback):
    """Saves the fresh-prompt order's position in checkpoints; restores it on resume."""

    def __init__(self, order: RefillOrder):
        self.order = order

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if control.should_save:  # before the trainer writes the checkpoint (as data.sampler's state)
            write_checkpoint_state(args, state, STATE_FILE, self.order.state(), create=True)

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        write_checkpoint_state(args, state, STATE_FILE, self.order.state())

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        saved = Path(args.output_dir) / f"checkpoint-{state.global_step}" / STATE_FILE
        if state.global_step > 0 and saved.exists():
            self.order.load_state(json.loads(saved.read_text()))


def install(trainer: Any, data_cfg: dict) -> Refill | None:
    """With ``data.dynamic_sampling`` set: refill ``trainer``'s generation batches; else do nothing. Install after
    ``data.sampler`` (its cooldown steers the fresh prompts)."""
    option = data_cfg.get("dynamic_sampling")
    if option is None:
        return None
    option = {**KEYS, **option}
    args = trainer.args
    found = whole_groups_problems(args.per_device_train_batch_size, args.steps_per_generation, args.num_generations)
    if found:
        raise GrpoTrlError(found)
    if not hasattr(trainer.train_dataset, "__getitem__") or not hasattr(trainer.train_dataset, "__len__"):
        raise GrpoTrlError(
            "data.dynamic_sampling draws fresh prompts by index; this training dataset is a stream",
            key="data.dynamic_sampling",
            fix="use a map-style dataset, or remove data.dynamic_sampling",
        )
    from grpo_trl.data.image_tokens import IMAGE_COLUMNS

    if set(IMAGE_COLUMNS) & set(getattr(trainer.train_dataset, "column_names", None) or ()):
        raise GrpoTrlError(IMAGES, key="data.dynamic_sampling", fix=IMAGES_FIX)  # not at the first refill, mid-run
    probe = train_sampler(trainer)
    sampler = probe if isinstance(probe, ZeroVarianceSampler) else None
    order = RefillOrder(len(trainer.train_dataset), seed=args.seed)
    refill = Refill(trainer, int(option["max_resample"]), order, sampler)
    wrap_generation(trainer, refill)
    trainer.add_callback(RefillStateCallback(order))
    return refill
