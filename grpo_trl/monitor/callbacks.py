"""``alerts.jsonl`` plus a logged warning when a run shows the signs of not learning (:class:`Alerts`), read from the
metrics TRL logs; ``install_monitors`` puts the recipe's ``logging:`` callbacks on a trainer."""

from __future__ import annotations

import inspect
import json
import logging
from collections import defaultdict
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from grpo_trl import trl_adapter
from grpo_trl.io import append_lines
from grpo_trl.monitor.console import CompletionSamples, install_console
from grpo_trl.monitor.heldout import KIND as DIVERGING
from grpo_trl.monitor.heldout import Divergence, finite, is_heldout

logger = logging.getLogger("grpo_trl")
ALERT_PATIENCE = 10  # consecutive logged steps a sign must last before it is reported
COLLAPSE, EARLY_LOGS, FRACTION, FLAT_GAIN = "entropy_collapse", 3, 0.2, 0.05


class Collapse:
    """Entropy collapse: a log's ``entropy`` below ``FRACTION`` of its early level (mean of the first ``EARLY_LOGS``
    logs) while its reward gained less than the early ``reward_std`` (``FLAT_GAIN`` without it)."""

    def __init__(self) -> None:
        self.early: list[tuple[float, float, float | None]] = []

    def sign(self, logs: dict) -> str | None:
        entropy, reward = finite(logs.get("entropy")), finite(logs.get("reward"))
        if entropy is None or reward is None:
            return None
        if len(self.early) < EARLY_LOGS:
            self.early.append((entropy, reward, finite(logs.get("reward_std"))))
            return None
        level = sum(e for e, _, _ in self.early) / EARLY_LOGS
        base = sum(r for _, r, _ in self.early) / EARLY_LOGS
        stds = [s for _, _, s in self.early if s is not None]
        flat = sum(stds) / len(stds) if stds else FLAT_GAIN
        if level <= 0 or entropy >= FRACTION * level or reward - base >= max(flat, 1e-9):
            return None
        return (
            f"entropy fell to {entropy:.3g} from its early {level:.3g} (below {FRACTION:g}x) while the reward stayed "
            f"flat ({base:.3f} -> {reward:.3f}): the policy stopped exploring without learning the task. Raise "
            "trainer.temperature, lower the learning rate, add trainer.beta (KL to the reference), or clip higher "
            "(trainer.epsilon_high); completions.jsonl shows whether the samples of a prompt became identical"
        )


class Alerts(TrainerCallback):
    """Warn (log + ``alerts.jsonl``) once per kind when a sign lasts ``patience`` logged steps (``_check``), or
    ``patience`` held-out evaluations (``heldout.Divergence``); ``rewards`` and ``tools`` give hints and first causes,
    the dataset's ``columns`` are left out of hints."""

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
        self.streak = defaultdict(int, {kind: self.streak[kind] + 1 for kind in found})  # a sign missing: back to 0
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
        if logs and "loss" in logs:
            for kind, message in self._advance(logs).items():
                if self.streak[kind] == self.patience:
                    self._fire(state, kind, message)
        elif logs and is_heldout(logs):
            message = self.divergence.evaluated(state.global_step, logs)
            if message is not None and self.divergence.streak == self.patience:
                self._fire(state, DIVERGING, message)


def install_monitors(
    trainer: Any, logging_section: dict, output_dir: str, extra: list | None = None, *, console: bool = True
) -> Alerts | None:
    """The recipe's ``logging:`` on ``trainer``: completion samples, generation time, alerts (returned, or None when
    off), the caller's ``extra`` callbacks, and one compact console line per logging step unless ``console`` is off."""
    alerts = None
    if logging_section["alerts"]:
        alerts = Alerts(
            output_dir,
            patience=logging_section["alert_patience"],
            rewards=trainer.reward_funcs,  # the recipe's SafeRewards (and any passed or loaded by TRL)
            columns=getattr(trainer.train_dataset, "column_names", None) or (),  # what a reward reads as a column
            tools=getattr(trainer, "tools", None),
        )
    every, samples = logging_section["completions_every"], logging_section["completions_samples"]
    trl_adapter.time_generation(trainer, "timing/generation_s")  # another TRL version: no timing, no crash
    for cb in [CompletionSamples(trainer, every=every, samples=samples), alerts, *(extra or [])]:
        if cb is not None:
            trainer.add_callback(cb)
    if console:
        install_console(trainer)
    return alerts
