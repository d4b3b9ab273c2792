"""``build_dataset``: a checked ``data:`` section built by its builder, then what every builder shares (system
prompt, ``prompt`` column, bad rows, shuffle, filters, limit, held-out split, streaming, weighted mixtures)."""

from __future__ import annotations

import inspect
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grpo_trl.data.filters import filter_by_tokens
from grpo_trl.data.options import COMMON_DATA_KEYS, builder_options_model, resolve_system_prompt, validate_data_config
from grpo_trl.data.pass_rate import keep_band
from grpo_trl.data.registry import get_builder, to_conversation
from grpo_trl.data.render import Rendering
from grpo_trl.data.rows import drop_bad_rows
from grpo_trl.data.sources import column_names, decoding, first_row
from grpo_trl.errors import DataError, Problem

STREAM_REFUSES = ("mixture", "eval_size", "pass_rate", "sampler", "dynamic_sampling")  # they need every row at once


@dataclass
class DataResult:
    train: Any
    eval: Any = None
    loaded: int = 0
    dropped: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        if not hasattr(self.train, "__len__"):
            return "streamed: rows are read, mapped and filtered as training consumes them"
        drops = ", ".join(f"{v} by {k}" for k, v in self.dropped.items() if v) or "none"
        held = f", eval {len(self.eval)}" if self.eval is not None else ""
        return f"{self.loaded} rows loaded, dropped: {drops}; train {len(self.train)}{held}"


def streaming_problems(cfg: dict, trainer: dict, file: str) -> list[Problem]:
    """``data.streaming``: needs ``trainer.max_steps``; options needing every row are refused."""
    if not cfg.get("streaming"):
        return []
    found = [
        Problem(file, f"data.{key}", "needs every row at once; a streamed dataset has none", "drop it or streaming")
        for key in STREAM_REFUSES
        if cfg.get(key) is not None
    ]
    if not isinstance(trainer.get("max_steps"), int) or trainer["max_steps"] <= 0:
        why = "data.streaming: a streamed dataset has no length, so the number of steps cannot be derived from "
        found.append(
            Problem(file, "trainer.max_steps", why + "num_train_epochs", "set trainer.max_steps to the steps to train")
        )
    return found


def _checked(cfg: dict) -> None:
    problems = validate_data_config(cfg)
    if problems:
        raise DataError("; ".join(f"{p.key}: {p.text}" for p in problems))


def build_one(
    cfg: dict, tokenizer: Any, base_dir: Path | None, split_key: str = "split", rendering: Rendering | None = None
) -> tuple[Any, int, dict]:
    """One builder's dataset (not a mixture) after the common options: ``(dataset, rows loaded, rows dropped)``."""
    _checked(cfg)
    builder = get_builder(cfg["builder"])
    options = {k: v for k, v in cfg.items() if k not in COMMON_DATA_KEYS}
    options |= builder_options_model(builder).model_validate(options).model_dump(exclude_unset=True)  # YAML's no
    params = inspect.signature(builder.func).parameters
    system = resolve_system_prompt(cfg.get("system_prompt", builder.system_prompt))
    stream = bool(cfg.get("streaming")) and split_key == "split"  # the eval split stays in memory (it is small)
    asked = {"base_dir": base_dir, "system_prompt": system, "solution_column": cfg.get("solution_column", "solution")}
    options |= {k: v for k, v in {**asked, "streaming": stream}.items() if k in params}
    ds = builder.func(split=cfg.get(split_key) or "train", **options)
    if stream and hasattr(ds, "to_iterable_dataset"):  # built in memory: streamed from there, mapped lazily
        ds = decoding(ds, True).to_iterable_dataset()
    columns = column_names(ds)
    if "user" not in columns and "prompt" not in columns:  # pragma: no cover - a builder bug
        raise DataError(f"builder {builder.name!r} returned no 'user' (or 'prompt') column")
    loaded = len(ds) if hasattr(ds, "__len__") else 0
    ds, dropped = drop_bad_rows(
        ds, how=cfg.get("bad_rows", "drop"), where=str(cfg.get("path") or cfg.get("source") or "")
    )
    if cfg.get("shuffle"):
        ds = ds.shuffle(seed=cfg.get("seed", 42))  # a stream: within datasets' buffer of 1,000 rows
    if "user" in columns:  # a builder that makes the prompt itself has none
        ds = ds.map(lambda row: {"prompt": to_conversation(row["user"], system)}, remove_columns=["user"])
    pass_rate = cfg.get("pass_rate")  # the band sits between the token filters and limit
    ds, by_tokens = filter_by_tokens(ds, {**cfg, "limit": None} if pass_rate else cfg, tokenizer, rendering)
    dropped |= by_tokens
    if pass_rate:
        ds = keep_band(ds, pass_rate, base_dir, dropped)
        if cfg.get("limit") is not None:
            ds = ds.select(range(min(cfg["limit"], len(ds))))
    if first_row(ds) is None:  # streamed too (read up to the first row that passes); train, data and check alike
        raise DataError(
            f"the dataset is empty after filtering ({DataResult(ds, None, loaded, dropped).summary()}); raise "
            "data.max_prompt_tokens / max_solution_tokens, fill in the rows without a value, or check the source"
        )
    return decoding(ds, True), loaded, dropped  # read undecoded (sources.py): an image opens when a row is read


def mixture_parts(cfg: dict) -> list[dict]:
    """Each part of ``data.mixture`` as ``build_one`` takes it (no weight; the section's system prompt by default)."""
    shared = {"system_prompt": cfg["system_prompt"]} if "system_prompt" in cfg else {}
    return [shared | {k: v for k, v in part.items() if k != "weight"} for part in cfg["mixture"]]


def _mixture(cfg: dict, tokenizer: Any, base: Path | None, rendering: Rendering | None) -> DataResult:
    _checked(cfg)
    built, loaded, dropped = [], 0, Counter()
    for part in mixture_parts(cfg):
        ds, n, d = build_one(part, tokenizer, base, rendering=rendering)
        built.append(ds)
        loaded += n
        dropped.update(d)
    weights = [float(p.get("weight", 1.0)) for p in cfg["mixture"]]
    total_w = sum(w / max(weights) for w in weights)  # scaled first: weights near 1e308 must not sum to inf
    shares = [w / max(weights) / total_w for w in weights]
    size = cfg.get("size") or int(min(len(ds) / s for ds, s in zip(built, shares) if s))  # 1e-308 / 1e308: 0
    counts = [round(size * s) for s in shares]
    if not any(counts):
        raise DataError(f"{size} row(s) shared by the weights give each part 0 rows", key="data.size", fix="raise it")
    for ds, c, part in zip(built, counts, cfg["mixture"]):
        if c > len(ds):
            raise DataError(f"data.mixture: builder {part['builder']!r} has {len(ds)} rows, the mixture asks for {c}")
    seed = cfg.get("seed", 42)
    pieces = [ds.shuffle(seed=seed).select(range(c)) for ds, c in zip(built, counts)]
    return DataResult(join_parts(pieces).shuffle(seed=seed), None, loaded, dict(dropped))


def join_parts(pieces: list, numbers: list[int] | None = None) -> Any:
    """A mixture's parts (``numbers``: their places in it) as one dataset, or a ``DataError`` naming the column."""
    from datasets import concatenate_datasets

    try:
        return concatenate_datasets(list(pieces))
    except ValueError:
        raise _unjoinable(pieces, numbers or list(range(1, len(pieces) + 1))) from None


def _unjoinable(pieces: list, numbers: list[int]) -> DataError:
    from itertools import combinations

    from datasets import concatenate_datasets

    for col in dict.fromkeys(c for ds in pieces for c in ds.column_names):
        for (i, a), (j, b) in combinations(zip(numbers, pieces), 2):
            try:
                if col in a.column_names and col in b.column_names:
                    concatenate_datasets([a.select_columns([col]), b.select_columns([col])])
            except ValueError:
                how = [str(p.features[col])[:80] for p in (a, b)]
                why = f"part {i} gives column {col!r} as {how[0]}, part {j} as {how[1]}"
                fix = f"give {col!r} one type in every part"
                fix = "set prompt_format: conversational on the text parts" if col == "prompt" else fix
                return DataError(f"data.mixture: the parts cannot be joined: {why}", fix=fix)
    return DataError("data.mixture: the parts cannot be joined", fix="give the parts alike columns")


def build_dataset(
    cfg: dict, tokenizer: Any = None, base_dir: str | Path | None = None, rendering: Rendering | None = None
) -> DataResult:
    """The recipe's ``data:`` section as a ``DataResult``; ``rendering``: how the trainer renders prompts (tools)."""
    base = Path(base_dir) if base_dir else None
    cfg = dict(cfg)
    if "mixture" in cfg:
        result = _mixture(cfg, tokenizer, base, rendering)
    else:
        train, loaded, dropped = build_one(cfg, tokenizer, base, rendering=rendering)
        result = DataResult(train, None, loaded, dropped)
        if cfg.get("eval_split"):
            held = {**cfg, "limit": cfg.get("eval_size")}
            result.eval = build_one(held, tokenizer, base, "eval_split", rendering)[0]
    if cfg.get("eval_size") and result.eval is None:
        n = cfg["eval_size"]
        if n >= len(result.train):
            raise DataError(f"data.eval_size ({n}) must be smaller than the dataset ({len(result.train)} rows)")
        split = result.train.train_test_split(test_size=n, seed=cfg.get("seed", 42), shuffle=True)
        result.train, result.eval = split["train"], split["test"]
    return result
