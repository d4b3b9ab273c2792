"""Trainer callbacks that show what training does: completion samples, time split, alerts for broken runs.

All three are ``transformers.TrainerCallback`` objects added by ``grpo_trl.train.run``; they read what TRL already
computes (``trainer._logs`` holds the last generation batch with per-reward scores and advantages) and write next to
the checkpoints in ``output_dir``:

- ``completions.jsonl``: every ``completions_every`` logged steps, ``completions_samples`` rows of
  ``{step, prompt, completion, rewards: {name: score}, advantage}``;
- metrics ``timing/generation_s`` (TRL's ``_generate``) and ``timing/reward_s/<name>`` (the safety wrapper), beside
  TRL's own ``step_time``;
- ``alerts.jsonl`` and a logged warning when a run shows the signs of not learning.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from grpo_trl.rewards.text import completion_text

logger = logging.getLogger("grpo_trl")


def _text(messages: Any) -> str:
    if isinstance(messages, list):
        return "\n".join(
            f"[{m.get('role', '?')}] {m.get('content', '')}" if isinstance(m, dict) else str(m) for m in messages
        )
    return str(messages)


def _clean(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(float(x), 6)


class CompletionSamples(TrainerCallback):
    """Append a few prompts with their completions, per-reward scores and advantages to ``completions.jsonl``."""

    def __init__(self, trainer: Any, every: int = 10, samples: int = 4):
        self.trainer = trainer
        self.every = max(1, int(every))
        self.samples = int(samples)
        self._logged = 0

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or logs is None or "loss" not in logs:
            return
        self._logged += 1
        if (self._logged - 1) % self.every and state.global_step != state.max_steps:
            return
        store = getattr(self.trainer, "_logs", None)
        if not store or not store.get("prompt"):
            return
        prompts, completions = list(store["prompt"]), list(store["completion"])
        rewards = {name: list(values) for name, values in store["rewards"].items()}
        advantages = list(store["advantages"])
        # one completion per distinct prompt first, so the sample covers several prompts
        order, seen = [], set()
        for i, p in enumerate(prompts):
            key = _text(p)
            if key not in seen:
                seen.add(key)
                order.append(i)
        order += [i for i in range(len(prompts)) if i not in order]
        path = Path(args.output_dir) / "completions.jsonl"
        with path.open("a") as fh:
            for i in order[: self.samples]:
                row = {
                    "step": state.global_step,
                    "prompt": _text(prompts[i]),
                    "completion": completion_text(completions[i]),
                    "rewards": {name: _clean(values[i]) for name, values in rewards.items() if i < len(values)},
                    "advantage": _clean(advantages[i]) if i < len(advantages) else None,
                }
                fh.write(json.dumps(row) + "\n")


class GenerationTimer(TrainerCallback):
    """Times TRL's generation (``trainer._generate``) and reports it as the metric ``timing/generation_s``."""

    def __init__(self, trainer: Any):
        self.trainer = trainer
        original = getattr(trainer, "_generate", None)
        log_metric = getattr(trainer, "_log_metric", None)
        if original is None or log_metric is None:  # another TRL version: no timing rather than a crash
            return

        def timed_generate(*a, **k):
            start = time.perf_counter()
            try:
                return original(*a, **k)
            finally:
                log_metric("timing/generation_s", time.perf_counter() - start)

        trainer._generate = timed_generate


ALERT_PATIENCE = 10  # consecutive logged steps a sign must last before it is reported


class Alerts(TrainerCallback):
    """Warn (log + ``alerts.jsonl``) once per kind when, for ``patience`` consecutive logged steps:

    - ``no_signal``: ``frac_reward_zero_std`` >= 0.95: every completion of a prompt scores the same, no gradient;
    - ``reward_zero:<name>``: a reward's mean is exactly 0 (a format regex that never matches, a template that
      pre-fills ``<think>``, a missing column...);
    - ``all_clipped``: ``completions/clipped_ratio`` >= 0.99: every completion hits ``max_completion_length``.
    """

    def __init__(self, output_dir: str, patience: int = ALERT_PATIENCE):
        self.path = Path(output_dir) / "alerts.jsonl"
        self.patience = patience
        self.streak: dict[str, int] = defaultdict(int)
        self.fired: list[dict] = []

    def _check(self, logs: dict) -> dict[str, str]:
        found: dict[str, str] = {}
        zero_std = logs.get("frac_reward_zero_std")
        if zero_std is not None and zero_std >= 0.95:
            found["no_signal"] = (
                "frac_reward_zero_std >= 0.95: the completions of each prompt all get the same reward, so advantages "
                "are zero and nothing is learned. The task is too hard or too easy for the model, or a reward never "
                "varies; check the samples in completions.jsonl"
            )
        for key, value in logs.items():
            if key.startswith("rewards/") and key.endswith("/mean") and value == 0:
                name = key[len("rewards/") : -len("/mean")]
                found[f"reward_zero:{name}"] = (
                    f"reward {name!r} is exactly 0 on every completion: a format it never sees (does the template "
                    "pre-fill <think>? use args: {prefilled_think: true}), a column it lacks, or a task out of reach"
                )
        clipped = logs.get("completions/clipped_ratio")
        if clipped is not None and clipped >= 0.99:
            found["all_clipped"] = (
                "every completion is cut at max_completion_length: raise trainer.max_completion_length or reward "
                "shorter answers (soft_overlong)"
            )
        return found

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs is None or "loss" not in logs:
            return
        found = self._check(logs)
        for kind in list(self.streak):
            if kind not in found:
                self.streak[kind] = 0
        for kind, message in found.items():
            self.streak[kind] += 1
            if self.streak[kind] == self.patience and not any(a["kind"] == kind for a in self.fired):
                alert = {"step": state.global_step, "kind": kind, "message": message}
                self.fired.append(alert)
                logger.warning("ALERT at step %d (%s): %s", state.global_step, kind, message)
                if state.is_world_process_zero:
                    with self.path.open("a") as fh:
                        fh.write(json.dumps(alert) + "\n")
