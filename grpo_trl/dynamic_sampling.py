"""Installing :class:`~grpo_trl.data.sampler.ZeroVarianceSampler` on a ``GRPOTrainer`` (``data.sampler``).

The two TRL internals used go through :mod:`grpo_trl.trl_adapter`: ``last_batch`` reads the gathered per-completion
advantages of the latest generation (``GRPOTrainer._logs``), ``use_train_sampler`` replaces the trainer's
``_get_train_sampler``. The sampler's state is saved in every checkpoint and restored on resume.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from grpo_trl.data.sampler import KEYS, ZeroVarianceSampler
from grpo_trl.trl_adapter import last_batch, use_train_sampler

STATE_FILE = "zero_variance_sampler.json"


class ZeroVarianceCallback(TrainerCallback):
    """Feeds each generation's group outcomes to the sampler; saves its state in checkpoints, restores it on resume."""

    def __init__(self, trainer: Any, sampler: ZeroVarianceSampler):
        self.trainer = trainer
        self.sampler = sampler
        self._last: Any = None

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        batch = last_batch(self.trainer)
        prompts, advantages = (batch["prompt"], batch["advantages"]) if batch else ([], [])
        if not advantages or advantages[-1] is self._last:  # no new generation since the last step
            return
        self._last = advantages[-1]  # held, so its identity cannot be reused by a new float
        self.sampler.observe(prompts, advantages, self.trainer.num_generations)

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        if state.is_world_process_zero and folder.is_dir():
            (folder / STATE_FILE).write_text(json.dumps(self.sampler.state()))

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
    probe = trainer._get_train_sampler()  # TRL's own sampler, for its exact arguments
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
