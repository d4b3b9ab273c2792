"""Dataset builders and the options every builder shares.

A builder turns a source (the Hub, a local file, a generator) into a ``datasets.Dataset`` with a ``user`` column
(the user turn) and the columns rewards read (``solution``, ``nums``, ``target``...). ``build_dataset`` adds what is
common: the system prompt, the conversational ``prompt`` column, shuffle/limit, token-length filters, a held-out
split, and weighted mixtures.

Example:
    >>> from grpo_trl.data import build_dataset
    >>> result = build_dataset({"builder": "countdown", "source": "generate", "size": 8, "system_prompt": "none"})
    >>> result.train[0]["prompt"][0]["role"], len(result.train)
    ('user', 8)
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grpo_trl.data.filters import filter_by_tokens
from grpo_trl.data.pass_rate import keep_band, pass_rate_problems
from grpo_trl.data.prompts import PromptError, resolve_system_prompt
from grpo_trl.data.sampler import sampler_problems
from grpo_trl.errors import DataError, suggest

logger = logging.getLogger(__name__)

COMMON_OPTIONS = {
    "builder": None,
    "split": "train",
    "limit": None,
    "shuffle": False,
    "seed": 42,
    "system_prompt": None,  # None: the builder's default
    "eval_split": None,
    "eval_size": None,
    "max_prompt_tokens": None,
    "max_solution_tokens": None,
    "solution_column": "solution",
    "pass_rate": None,  # difficulty band from `grpo-trl filter` (data/pass_rate.py)
    "sampler": None,  # zero-variance-aware sampling (data/sampler.py)
}
MIXTURE_OPTIONS = {"mixture", "size", "seed", "shuffle", "eval_size", "system_prompt", "sampler"}


@dataclass
class Builder:
    name: str
    func: Callable[..., Any]
    default_system_prompt: str | None
    known_sizes: dict[str, int]
    description: str
    # reward columns the builder produces (beside ``prompt``): a tuple, or ``f(options, base_dir) -> columns`` when
    # they depend on its options (a user's file, a generator that adds a reference column)
    columns: tuple[str, ...] | Callable[[dict, Path | None], Any] = ()


@dataclass
class DataResult:
    """What ``build_dataset`` returns: the train set, an optional held-out set, and what happened on the way."""

    train: Any
    eval: Any = None
    loaded: int = 0
    dropped: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        drops = ", ".join(f"{v} by {k}" for k, v in self.dropped.items() if v) or "none"
        held = f", eval {len(self.eval)}" if self.eval is not None else ""
        return f"{self.loaded} rows loaded, dropped: {drops}; train {len(self.train)}{held}"


_BUILDERS: dict[str, Builder] = {}


def register_builder(
    name: str,
    *,
    system_prompt: str | None = None,
    known_sizes: dict[str, int] | None = None,
    columns: tuple[str, ...] | Callable[[dict, Path | None], Any] = (),
) -> Callable[[Callable], Callable]:
    """Register a builder ``func(split, **options) -> Dataset`` with a ``user`` column. Duplicates are an error."""

    def decorator(func: Callable) -> Callable:
        if name in _BUILDERS:
            raise DataError(f"dataset builder {name!r} is already registered")
        doc = (inspect.getdoc(func) or "").split("\n")[0]
        cols = columns if callable(columns) else tuple(columns)
        _BUILDERS[name] = Builder(name, func, system_prompt, dict(known_sizes or {}), doc, cols)
        return func

    return decorator


def list_builders() -> list[Builder]:
    return [_BUILDERS[k] for k in sorted(_BUILDERS)]


def get_builder(name: str) -> Builder:
    if name not in _BUILDERS:
        raise DataError(
            f"unknown dataset builder {name!r}{suggest(name, _BUILDERS)}; available: {', '.join(sorted(_BUILDERS))}"
        )
    return _BUILDERS[name]


def builder_params(builder: Builder) -> dict[str, Any]:
    sig = inspect.signature(builder.func)
    return {
        k: p.default for k, p in sig.parameters.items() if k not in ("split", "base_dir") and p.kind is p.KEYWORD_ONLY
    }


def option_problems(cfg: dict) -> list[tuple[str, str]]:
    """Problems of ``data.pass_rate`` and ``data.sampler`` as ``(key, message)``."""
    return pass_rate_problems(cfg.get("pass_rate")) + sampler_problems(cfg.get("sampler"))


def validate_data_config(cfg: dict) -> list[tuple[str, str]]:
    """Problems in a ``data:`` section as ``(key path, message)`` pairs; empty when it is fine. Builds nothing."""
    problems: list[tuple[str, str]] = []
    if not isinstance(cfg, dict):
        return [("data", "must be a mapping with a 'builder' key (or 'mixture')")]
    if "mixture" in cfg:
        problems += option_problems(cfg)
        for key in cfg:
            if key not in MIXTURE_OPTIONS:
                problems.append(
                    (f"data.{key}", f"not a mixture option; mixture options: {', '.join(sorted(MIXTURE_OPTIONS))}")
                )
        parts = cfg["mixture"]
        if not isinstance(parts, list) or not parts:
            return problems + [("data.mixture", "must be a non-empty list of {builder, weight, ...}")]
        for i, part in enumerate(parts):
            if not isinstance(part, dict):
                problems.append((f"data.mixture.{i}", "must be a mapping"))
                continue
            part = dict(part)
            weight = part.pop("weight", 1.0)
            if not isinstance(weight, (int, float)) or weight <= 0:
                problems.append((f"data.mixture.{i}.weight", f"must be a positive number, got {weight!r}"))
            problems += [(f"data.mixture.{i}.{k[5:]}", m) for k, m in validate_data_config(part)]
        return problems
    if "builder" not in cfg:
        names = ", ".join(sorted(_BUILDERS))
        return [("data.builder", f"missing; name a builder ({names}) or give data.mixture")]
    try:
        builder = get_builder(cfg["builder"])
    except DataError as exc:
        return [("data.builder", str(exc))]
    params = builder_params(builder)
    allowed = set(COMMON_OPTIONS) | set(params)
    for key in cfg:
        if key not in allowed:
            hint = suggest(key, sorted(allowed))
            problems.append(
                (
                    f"data.{key}",
                    f"unknown option for builder {builder.name!r}{hint}; options: {', '.join(sorted(allowed))}",
                )
            )
    for key, default in params.items():
        if default is inspect.Parameter.empty and key not in cfg:
            problems.append((f"data.{key}", f"required by builder {builder.name!r}"))
    try:
        resolve_system_prompt(cfg.get("system_prompt"))
    except PromptError as exc:
        problems.append(("data.system_prompt", str(exc)))
    problems += option_problems(cfg)
    for key in ("limit", "eval_size", "max_prompt_tokens", "max_solution_tokens"):
        value = cfg.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value <= 0):
            problems.append((f"data.{key}", f"must be a positive integer, got {value!r}"))
    return problems


def expected_size(cfg: dict, base_dir: str | Path | None = None) -> tuple[int | None, bool]:
    """Rows the ``data:`` section should give, unbuilt: ``(rows or None, exact)``. Filters make it inexact.

    A builder's ``known_sizes`` describe its default source: a local ``path`` is counted, another ``source`` or
    ``config`` is unknown until built.
    """
    if "mixture" in cfg:
        return cfg.get("size"), cfg.get("size") is not None
    builder = get_builder(cfg["builder"])
    defaults = builder_params(builder)
    if cfg.get("source") == "generate":
        size = cfg.get("size")
    elif cfg.get("path") and (builder.known_sizes or builder.name == "hub"):
        size = len(load_file(cfg["path"], Path(base_dir) if base_dir else None))
    elif any(k in cfg and cfg[k] != defaults.get(k) for k in ("source", "config")):
        size = None
    else:
        size = builder.known_sizes.get(cfg.get("split", "train"))
    limit = cfg.get("limit")
    if limit is not None:
        size = limit if size is None else min(size, limit)
    if size is not None and cfg.get("eval_size") and not cfg.get("eval_split"):
        size = max(0, size - cfg["eval_size"])
    exact = not (cfg.get("max_prompt_tokens") or cfg.get("max_solution_tokens") or cfg.get("pass_rate"))
    return size, exact and size is not None


def dataset_columns(cfg: dict, base_dir: str | Path | None = None) -> set[str]:
    """The columns the ``data:`` section will give rewards, without building it (local files are read).

    Raises ``DataError`` when a local file is missing or lacks a named column.
    """
    if "mixture" in cfg:
        out: set[str] = set()
        for part in cfg["mixture"]:
            out |= dataset_columns({k: v for k, v in part.items() if k != "weight"}, base_dir)
        return out
    builder = get_builder(cfg["builder"])
    base = Path(base_dir) if base_dir else None
    if callable(builder.columns):
        options = {k: v for k, v in cfg.items() if k in builder_params(builder)}
        return set(builder.columns(options, base))
    columns = set(builder.columns)
    if cfg.get("path"):  # a local copy in the Hub schema: check it has what the builder needs
        _build_one({**cfg, "limit": 1, "max_prompt_tokens": None, "max_solution_tokens": None}, None, base)
    return columns


def to_conversation(user: str, system_prompt: str | None) -> list[dict[str, str]]:
    """The ``prompt`` column: an optional system turn and the user turn."""
    turns = [{"role": "system", "content": system_prompt}] if system_prompt else []
    return turns + [{"role": "user", "content": user}]


def _build_one(cfg: dict, tokenizer: Any, base_dir: Path | None, split_key: str = "split") -> tuple[Any, int, dict]:
    problems = validate_data_config(cfg)
    if problems:
        raise DataError("; ".join(f"{k}: {m}" for k, m in problems))
    builder = get_builder(cfg["builder"])
    options = {k: v for k, v in cfg.items() if k not in COMMON_OPTIONS}
    params = inspect.signature(builder.func).parameters
    system = resolve_system_prompt(cfg.get("system_prompt", builder.default_system_prompt))
    # common options a builder asks for by name (hub makes the prompt itself, so it takes the system prompt)
    for key, value in (("base_dir", base_dir), ("system_prompt", system), ("solution_column", None)):
        if key in params:
            options[key] = value if key != "solution_column" else cfg.get(key, COMMON_OPTIONS[key])
    ds = builder.func(split=cfg.get(split_key) or "train", **options)
    if "user" not in ds.column_names and "prompt" not in ds.column_names:  # pragma: no cover - a builder bug
        raise DataError(f"builder {builder.name!r} returned no 'user' (or 'prompt') column")
    loaded = len(ds)
    seed = cfg.get("seed", 42)
    if cfg.get("shuffle"):
        ds = ds.shuffle(seed=seed)
    if "user" in ds.column_names:  # a builder that makes the prompt itself (hub) has none
        ds = ds.map(lambda row: {"prompt": to_conversation(row["user"], system)}, remove_columns=["user"])
    pass_rate = cfg.get("pass_rate")  # the band sits between the token filters and limit
    ds, dropped = filter_by_tokens(ds, {**cfg, "limit": None} if pass_rate else cfg, tokenizer)
    if pass_rate:
        ds = keep_band(ds, pass_rate, base_dir, dropped)
        if cfg.get("limit") is not None:
            ds = ds.select(range(min(cfg["limit"], len(ds))))
    return ds, loaded, dropped


def _align(parts: list) -> list:
    """Give every dataset the union of columns (missing ones as None) so they can be concatenated."""
    columns: list[str] = []
    for ds in parts:
        columns += [c for c in ds.column_names if c not in columns]
    out = []
    for ds in parts:
        for col in columns:
            if col not in ds.column_names:
                feature = next(p.features[col] for p in parts if col in p.column_names)
                ds = ds.add_column(col, [None] * len(ds), feature=feature)
        out.append(ds.select_columns(columns))
    return out


def build_dataset(cfg: dict, tokenizer: Any = None, base_dir: str | Path | None = None) -> DataResult:
    """Build the recipe's ``data:`` section into a ``DataResult`` (train, optional eval, counts)."""
    from datasets import concatenate_datasets

    base = Path(base_dir) if base_dir else None
    cfg = dict(cfg)
    if "mixture" in cfg:
        problems = validate_data_config(cfg)
        if problems:
            raise DataError("; ".join(f"{k}: {m}" for k, m in problems))
        built, loaded, dropped = [], 0, {}
        weights = []
        for part in cfg["mixture"]:
            part = dict(part)
            weights.append(float(part.pop("weight", 1.0)))
            if "system_prompt" in cfg and "system_prompt" not in part:
                part["system_prompt"] = cfg["system_prompt"]
            ds, n, d = _build_one(part, tokenizer, base)
            built.append(ds)
            loaded += n
            for k, v in d.items():
                dropped[k] = dropped.get(k, 0) + v
        total_w = sum(weights)
        shares = [w / total_w for w in weights]
        size = cfg.get("size") or int(min(len(ds) / s for ds, s in zip(built, shares)))
        counts = [round(size * s) for s in shares]
        for ds, c, part in zip(built, counts, cfg["mixture"]):
            if c > len(ds):
                raise DataError(
                    f"data.mixture: builder {part['builder']!r} has {len(ds)} rows, the mixture asks for {c}"
                )
        seed = cfg.get("seed", 42)
        pieces = [ds.shuffle(seed=seed).select(range(c)) for ds, c in zip(built, counts)]
        train = concatenate_datasets(_align(pieces)).shuffle(seed=seed)
        result = DataResult(train, None, loaded, dropped)
    else:
        train, loaded, dropped = _build_one(cfg, tokenizer, base)
        result = DataResult(train, None, loaded, dropped)
        if cfg.get("eval_split"):
            result.eval, _, _ = _build_one({**cfg, "limit": cfg.get("eval_size")}, tokenizer, base, "eval_split")
    if cfg.get("eval_size") and result.eval is None:
        n = cfg["eval_size"]
        if n >= len(result.train):
            raise DataError(f"data.eval_size ({n}) must be smaller than the dataset ({len(result.train)} rows)")
        split = result.train.train_test_split(test_size=n, seed=cfg.get("seed", 42), shuffle=True)
        result.train, result.eval = split["train"], split["test"]
    if len(result.train) == 0:
        raise DataError(
            f"the dataset is empty after filtering ({result.summary()}); raise data.max_prompt_tokens / "
            "max_solution_tokens or check the source"
        )
    return result


def load_hub_or_file(source: str, config: str | None, split: str, path: str | None, base_dir: Path | None) -> Any:
    """``load_dataset(source, config, split=split)``, or a local file at ``path``; clear error when unreachable."""
    from datasets import load_dataset

    if path is not None:
        return load_file(path, base_dir)
    try:
        return load_dataset(source, config, split=split)
    except Exception as exc:  # noqa: BLE001 - offline, missing split, gated...
        raise DataError(
            f"cannot load dataset {source!r} (config {config!r}, split {split!r}): {type(exc).__name__}: "
            f"{str(exc)[:200]}. Offline? Download it elsewhere and set data.path to a local JSONL/Parquet/CSV file "
            "with the same columns."
        ) from exc


def load_file(path: str | Path, base_dir: Path | None = None) -> Any:
    """A local JSONL, JSON, Parquet or CSV file as a ``Dataset`` (``path`` relative to the recipe's folder)."""
    from datasets import load_dataset

    p = Path(path).expanduser()
    if not p.is_absolute() and base_dir is not None and not p.exists():
        p = base_dir / p
    if not p.exists():
        raise DataError(f"data file {str(path)!r} does not exist (looked at {p})")
    kind = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv"}.get(p.suffix.lower())
    if kind is None:
        raise DataError(
            f"data file {str(path)!r}: unsupported extension {p.suffix!r}; use .jsonl, .json, .parquet or .csv"
        )
    try:
        ds = load_dataset(kind, data_files=str(p), split="train")
    except Exception as exc:  # noqa: BLE001 - malformed JSON/CSV/Parquet: the user's file, not a bug
        raise DataError(f"data file {str(path)!r} cannot be read: {type(exc).__name__}: {str(exc)[:200]}") from None
    return _keep_mixed_columns(ds, p) if kind == "json" else ds


def _keep_mixed_columns(ds: Any, path: Path) -> Any:
    """A JSON column mixing types (``"007"`` and ``7``) becomes text as written (``"007"``, ``"7"``).

    ``datasets`` stores such a column as ``Json`` and decodes the string ``"007"`` into the number 7.
    """
    from datasets import Json

    mixed = [name for name, feature in ds.features.items() if isinstance(feature, Json)]
    if not mixed:
        return ds
    text = path.read_text(encoding="utf-8")
    try:
        rows = json.loads(text) if path.suffix.lower() == ".json" else [json.loads(x) for x in text.splitlines() if x]
    except ValueError:
        return ds
    if isinstance(rows, dict):
        rows = next((v for v in rows.values() if isinstance(v, list)), [])
    if not isinstance(rows, list) or len(rows) != len(ds):
        return ds
    for name in mixed:
        values = [row.get(name) if isinstance(row, dict) else None for row in rows]
        as_text = [v if v is None or isinstance(v, str) else json.dumps(v) for v in values]
        logger.warning("data file %s: column %r mixes types; read as text", path.name, name)
        ds = ds.remove_columns(name).add_column(name, as_text)
    return ds


def require_columns(ds: Any, columns: list[str], what: str) -> None:
    missing = [c for c in columns if c not in ds.column_names]
    if missing:
        raise DataError(f"{what}: missing column(s) {', '.join(missing)}; the data has: {', '.join(ds.column_names)}")
