"""What a run shows as it trains: one readable console line per logging step instead of TRL's whole metrics dict
(which still goes to ``trainer_state.json`` and ``report_to``) and completion samples.

    >>> format_line({"reward": 0.5, "reward_std": 0.25, "rewards/acc/mean": 0.5, "kl": 0.001}, 3, 10, 2.0)
    'step 3/10 | reward 0.500 ±0.250 (acc 0.500) | kl 0.0010 | 2.00 s/step | ETA 14s'
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path
from typing import Any

from transformers import TrainerCallback
from transformers.trainer_callback import PrinterCallback, ProgressCallback

from grpo_trl import trl_adapter
from grpo_trl.io import append_lines
from grpo_trl.monitor.heldout import GREEDY_KEY, PREFIX, TIME_KEY, is_heldout
from grpo_trl.rewards.text import completion_text
from grpo_trl.tools.transcript import turns


def _duration(seconds: float) -> str:
    """``5s``, ``6m46s``, ``2h02m``."""
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def _num(value: Any, fmt: str) -> str | None:
    return format(value, fmt) if isinstance(value, (int, float)) and math.isfinite(value) else None


# the training line's metrics after the reward (an eval line shows the same, from its eval_ keys)
METRICS = (("kl", "kl", ".4f"), ("entropy", "entropy", ".2f"), ("completions/mean_length", "len", ".0f"),
           ("completions/clipped_ratio", "clipped", ".2f"))  # fmt: skip


def _parts(logs: dict) -> list[str]:
    """``reward 0.412 ±0.310 (a 0.200, b 0.900)`` (with a finite ``reward``), then each of ``METRICS`` logged."""
    parts = []
    if (reward := _num(logs.get("reward"), ".3f")) is not None:
        std = _num(logs.get("reward_std"), ".3f")
        per = [
            f"{k[len('rewards/') : -len('/mean')]} {_num(v, '.3f')}"
            for k, v in logs.items()
            if k.startswith("rewards/") and k.endswith("/mean") and _num(v, ".3f") is not None
        ]
        parts.append(f"reward {reward}" + (f" ±{std}" if std else "") + (f" ({', '.join(per)})" if per else ""))
    return parts + [f"{label} {v}" for key, label, fmt in METRICS if (v := _num(logs.get(key), fmt)) is not None]


def format_heldout_line(logs: dict, step: int) -> str:
    """The line for one held-out evaluation (``heldout:``): pass@k sampled, greedy, its prompts and wall time.

    >>> format_heldout_line({"heldout/pass@1": 0.25, "heldout/pass@4": 0.5, "heldout/greedy/pass@1": 0.375,
    ...                      "heldout/prompts": 32, "heldout/time_s": 4.2}, 50)
    'heldout at step 50 | pass@1 0.250 | pass@4 0.500 | greedy pass@1 0.375 | 32 prompts in 4.2 s'
    """
    parts = [f"heldout at step {step}"]
    passes = sorted((int(k[len(PREFIX) + 5 :]), v) for k, v in logs.items() if k.startswith(PREFIX + "pass@"))
    parts += [f"pass@{k} {_num(v, '.3f')}" for k, v in passes if _num(v, ".3f") is not None]
    if _num(logs.get(GREEDY_KEY), ".3f") is not None:
        parts.append(f"greedy pass@1 {_num(logs[GREEDY_KEY], '.3f')}")
    if isinstance(logs.get(PREFIX + "prompts"), int) and _num(logs.get(TIME_KEY), ".1f") is not None:
        parts.append(f"{logs[PREFIX + 'prompts']} prompts in {_num(logs[TIME_KEY], '.1f')} s")
    return " | ".join(parts)


def format_line(logs: dict, step: int, total: int | None, sec_per_step: float | None) -> str:
    """The compact line for one log entry."""
    parts = [f"step {step}/{total}" if total else f"step {step}", *_parts(logs)]
    if sec_per_step:
        parts.append(f"{sec_per_step:.2f} s/step")
        if total and total > step:
            parts.append(f"ETA {_duration((total - step) * sec_per_step)}")
    return " | ".join(parts)


class ConsoleLine(TrainerCallback):
    """Print ``format_line`` for each training log entry (main process only); an evaluation gets the same metrics on
    its own line (``eval at step 4 | reward 0.500 ...``), a held-out one ``format_heldout_line``."""

    def __init__(self, stream: Any = None):
        self.stream = stream
        self._start: tuple[float, int] | None = None

    def on_train_begin(self, args, state, control, **kwargs):
        self._start = (time.perf_counter(), state.global_step)  # a resumed run counts from where it resumed

    def _write(self, line: str) -> None:
        from tqdm.auto import tqdm

        tqdm.write(line, file=self.stream or sys.stdout)  # above the progress bar, not through it

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs:
            return
        if "loss" in logs:
            rate = None
            if self._start is not None and state.global_step > self._start[1]:
                rate = (time.perf_counter() - self._start[0]) / (state.global_step - self._start[1])
            self._write(format_line(logs, state.global_step, state.max_steps or None, rate))
        elif evaluated := {k[len("eval_") :]: v for k, v in logs.items() if k.startswith("eval_")}:
            self._write(f"eval at step {state.global_step} | " + (" | ".join(_parts(evaluated)) or "done"))
        elif is_heldout(logs):
            self._write(format_heldout_line(logs, state.global_step))


def install_console(trainer: Any) -> None:
    """Swap the metrics dict ``trainer`` prints at each log (``PrinterCallback``, or under the progress bar) for
    ``ConsoleLine``."""
    trainer.remove_callback(PrinterCallback)
    for cb in trainer.callback_handler.callbacks:
        if type(cb) is ProgressCallback:
            cb.on_log = lambda *args, **kwargs: None  # the bar stays, the dict under it goes
    trainer.add_callback(ConsoleLine())


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
        # one completion per distinct prompt first (its first), so the sample covers several prompts
        firsts = set({_text(p): i for i, p in reversed(list(enumerate(prompts)))}.values())
        order = sorted(range(len(prompts)), key=lambda i: i not in firsts)
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
