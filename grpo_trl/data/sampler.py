"""``data.sampler``: fewer generations on prompts whose groups taught nothing. After a zero-variance group the
prompt's weight drops to ``zero_variance_weight`` for ``cooldown_epochs`` epochs; TRL's ``RepeatSampler`` runs over
each epoch's weighted order. The state is saved in every checkpoint and restored on ``--resume``."""

from __future__ import annotations

import functools
import itertools
import json
import math
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from grpo_trl.data.options import SamplerOptions
from grpo_trl.data.pass_rate import prompt_hash
from grpo_trl.io import read_json, write
from grpo_trl.trl_adapter import last_batch, train_sampler, use_train_sampler

STATE_FILE = "zero_variance_sampler.json"
STATE = ("epoch", "history", "epoch_start_history", "observed_groups", "zero_variance_groups")


def systematic_counts(weights: list[float], total: int, u: float) -> list[int]:
    """How often each index appears among ``total`` draws proportional to ``weights`` (systematic sampling, offset
    ``u`` in [0, 1)): each count the floor or ceiling of its expectation, summing to ``total``."""
    scale = total / math.fsum(weights)
    below = [min(total, max(0, math.ceil(c - 1e-9 - u))) for c in itertools.accumulate(w * scale for w in weights)]
    counts = [b - a for a, b in zip([0, *below], below)]
    counts[-1] += total - below[-1]  # float rounding at the very end
    return counts


@dataclass(eq=False)
class ZeroVarianceSampler:
    """TRL's ``RepeatSampler`` over each epoch's prompt order, drawn from per-prompt weights; with every weight 1 an
    epoch is TRL's own permutation. Same arguments as ``RepeatSampler``, plus the two of ``data.sampler``."""

    data_source: Any
    mini_repeat_count: int
    batch_size: int = 1
    repeat_count: int = 1
    shuffle: bool = True
    seed: int | None = None
    _: KW_ONLY
    zero_variance_weight: float = 0.1
    cooldown_epochs: int = 2
    epoch: int = field(default=0, init=False)  # epochs started
    history: dict[str, int] = field(default_factory=dict, init=False)  # prompt hash -> epoch of its last zero group
    epoch_start_history: dict[str, int] = field(default_factory=dict, init=False)  # what this epoch was drawn from
    observed_groups: int = field(default=0, init=False)
    zero_variance_groups: int = field(default=0, init=False)
    _replay: bool = field(default=False, init=False)

    @property
    def num_samples(self) -> int:
        return len(self.data_source)

    @functools.cached_property
    def hashes(self) -> list[str]:
        return [prompt_hash(p) for p in self.data_source["prompt"]]

    def weights(self, history: dict[str, int], epoch: int) -> list[float]:
        low = float(self.zero_variance_weight)
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
        pool = [i for i, c in enumerate(systematic_counts(weights, self.num_samples, u)) for _ in range(c)]
        return [pool[j] for j in torch.randperm(len(pool), generator=generator).tolist()]

    def __len__(self) -> int:
        return (self.num_samples // self.batch_size) * self.batch_size * self.mini_repeat_count * self.repeat_count

    def __iter__(self):
        from grpo_trl.trl_adapter import repeat_sampler

        order = self.epoch_order()
        for position in repeat_sampler(order, self.mini_repeat_count, self.batch_size, self.repeat_count):
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
        return {name: getattr(self, name) for name in STATE}

    def load_state(self, state: dict, replay: bool = True) -> None:
        """Continue from a checkpoint; ``replay``: it fell inside an epoch, so that epoch is drawn again."""
        for name in STATE:
            setattr(self, name, type(getattr(self, name))(state.get(name, 0)))
        self._replay = replay and self.epoch > 0


class CheckpointState(TrainerCallback):
    """Saves ``obj.state()`` as ``name`` in every checkpoint (process 0, before ``trainer_state.json``) and restores
    it on resume."""

    def __init__(self, name: str, obj: Any):
        self.name, self.obj = name, obj

    def _write(self, args: Any, state: Any, create: bool = False) -> None:
        folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        if not state.is_world_process_zero:
            return
        if create or folder.is_dir():
            write(folder / self.name, json.dumps(self.obj.state()), mine=True)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if control.should_save:  # the checkpoint is saved right after this step
            self._write(args, state, create=True)

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._write(args, state)  # saves decided after the step (save_strategy epoch or best) get it here

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        saved = Path(args.output_dir) / f"checkpoint-{state.global_step}" / self.name
        if state.global_step > 0 and saved.exists():  # inside an epoch: the trainer restarts it, so replay it
            self.obj.load_state(read_json(saved), replay=not float(state.epoch).is_integer())


class ZeroVarianceCallback(CheckpointState):
    """Feeds each generation's group outcomes to the sampler; saves and restores its state."""

    def __init__(self, trainer: Any, sampler: ZeroVarianceSampler):
        super().__init__(STATE_FILE, sampler)
        self.trainer, self._last = trainer, None

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        batch = last_batch(self.trainer)
        prompts, advantages = (batch["prompt"], batch["advantages"]) if batch else ([], [])
        if advantages and advantages[-1] is not self._last:  # a new generation since the last step
            self._last = advantages[-1]  # held, so its identity cannot be reused by a new float
            self.obj.observe(prompts, advantages, self.trainer.num_generations)
        super().on_step_end(args, state, control)


def install(trainer: Any, data_cfg: dict) -> ZeroVarianceSampler | None:
    """With ``data.sampler`` set: train ``trainer`` through a :class:`ZeroVarianceSampler`; else do nothing."""
    option = data_cfg.get("sampler")
    if option is None:
        return None
    probe = train_sampler(trainer)  # TRL's own sampler, for its exact arguments
    args = (probe.data_source, probe.mini_repeat_count, probe.batch_size, probe.repeat_count)
    sampler = ZeroVarianceSampler(
        *args, shuffle=probe.shuffle, seed=probe.seed, **SamplerOptions(**option).model_dump()
    )
    use_train_sampler(trainer, sampler)
    trainer.add_callback(ZeroVarianceCallback(trainer, sampler))
    return sampler
