"""``data.pass_rate``: keep the prompts whose pass rate (from ``grpo-trl filter``, by :func:`prompt_hash`) lies
strictly between ``above`` and ``below``: a prompt that always or never passes teaches GRPO nothing."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from grpo_trl.errors import DataError
from grpo_trl.io import read_json


def prompt_hash(prompt: Any) -> str:
    """16 hex digits identifying a prompt (a message list or a string) by its content alone.

    >>> prompt_hash([{"role": "user", "content": "2+2?"}])
    'ed60fcb984823fb0'
    """
    text = json.dumps(prompt, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def load_rates(path: Path) -> dict[str, dict]:
    """``{prompt hash: {"p": rate, "passed": c, "n": n}}`` from a file ``grpo-trl filter`` wrote."""
    try:
        rates = read_json(path)["rates"]  # the one bounded reader: a FIFO of that name was waited on forever
        if not isinstance(rates, dict) or not all(isinstance(v["p"], int | float) for v in rates.values()):
            raise ValueError("rates must map prompt hashes to {p, passed, n}")  # not an assert: python -O drops those
    except FileNotFoundError:
        raise DataError(
            f"{path} does not exist", key="data.pass_rate.file", fix="write it with `grpo-trl filter`"
        ) from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        why = f"{path} is not a pass-rate file from `grpo-trl filter` ({exc})"
        raise DataError(why, key="data.pass_rate.file") from None
    return rates


def keep_band(ds: Any, option: dict, base_dir: Path | None, dropped: dict[str, int]) -> Any:
    """Rows of ``ds`` inside the band; drops counted by reason in ``dropped``."""
    path = Path(option["file"])
    rates = load_rates(path if path.is_absolute() or base_dir is None else Path(base_dir) / path)
    low, high = option.get("above", 0.0), option.get("below", 1.0)
    keep_unscored = option.get("unscored", "keep") == "keep"

    def why(entry: dict | None) -> str | None:
        if entry is None:
            return None if keep_unscored else "pass_rate (unscored)"
        if low is not None and entry["p"] <= low:
            return f"pass_rate (p <= {low:g}, too hard)"
        return f"pass_rate (p >= {high:g}, too easy)" if high is not None and entry["p"] >= high else None

    reasons = [why(rates.get(prompt_hash(prompt))) for prompt in ds["prompt"]]
    for reason in filter(None, reasons):
        dropped[reason] = dropped.get(reason, 0) + 1
    return ds.select([i for i, reason in enumerate(reasons) if reason is None])
