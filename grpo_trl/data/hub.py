"""Builders over a dataset the user names: ``hub`` (a Hub dataset or local file in TRL's prompt formats), ``files``
(a question column or template), ``math`` (boxed solutions), ``environment`` (placeholder rows for an environment
that owns its data), ``verifiers`` (a verifiers taskset's prompts, ``grpo_trl.environments.verifiers_env``)."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from string import Formatter
from typing import Any, Literal

from grpo_trl.data.registry import DataError, map_rows, register_builder, to_conversation
from grpo_trl.data.rows import missing
from grpo_trl.data.sources import column_names, first_row, load_file, load_hub_or_file, require_columns
from grpo_trl.environments import verifiers_env
from grpo_trl.errors import shown
from grpo_trl.rewards.text import extract_boxed

logger = logging.getLogger(__name__)

MAX_WIDTH = 10_000  # a user_template field's width or precision: {q:>999999999} is a GB per row
ROUTE = "environment"  # TRL's column naming each row's environment when there are several


def _is_messages(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(m, dict) and {"role", "content"} <= set(m) for m in value)
    )


def to_prompt(value: Any, prompt_format: str, system: str | None) -> str | list[dict]:
    """One row's ``prompt``: ``standard`` keeps text, ``conversational`` makes it a user turn, ``auto`` keeps what
    the data has unless a system prompt needs a conversation."""
    if isinstance(value, str):
        if prompt_format == "standard" or (prompt_format == "auto" and not system):
            return value
        return to_conversation(value, system)
    if not _is_messages(value):
        raise ValueError(
            f"holds {type(value).__name__} {str(value)[:60]!r}: a prompt is a string or a list of messages"
        )
    if prompt_format == "standard":
        raise ValueError("holds a message list, but prompt_format is standard (plain text)")
    messages = [{"role": m["role"], "content": m["content"]} for m in value]
    if system and messages[0]["role"] != "system":
        messages.insert(0, {"role": "system", "content": system})
    return messages


# unread, the columns are what the options name, and the solution column is assumed
@register_builder(
    "hub", system_prompt=None, columns=lambda o, b: {*(o.get("columns") or ()), "solution"}, local_copy=True
)
def hub(
    split: str = "train",
    *,
    name: str | None = None,
    path: str | None = None,
    config: str | None = None,
    prompt_column: str = "prompt",
    columns: list[str] | None = None,
    prompt_format: Literal["auto", "standard", "conversational"] = "auto",
    system_prompt: str | None = None,
    solution_column: str = "solution",
    base_dir: Path | None = None,
    streaming: bool = False,
):
    """Any Hub or local dataset: ``prompt`` from ``prompt_column`` (text or messages), ``solution``, other columns.
    A dataset with an ``environment`` column and no prompt is TRL's routing dataset: each row an empty user turn."""
    if prompt_format == "standard" and system_prompt:
        raise DataError(
            "data.system_prompt: a standard-format (plain text) prompt has no system turn; set prompt_format: "
            "conversational, or system_prompt: none"
        )
    if (name is None) == (path is None):
        raise DataError("data: builder hub needs exactly one of name (a Hub id or dataset folder) or path (a file)")
    ds = load_hub_or_file(name, config, split, path, base_dir, streaming)
    where, names = f"dataset {path or name!r}", column_names(ds)
    if prompt_column == "prompt" and "prompt" not in names and ROUTE in names:
        return ds.map(lambda row: {"prompt": to_conversation("", system_prompt)})
    keep = [c for c in names if c != prompt_column] if columns is None else list(columns)
    solution = [solution_column] if solution_column != "solution" else []  # "solution" is optional
    for key, wanted in (("prompt_column", [prompt_column]), ("columns", keep), ("solution_column", solution)):
        require_columns(ds, wanted, where, f"data.{key}")
    if solution_column in names and solution_column not in keep:
        keep.append(solution_column)
    if "prompt" in keep and prompt_column != "prompt":
        raise DataError(f"data.columns: {where} has its own 'prompt' column beside prompt_column {prompt_column!r}")
    first = (first_row(ds) or {}).get(prompt_column)
    if system_prompt and _is_messages(first) and first[0].get("role") == "system":
        logger.warning("data.system_prompt: %s already has system turns; they are kept", where)

    def to_row(row: dict, idx: int) -> dict:
        try:
            out = {"prompt": to_prompt(row[prompt_column], prompt_format, system_prompt)}
        except ValueError as exc:
            raise DataError(f"data.prompt_column: {where} row {idx}: {prompt_column!r} {exc}") from None
        if solution_column in row and solution_column != "solution":
            out["solution"] = row[solution_column]
        return out

    drop = [c for c in names if (c not in keep or c == prompt_column) and not c == prompt_column == "prompt"]
    return ds.map(to_row, with_indices=True, remove_columns=drop)


@register_builder("files", system_prompt=None, local_copy=True)  # path: the rows, counted by check
def files(
    split: str = "train",
    *,
    path: str,
    question_column: str = "question",
    columns: list[str] | None = None,
    user_template: str | None = None,
    base_dir: Path | None = None,
):
    """A local file: ``user`` from ``question_column`` (or ``user_template`` over any columns), plus ``columns``."""
    ds = load_file(path, base_dir)
    keep = [c for c in ds.column_names if c != question_column] if columns is None else list(columns)
    require_columns(ds, [question_column, *keep], f"data file {path!r}")
    fields = [question_column]
    if user_template is not None:
        try:
            parsed = [(f, spec or "") for _, f, spec, _ in Formatter().parse(user_template) if f is not None]
        except ValueError as exc:
            why = f"not a valid template ({exc}); write {{column}} fields"
            raise DataError(why, key="data.user_template") from None
        fields = [f for f, _ in parsed]
        if wide := [s for _, s in parsed if "{" in s or any(int(n) > MAX_WIDTH for n in re.findall(r"\d+", s))]:
            why = f"format spec {wide[0]!r} pads each prompt to any length (a GB per row: out of memory)"
            raise DataError(why, key="data.user_template", fix=f"use widths up to {MAX_WIDTH}, without {{column}}")
        positional = [f for f in fields if not f or f.isdigit()]
        if positional:
            raise DataError(
                f"has a positional field {{{positional[0]}}}; name the column instead, e.g. {{{question_column}}} "
                f"(columns: {', '.join(map(shown, ds.column_names))})",
                key="data.user_template",
            )
        fields = [f.split(".")[0].split("[")[0] for f in fields]
        require_columns(ds, fields, f"data file {path!r} (its columns in user_template)", "data.user_template")

    def to_row(row: dict) -> dict:  # a null or empty field gives no prompt: dropped or refused (data/rows.py)
        if any(missing(row[f]) for f in fields):
            return {"user": None}
        return {"user": user_template.format(**row) if user_template else str(row[question_column])}

    key = "data.user_template" if user_template else "data"
    return map_rows(ds, to_row, str(path), key, remove_columns=[c for c in ds.column_names if c not in keep])


@register_builder(
    "math", system_prompt="r1", known_sizes={"train": 7500, "test": 5000}, columns=("solution", "worked_solution")
)
def math(
    split: str = "train",
    *,
    source: str = "DigitalLearningGmbH/MATH-lighteval",
    config: str | None = "default",
    path: str | None = None,
    base_dir: Path | None = None,
    problem_column: str = "problem",
    solution_column_in: str = "solution",
):
    """Competition math: columns ``user`` (the problem), ``solution`` (boxed answer), ``worked_solution``."""
    ds = load_hub_or_file(source, config, split, path, base_dir)
    require_columns(ds, [problem_column, solution_column_in], f"math data ({path or source})")
    return map_rows(
        ds,
        lambda row: {
            "user": row[problem_column],
            "solution": extract_boxed(row[solution_column_in]) or row[solution_column_in].strip(),
            "worked_solution": row[solution_column_in],
        },
        str(path or source),
        remove_columns=ds.column_names,
    )


@register_builder(
    "environment", system_prompt="none", columns=lambda o, b: ("environment",) if o.get("environments") else ()
)
def environment(split: str = "train", *, size: int = 64, environments: list[str] | None = None):
    """Placeholder rows (one empty user turn each) for an environment whose ``reset()`` returns the prompt;
    ``environments``: names for an ``environment`` column routing each row (several environments).

    >>> environment(size=3, environments=["coding", "game"])["environment"][:]
    ['coding', 'game', 'coding']
    """
    from datasets import Dataset

    rows: dict[str, list] = {"user": [""] * size}
    if environments:
        rows["environment"] = [environments[i % len(environments)] for i in range(size)]
    return Dataset.from_dict(rows)


@register_builder("verifiers", system_prompt="none", columns=(verifiers_env.COLUMN,))
def verifiers(split: str = "train", *, taskset: str, args: dict | None = None, size: int | None = None):
    """A verifiers taskset (``args``: its TasksetConfig fields): each row a task's prompt and ``vf_task``."""
    from datasets import Dataset

    return Dataset.from_dict(verifiers_env.rows(taskset, args, size))
