"""The short table ``grpo-trl eval`` ends with (the whole report is in ``eval.json``)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any


def _num(value: Any, digits: int = 3) -> str:
    return f"{value:.{digits}f}" if isinstance(value, int | float) and math.isfinite(value) else "n/a"


def _pass_row(report: dict, k: int) -> tuple[str, str]:
    entry = report.get("pass@k", {}).get(str(k)) or {"estimate": report.get(f"pass@{k}")}
    low, high = entry.get("ci_low"), entry.get("ci_high")
    interval = f"  (95% interval {_num(low)}-{_num(high)})" if low is not None and high is not None else ""
    return f"pass@{k}", _num(entry.get("estimate")) + interval


def format_summary(report: dict, seconds: float) -> str:
    """``report`` (what ``evaluate`` returns) as a few aligned lines: pass@1, pass@n, counts, time, files.

    >>> print(format_summary({"model": "m", "backend": "transformers", "split": "eval", "prompts": 2, "n": 4,
    ...     "pass@1": 0.5, "pass@4": 1.0, "reward_mean": 0.25, "rewards": {"acc": 0.5}, "output_dir": "out",
    ...     "mean_completion_length": 12.0, "format_failure_rate": 0.0, "generation_errors": 0}, 1.5))
    grpo-trl eval: m on split eval (transformers)
      pass@1       0.500
      pass@4       1.000
      rows         2 prompts x 4 completions = 8
      reward       0.250  (acc 0.500)
      length       12 tokens; 0.0% without an <answer> block
      time         1.5 s
      results      out/eval.json, out/eval_completions.jsonl
    """
    n, prompts = report.get("n", 0), report.get("prompts", 0)
    per = ", ".join(f"{name} {_num(v)}" for name, v in report.get("rewards", {}).items())
    rows = [_pass_row(report, 1), *([_pass_row(report, n)] if n > 1 else [])]
    rows += [
        ("rows", f"{prompts} prompts x {n} completions = {prompts * n}"),
        ("reward", _num(report.get("reward_mean")) + (f"  ({per})" if per else "")),
        (
            "length",
            f"{_num(report.get('mean_completion_length'), 0)} tokens; "
            f"{_num(100 * (report.get('format_failure_rate') or 0.0), 1)}% without an <answer> block",
        ),
    ]
    if report.get("generation_errors"):
        rows.append(("errors", f"{report['generation_errors']} failed requests (examples in eval.json)"))
    out = Path(str(report.get("output_dir", ".")))
    rows += [("time", f"{seconds:.1f} s"), ("results", f"{out / 'eval.json'}, {out / 'eval_completions.jsonl'}")]
    head = f"grpo-trl eval: {report.get('model')} on split {report.get('split')} ({report.get('backend')})"
    return "\n".join([head, *(f"  {key:<12} {value}" for key, value in rows)])
