"""Any Hub or local dataset: a prompt column (a string in TRL's standard format, or a message list in the
conversational format), an optional solution column (given to rewards as ``solution``), other columns kept for rewards.
A dataset with an ``environment`` column and no ``prompt`` is TRL's multi-environment routing dataset: each row is an
empty user turn that the row's environment completes in ``reset()``, as TRL does.

Example recipe section::

    data:
      builder: hub
      name: open-r1/OpenR1-Math-220k   # a Hub id or a local dataset folder (load_dataset), or
      # path: problems.jsonl           # a local JSONL / JSON / Parquet / CSV file (relative to the recipe)
      config: default
      split: train
      prompt_column: problem
      solution_column: answer          # rewards read it as `solution`
      columns: [level]                 # the other columns rewards may read (default: all of them)
      prompt_format: auto              # auto | standard | conversational

``prompt_format``: ``standard`` keeps string prompts as strings (TRL then applies no chat template), and needs no
system prompt; ``conversational`` makes each string a user turn (after the system prompt, if any); ``auto`` keeps
what the dataset has, except that a system prompt turns strings into conversations.

Example:
    >>> to_prompt("2+2?", "auto", None), to_prompt("2+2?", "auto", "Be brief.")
    ('2+2?', [{'role': 'system', 'content': 'Be brief.'}, {'role': 'user', 'content': '2+2?'}])
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from grpo_trl.data.registry import DataError, load_file, load_hub_or_file, register_builder
from grpo_trl.data.sources import column_names, first_row

logger = logging.getLogger(__name__)

PROMPT_FORMATS = ("auto", "standard", "conversational")


def _is_messages(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(m, dict) and "role" in m and "content" in m for m in value)
    )


def to_prompt(value: Any, prompt_format: str, system: str | None) -> str | list[dict]:
    """One row's ``prompt`` from the prompt column's value (``ValueError`` when it is neither text nor messages)."""
    if isinstance(value, str):
        if prompt_format == "standard":
            return value
        if prompt_format == "auto" and not system:
            return value
        turns = [{"role": "system", "content": system}] if system else []
        return turns + [{"role": "user", "content": value}]
    if _is_messages(value):
        if prompt_format == "standard":
            raise ValueError("holds a message list, but prompt_format is standard (plain text)")
        messages = [{"role": m["role"], "content": m["content"]} for m in value]
        if system and messages[0]["role"] != "system":
            messages.insert(0, {"role": "system", "content": system})
        return messages
    raise ValueError(f"holds {type(value).__name__} {str(value)[:60]!r}: a prompt is a string or a list of messages")


def _load(name: str | None, path: str | None, config: str | None, split: str, base_dir: Path | None, stream: bool):
    if (name is None) == (path is None):
        raise DataError("data: builder hub needs exactly one of name (a Hub id or dataset folder) or path (a file)")
    return load_hub_or_file(name, config, split, path, base_dir, stream)


@register_builder(
    "hub", system_prompt=None, columns=lambda options, base_dir: columns_of(options, base_dir), local_copy=True
)
def hub(
    split: str = "train",
    *,
    name: str | None = None,
    path: str | None = None,
    config: str | None = None,
    prompt_column: str = "prompt",
    columns: list[str] | None = None,
    prompt_format: str = "auto",
    system_prompt: str | None = None,
    solution_column: str = "solution",
    base_dir: Path | None = None,
    streaming: bool = False,
):
    """Any Hub or local dataset: ``prompt`` from ``prompt_column`` (text or messages), ``solution``, other columns.
    ``streaming`` (``data.streaming``): read as training consumes it, every row mapped lazily."""
    if prompt_format not in PROMPT_FORMATS:
        raise DataError(f"data.prompt_format: {prompt_format!r} is not one of {', '.join(PROMPT_FORMATS)}")
    if prompt_format == "standard" and system_prompt:
        raise DataError(
            "data.system_prompt: a standard-format (plain text) prompt has no system turn; set prompt_format: "
            "conversational, or system_prompt: none"
        )
    ds = _load(name, path, config, split, base_dir, streaming)
    where = f"dataset {path or name!r}"
    names = column_names(ds)
    if prompt_column == "prompt" and "prompt" not in names and ROUTE in names:
        return _routing_only(ds, system_prompt)
    if prompt_column not in names:
        raise DataError(
            f"data.prompt_column: {where} has no column {prompt_column!r}; its columns: {', '.join(names)}"
        )
    keep = [c for c in names if c != prompt_column] if columns is None else list(columns)
    missing = [c for c in keep if c not in names]
    if missing:
        raise DataError(
            f"data.columns: {where} has no column(s) {', '.join(missing)}; its columns: {', '.join(names)}"
        )
    if solution_column != "solution" and solution_column not in names:
        raise DataError(f"data.solution_column: {where} has no column {solution_column!r}")
    if solution_column in names and solution_column not in keep:
        keep.append(solution_column)
    first = (first_row(ds) or {}).get(prompt_column)
    if system_prompt and _is_messages(first) and first[0].get("role") == "system":
        logger.warning("data.system_prompt: %s already has system turns; they are kept", where)

    def to_row(row: dict, idx: int) -> dict:
        try:
            prompt = to_prompt(row[prompt_column], prompt_format, system_prompt)
        except ValueError as exc:
            raise DataError(f"data.prompt_column: {where} row {idx}: {prompt_column!r} {exc}") from None
        out = {"prompt": prompt}
        if solution_column in row and solution_column != "solution":
            out["solution"] = row[solution_column]
        return out

    drop = [c for c in names if c not in keep and c != prompt_column]
    if prompt_column != "prompt":
        drop.append(prompt_column)
    if "prompt" in keep and prompt_column != "prompt":
        raise DataError(f"data.columns: {where} has its own 'prompt' column beside prompt_column {prompt_column!r}")
    return ds.map(to_row, with_indices=True, remove_columns=drop)


ROUTE = "environment"  # TRL's column naming each row's environment when there are several


def _routing_only(ds: Any, system: str | None) -> Any:
    """TRL's multi-environment dataset that only routes (an ``environment`` column, no prompt): each row gets the
    empty user turn TRL gives a row without a prompt, which the environment's ``reset()`` completes."""
    turns = [{"role": "system", "content": system}] if system else []
    return ds.map(lambda row: {"prompt": turns + [{"role": "user", "content": ""}]})


def columns_of(cfg: dict, base_dir: Path | None) -> set[str]:
    """The columns rewards will see, without building: read from a local file, else from ``columns``/``solution``."""
    solution = cfg.get("solution_column", "solution")
    if cfg.get("path"):
        ds = load_file(cfg["path"], base_dir)
        names = set(ds.column_names) - {cfg.get("prompt_column", "prompt")}
        if cfg.get("columns") is not None:
            names = set(cfg["columns"])
        if solution in ds.column_names:
            names.add("solution")
        return names
    # a Hub dataset is not downloaded by `check`: its solution column is assumed, and checked when it loads
    return set(cfg.get("columns") or ()) | {"solution"}
