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
        if not isinstance(rates, dict):
            raise ValueError("rates must map prompt hashes to {p, passed, n}")  # not an assert: python -O drops those
        if (bad := next((k for k, v in rates.items() if not _is_rate(v)), None)) is not None:
            raise ValueError(f"rates[{bad[:20]!r}] is {str(rates[bad])[:40]}, not {{p: a rate in [0, 1], passed, n}}")
    except FileNotFoundError:
        raise DataError(
            f"{path} does not exist", key="data.pass_rate.file", fix="write it with `grpo-trl filter`"
        ) from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        why = f"{path} is not a pass-rate file from `grpo-trl filter` ({exc})"
        raise DataError(why, key="data.pass_rate.file") from None
    return rates


def _is_rate(entry: Any) -> bool:
    p = entry.get("p") if isinstance(entry, dict) else None
    return isinstance(p, int | float) and not isinstance(p, bool) and 0 <= p <= 1


def band_rates(option: dict, base_dir: Path | None) -> dict[str, dict]:
    """The rates of ``data.pass_rate.file`` (relative to the recipe's folder): train and check read it alike."""
    path = Path(option["file"]).expanduser()
    return load_rates(path if path.is_absolute() or base_dir is None else Path(base_dir) / path)


def keep_band(ds: Any, option: dict, base_dir: Path | None, dropped: dict[str, int]) -> Any:
    """Rows of ``ds`` inside the band; drops counted by reason in ``dropped``."""
    rates = band_rates(option, base_dir)
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
