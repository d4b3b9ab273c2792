"""Trainer callbacks that show what training does, reading what TRL already computes: ``completions.jsonl`` (a few
prompts with completions, per-reward scores and advantages every ``completions_every`` logs), ``timing/generation_s``,
and ``alerts.jsonl`` plus a logged warning when a run shows the signs of not learning (:class:`Alerts`).
"""

from __future__ import annotations

import inspect
import json
import logging
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from grpo_trl import trl_adapter
from grpo_trl.io import append_lines
from grpo_trl.monitor.entropy import KIND as COLLAPSE
from grpo_trl.monitor.entropy import Collapse
from grpo_trl.monitor.heldout import KIND as DIVERGING
from grpo_trl.monitor.heldout import Divergence, is_heldout
from grpo_trl.rewards.text import completion_text
from grpo_trl.tools.transcript import turns

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

    def restore(self, history: list[dict]) -> None:
        """Resuming: carry the sample cadence on from a checkpoint's ``log_history`` (one count per training log)."""
        self._logged = sum(1 for h in history if "loss" in h)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or logs is None or "loss" not in logs:
            return
        self._logged += 1
        if (self._logged - 1) % self.every and state.global_step != state.max_steps:
            return
        batch = trl_adapter.last_batch(self.trainer)
        if batch is None:
            return
        prompts, completions = batch["prompt"], batch["completion"]
        rewards, advantages = batch["rewards"], batch["advantages"]
        # one completion per distinct prompt first, so the sample covers several prompts
        order, seen = [], set()
        for i, p in enumerate(prompts):
            key = _text(p)
            if key not in seen:
                seen.add(key)
                order.append(i)
        order += [i for i in range(len(prompts)) if i not in order]
        lines = []
        for i in order[: self.samples]:
            row = {
                "step": state.global_step,
                "prompt": _text(prompts[i]),
                "completion": completion_text(completions[i]),
                "rewards": {name: _clean(values[i]) for name, values in rewards.items() if i < len(values)},
                "advantage": _clean(advantages[i]) if i < len(advantages) else None,
            }
            tool_turns = turns(completions[i])  # tool calls and results as separate turns
            if tool_turns:
                row["turns"] = tool_turns
            lines.append(json.dumps(row))
        append_lines(Path(args.output_dir) / "completions.jsonl", lines)  # the one writer: no link, redacted


class GenerationTimer(TrainerCallback):
    """Times TRL's generation (``trainer._generate``) and reports it as the metric ``timing/generation_s``."""

    def __init__(self, trainer: Any):
        self.trainer = trainer
        trl_adapter.time_generation(trainer, "timing/generation_s")  # another TRL version: no timing, no crash


ALERT_PATIENCE = 10  # consecutive logged steps a sign must last before it is reported


class Alerts(TrainerCallback):
    """Warn (log + ``alerts.jsonl``) once per kind when, for ``patience`` consecutive logged steps:

    - ``no_signal``: ``frac_reward_zero_std`` >= 0.95: every completion of a prompt scores the same, no gradient;
    - ``reward_zero:<name>``: a reward's mean is exactly 0 (a format regex that never matches, a template that
      pre-fills ``<think>``, a missing column...); the hint names the options that reward really takes;
    - ``reward_none:<name>``: a reward scored ``None`` on every row (``reward_none_frac/<name>`` is 1): it raises,
      returns the wrong length, a coroutine...; the message gives the first cause the safety wrapper recorded;
    - ``all_clipped``: ``completions/clipped_ratio`` >= 0.99: every completion hits ``max_completion_length``;
    - ``tools_failing``: ``tools/failure_frequency`` > 0.5: most tool calls come back as ``{"error": ...}`` (a tool
      that cannot run here, arguments the model gets wrong...); the message gives the first error a tool raised;
    - ``entropy_collapse``: ``entropy`` below 0.2x its early level while the reward stays flat
      (``grpo_trl.monitor.entropy.Collapse`` has the rule);
    - ``heldout_diverging``: for ``patience`` held-out evaluations in a row (``heldout:``, not logged steps), the
      training reward rose while held-out accuracy fell (``grpo_trl.monitor.heldout.Divergence``).

    ``rewards``: the trainer's reward callables (``SafeReward``), read for their options and fault causes.
    ``columns``: the training dataset's columns; a parameter named like one is that column, never an arg to set
    (``check`` refuses binding it), so hints leave it out. ``tools``: the trainer's tools (``trainer.tools``), read
    for the first error each recorded (``cause``, see ``grpo_trl.tools.registry.bounded``).
    """

    def __init__(
        self,
        output_dir: str,
        patience: int = ALERT_PATIENCE,
        rewards: list | None = None,
        columns: list[str] | tuple[str, ...] = (),
        tools: list | None = None,
    ):
        self.tools = list(tools or [])
        self.path = Path(output_dir) / "alerts.jsonl"
        self.patience = patience
        self.rewards = {getattr(r, "__name__", ""): r for r in rewards or []}
        self.columns = set(columns)
        self.streak: dict[str, int] = defaultdict(int)
        self.fired: list[dict] = []
        self.collapse = Collapse()
        self.divergence = Divergence()  # heldout.min_drop is set by grpo_trl.eval.during when it is installed

    def _zero_hint(self, name: str) -> str:
        options = getattr(getattr(self.rewards.get(name), "reward", None), "options", None)
        if options is None:
            return ""
        options = {k: v for k, v in options.items() if k not in self.columns}
        if not options:
            return f"; {name!r} takes no args"
        listed = ", ".join(f"{k}={v!r}" for k, v in options.items() if v is not inspect.Parameter.empty)
        return f"; its args (rewards[].args): {listed or ', '.join(options)}"

    def _none_cause(self, name: str) -> str:
        cause = getattr(self.rewards.get(name), "cause", None)
        return f"first cause: {cause}" if cause else "the warnings in the log say why"

    def _tool_cause(self) -> str:
        causes = [
            f"{getattr(t, '__name__', '?')}: {t.cause}" for t in self.tools if getattr(t, "cause", None) is not None
        ]
        return f"first error: {causes[0]}" if causes else "the tool messages in completions.jsonl say why"

    def _check(self, logs: dict) -> dict[str, str]:
        found: dict[str, str] = {}
        collapse = self.collapse.sign(logs)
        if collapse is not None:
            found[COLLAPSE] = collapse
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
                    f"reward {name!r} is exactly 0 on every completion: a format it never sees (a chat template "
                    "that pre-fills part of it?), a column it lacks, or a task out of reach; see completions.jsonl"
                    + self._zero_hint(name)
                )
            if key.startswith("reward_none_frac/") and value is not None and value >= 1.0:
                name = key[len("reward_none_frac/") :]
                found[f"reward_none:{name}"] = (
                    f"reward {name!r} scored None on every row, so it contributes nothing; {self._none_cause(name)}"
                )
        clipped = logs.get("completions/clipped_ratio")
        if clipped is not None and clipped >= 0.99:
            found["all_clipped"] = (
                "every completion is cut at max_completion_length: raise trainer.max_completion_length or reward "
                "shorter answers (soft_overlong)"
            )
        failures, calls = logs.get("tools/failure_frequency"), logs.get("tools/call_frequency")
        if failures is not None and failures > 0.5 and calls:
            found["tools_failing"] = (
                f"tools/failure_frequency {failures:.2f}: most tool calls fail and come back to the model as "
                f"{{'error': ...}}; {self._tool_cause()}"
            )
        return found

    def _advance(self, logs: dict) -> dict[str, str]:
        self.divergence.train(logs)
        found = self._check(logs)
        for kind in list(self.streak):
            if kind not in found:
                self.streak[kind] = 0
        for kind in found:
            self.streak[kind] += 1
        return found

    def restore(self, log_history: list[dict], fired: list[dict]) -> None:
        """``--resume``: the alerts fired up to the checkpoint stay fired (never again) and the streaks its logged
        steps built carry on, so the resumed run alerts exactly when an uninterrupted one would."""
        self.fired = list(fired)
        for logs in log_history:
            if "loss" in logs:
                self._advance(logs)
            elif is_heldout(logs) and isinstance(logs.get("step"), int):
                self.divergence.evaluated(logs["step"], logs)

    def _fire(self, state: Any, kind: str, message: str) -> None:
        if any(a["kind"] == kind for a in self.fired):
            return
        alert = {"step": state.global_step, "kind": kind, "message": message}
        self.fired.append(alert)
        logger.warning("ALERT at step %d (%s): %s", state.global_step, kind, message)
        if state.is_world_process_zero:
            append_lines(self.path, [json.dumps(alert)])  # the one writer: no link, redacted

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs is not None and "loss" not in logs and is_heldout(logs):
            message = self.divergence.evaluated(state.global_step, logs)
            if message is not None and self.divergence.streak == self.patience:
                self._fire(state, DIVERGING, message)
            return
        if logs is None or "loss" not in logs:
            return
        found = self._advance(logs)
        for kind, message in found.items():
            if self.streak[kind] == self.patience:
                self._fire(state, kind, message)


def install_monitors(
    trainer: Any, logging_section: dict, output_dir: str, extra: list | None = None, *, console: bool = True
) -> Alerts | None:
    """The recipe's ``logging:`` on ``trainer``: completion samples, generation time, alerts (returned, or None when
    off), the caller's ``extra`` callbacks, and one compact console line per logging step unless ``console`` is off."""
    from grpo_trl.monitor.console import install_console

    alerts = (
        Alerts(
            output_dir,
            patience=logging_section["alert_patience"],
            rewards=trainer.reward_funcs,  # the recipe's SafeRewards (and any passed or loaded by TRL)
            columns=getattr(trainer.train_dataset, "column_names", None) or (),  # what a reward reads as a column
            tools=getattr(trainer, "tools", None),
        )
        if logging_section["alerts"]
        else None
    )
    every, samples = logging_section["completions_every"], logging_section["completions_samples"]
    callbacks = [CompletionSamples(trainer, every=every, samples=samples), GenerationTimer(trainer), alerts]
    for cb in [*callbacks, *(extra or [])]:
        if cb is not None:
            trainer.add_callback(cb)
    if console:
        install_console(trainer)
    return alerts
