"""Installing :class:`~grpo_trl.data.sampler.ZeroVarianceSampler` on a ``GRPOTrainer`` (``data.sampler``).

The two TRL internals used go through :mod:`grpo_trl.trl_adapter`: ``last_batch`` reads the gathered per-completion
advantages of the latest generation (``GRPOTrainer._logs``), ``use_train_sampler`` replaces the trainer's
``_get_train_sampler``. The sampler's state is saved in every checkpoint and restored on resume.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from grpo_trl.data.sampler import KEYS, ZeroVarianceSampler
from grpo_trl.trl_adapter import last_batch, train_sampler, use_train_sampler

STATE_FILE = "zero_variance_sampler.json"


def write_checkpoint_state(args: Any, state: Any, name: str, payload: dict, create: bool = False) -> None:
    """Write ``payload`` as ``name`` in the checkpoint of this step (process 0 only), whole or not at all.
    ``create``: make the folder (called before the trainer writes the checkpoint)."""
    folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
    if not state.is_world_process_zero:
        return
    if create:
        folder.mkdir(parents=True, exist_ok=True)
    if folder.is_dir():
        tmp = folder / f".{name}.tmp"
        tmp.write_text(json.dumps(payload))
        os.replace(tmp, folder / name)  # whole or absent, never cut


class ZeroVarianceCallback(TrainerCallback):
    """Feeds each generation's group outcomes to the sampler; saves its state in checkpoints, restores it on resume."""

    def __init__(self, trainer: Any, sampler: ZeroVarianceSampler):
        self.trainer = trainer
        self.sampler = sampler
        self._last: Any = None

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        batch = last_batch(self.trainer)
        prompts, advantages = (batch["prompt"], batch["advantages"]) if batch else ([], [])
        if advantages and advantages[-1] is not self._last:  # a new generation since the last step
            self._last = advantages[-1]  # held, so its identity cannot be reused by a new float
            self.sampler.observe(prompts, advantages, self.trainer.num_generations)
        if control.should_save:  # the checkpoint is saved right after this step
            # written before the trainer writes the checkpoint's trainer_state.json (what makes it complete for
            # --resume), so a kill between the two cannot leave a complete checkpoint without the sampler state
            self._write(args, state, create=True)

    def _write(self, args: Any, state: Any, create: bool = False) -> None:
        write_checkpoint_state(args, state, STATE_FILE, self.sampler.state(), create)

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._write(args, state)  # saves decided after the step (save_strategy epoch or best) get it here

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        saved = Path(args.output_dir) / f"checkpoint-{state.global_step}" / STATE_FILE
        if state.global_step > 0 and saved.exists():
            # a checkpoint inside an epoch: the trainer restarts that epoch and skips ahead, so replay its order
            self.sampler.load_state(json.loads(saved.read_text()), replay=not float(state.epoch).is_integer())


def install(trainer: Any, data_cfg: dict) -> ZeroVarianceSampler | None:
    """With ``data.sampler`` set: train ``trainer`` through a :class:`ZeroVarianceSampler`; else do nothing."""
    option = data_cfg.get("sampler")
    if option is None:
        return None
    probe = train_sampler(trainer)  # TRL's own sampler, for its exact arguments
    sampler = ZeroVarianceSampler(
        probe.data_source,
        probe.mini_repeat_count,
        probe.batch_size,
        probe.repeat_count,
        shuffle=probe.shuffle,
        seed=probe.seed,
        **{**KEYS, **option},
    )
    use_train_sampler(trainer, sampler)
    trainer.add_callback(ZeroVarianceCallback(trainer, sampler))
    return sampler
