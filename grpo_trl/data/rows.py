"""Rows without a value where the prompt or a reward needs one (a missing key, null, "" or []): dropped with a count
and the first offending line, or refused (``data.bad_rows: error``); one function for train, data and check."""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
from collections.abc import Iterable, Iterator
from typing import Any

from grpo_trl.errors import DataError

logger = logging.getLogger(__name__)
PROMPT_COLUMNS = ("user", "prompt")  # what a builder makes the prompt from: one of them is always needed
# set by the commands (train, data, check), which then also log what was dropped; unset: a one-row peek, quiet
_NEEDED: contextvars.ContextVar[tuple[str, ...] | None] = contextvars.ContextVar("grpo_trl_needed", default=None)


@contextlib.contextmanager
def needing(columns: Iterable[str]) -> Iterator[None]:
    """Datasets built in this block also need a value in ``columns`` (the columns the recipe's rewards read)."""
    token = _NEEDED.set(tuple(columns))
    try:
        yield
    finally:
        _NEEDED.reset(token)


def reward_columns(rewards: Iterable[Any]) -> list[str]:
    """The dataset columns ``rewards`` read (parameters without a default), each once."""
    from grpo_trl.rewards.signature import required_columns

    return list(dict.fromkeys(c for r in rewards for c in required_columns(r)))


def missing(value: Any) -> bool:
    """No value: None, blank text, an empty list or mapping."""
    if isinstance(value, str):
        return not value.strip()
    return value is None or (isinstance(value, (list, tuple, dict)) and not value)


def _bad(column: str, value: Any) -> bool:
    """A prompt column is bad only when None (the ``environment`` builder's empty turn is a placeholder)."""
    return value is None if column in PROMPT_COLUMNS else missing(value)


def place(index: int, where: str) -> str:
    """``line N of FILE`` for a JSONL / CSV file (a header line first), else ``row N``."""
    lower = where.lower().removesuffix(".gz")
    if lower.endswith((".jsonl", ".ndjson", ".jsonlines", ".csv")):
        return f"line {index + 1 + lower.endswith('.csv')} of {where}"
    return f"row {index + 1}" + (f" of {where}" if where else "")


def drop_bad_rows(
    ds: Any, needed: Iterable[str] | None = None, how: str = "drop", where: str = ""
) -> tuple[Any, dict]:
    """``ds`` without the rows lacking a value in the prompt or a ``needed`` column, and ``{reason: count}``."""
    told = needed if needed is not None else _NEEDED.get()
    columns = [c for c in (*PROMPT_COLUMNS, *(told or ())) if c in (ds.column_names or ())]
    columns = list(dict.fromkeys(c for c in columns if c != "prompt" or "user" not in columns))
    if not columns:
        return ds, {}
    what = f"a missing or empty {'/'.join(columns)}"

    def refuse(index: int, count: str) -> DataError:
        return DataError(
            f"{count} with {what}, the first at {place(index, where)}",
            key="data.bad_rows",
            fix="fill in or remove such rows, or set data.bad_rows: drop to train without them",
        )

    if not hasattr(ds, "__len__"):  # streaming: a lazy filter
        seen: list[int] = []

        def keep(row: dict, index: int) -> bool:
            if not any(_bad(c, row[c]) for c in columns):
                return True
            if how == "error":
                raise refuse(index, "a row")
            if not seen and told is not None:
                seen.append(index)
                _warn(f"dropping rows with {what} (first: {place(index, where)})")
            return False

        return ds.filter(keep, with_indices=True), {}
    values = [ds[c] for c in columns]
    bad = [i for i, row in enumerate(zip(*values)) if any(_bad(c, v) for c, v in zip(columns, row))]
    if not bad:
        return ds, {}
    if how == "error":
        raise refuse(bad[0], f"{len(bad)} row(s)")
    first = place(bad[0], where)
    if told is not None:
        _warn(f"dropped {len(bad)} row(s) with {what} (first: {first}); data.bad_rows: error refuses them")
    drop = set(bad)
    return ds.select([i for i in range(len(ds)) if i not in drop]), {f"{what} (first: {first})": len(bad)}


@functools.cache  # check builds a section more than once: each warning once
def _warn(message: str) -> None:
    logger.warning(message)
