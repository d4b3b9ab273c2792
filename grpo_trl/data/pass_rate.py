"""Difficulty filtering: keep the prompts whose measured pass rate lies in a band (``data.pass_rate``).

A prompt whose ``num_generations`` completions all pass (or all fail) gets zero advantage in GRPO and teaches
nothing. ``grpo-trl filter RECIPE --model M --n 8`` measures every prompt's pass rate with an eval backend and stores
it in a JSON file keyed by :func:`prompt_hash` (a stable hash of the prompt messages, so the file survives
reordering, shuffling and new rows). The data option then keeps the band::

    data:
      builder: gsm8k
      pass_rate: {file: gsm8k.pass_rates.json, above: 0.0, below: 1.0}   # keep 0 < p < 1

``above`` / ``below`` are strict bounds (``null`` for none); ``unscored: keep`` (default) or ``drop`` decides about
prompts the file does not know. Drops are counted by reason in the dataset summary (``check``, ``data``, ``train``).

Example:
    >>> prompt_hash([{"role": "user", "content": "2+2?"}])
    'ed60fcb984823fb0'
    >>> [str(p) for p in pass_rate_problems({"file": "r.json", "above": 0.5, "below": 0.5})]
    ['data.pass_rate: above (0.5) must be smaller than below (0.5)']
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

from grpo_trl.errors import DataError, Problem
from grpo_trl.io import read_json

KEYS = {"file", "above", "below", "unscored"}


def prompt_hash(prompt: Any) -> str:
    """16 hex digits identifying a prompt (a message list or a string) by its content alone."""
    text = json.dumps(prompt, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def pass_rate_problems(option: Any) -> list[Problem]:
    """Problems in a ``data.pass_rate`` option (no file named); empty when it is fine."""
    key = "data.pass_rate"
    if option is None:
        return []
    if not isinstance(option, dict):
        return [Problem("", key, "must be a mapping like {file: pass_rates.json, above: 0.0, below: 1.0}")]
    known = ", ".join(sorted(KEYS))
    problems = [Problem("", f"{key}.{k}", f"unknown option; options: {known}") for k in option if k not in KEYS]
    if not isinstance(option.get("file"), str) or not option.get("file"):
        problems.append(
            Problem("", f"{key}.file", "required: the file `grpo-trl filter` wrote (relative to the recipe)")
        )
    bounds = {}
    for name in ("above", "below"):
        value = option.get(name, 0.0 if name == "above" else 1.0)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value)
        ):
            problems.append(Problem("", f"{key}.{name}", f"must be a number (or null for no bound), got {value!r}"))
        else:
            bounds[name] = value
    low, high = bounds.get("above"), bounds.get("below")
    if low is not None and high is not None and low >= high:
        problems.append(Problem("", key, f"above ({low}) must be smaller than below ({high})"))
    if option.get("unscored", "keep") not in ("keep", "drop"):
        problems.append(Problem("", f"{key}.unscored", f"must be keep or drop, got {option.get('unscored')!r}"))
    return problems


def load_rates(path: Path) -> dict[str, dict]:
    """``{prompt hash: {"p": rate, "passed": c, "n": n}}`` from a file ``grpo-trl filter`` wrote."""
    try:
        data = read_json(path)  # the one bounded reader: a FIFO of that name was waited on forever
        rates = data["rates"]
        assert isinstance(rates, dict) and all(isinstance(v["p"], int | float) for v in rates.values())
    except FileNotFoundError:
        raise DataError(f"data.pass_rate.file: {path} does not exist (write it with `grpo-trl filter`)") from None
    except (OSError, ValueError, KeyError, TypeError, AssertionError) as exc:
        raise DataError(
            f"data.pass_rate.file: {path} is not a pass-rate file from `grpo-trl filter` ({exc})"
        ) from None
    return rates


def keep_band(ds: Any, option: dict, base_dir: Path | None, dropped: dict[str, int]) -> Any:
    """Rows of ``ds`` whose pass rate lies strictly between ``above`` and ``below``; drops counted in ``dropped``."""
    problems = pass_rate_problems(option)
    if problems:
        raise DataError("; ".join(f"{p.key}: {p.text}" for p in problems))
    path = Path(option["file"])
    if not path.is_absolute() and base_dir is not None:
        path = Path(base_dir) / path
    rates = load_rates(path)
    low, high = option.get("above", 0.0), option.get("below", 1.0)
    keep_unscored = option.get("unscored", "keep") == "keep"
    reasons: list[str | None] = []
    for prompt in ds["prompt"]:
        entry = rates.get(prompt_hash(prompt))
        if entry is None:
            reasons.append(None if keep_unscored else "pass_rate (unscored)")
        elif low is not None and entry["p"] <= low:
            reasons.append(f"pass_rate (p <= {low:g}, too hard)")
        elif high is not None and entry["p"] >= high:
            reasons.append(f"pass_rate (p >= {high:g}, too easy)")
        else:
            reasons.append(None)
    for reason in reasons:
        if reason is not None:
            dropped[reason] = dropped.get(reason, 0) + 1
    return ds.select([i for i, r in enumerate(reasons) if r is None])
