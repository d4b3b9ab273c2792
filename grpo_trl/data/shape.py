"""What a ``data:`` section gives, unbuilt: the rows it should yield and the columns rewards will see. ``check`` and
the plan read these; only local files are read, nothing is downloaded.

>>> expected_size({"builder": "countdown", "source": "generate", "size": 100, "eval_size": 10})
(90, True)
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from grpo_trl.data.build import build_dataset, build_one, join_parts, mixture_parts
from grpo_trl.data.pass_rate import band_rates
from grpo_trl.data.registry import builder_params, from_plugin, get_builder
from grpo_trl.data.rows import needing
from grpo_trl.data.sources import column_names, load_file

UNFILTERED = {"limit": None, "max_prompt_tokens": None, "max_solution_tokens": None, "pass_rate": None}


def expected_rows(cfg: dict, base_dir: str | Path | None = None) -> int | None:
    """Rows the section loads before hold-out and filters (``None``: unknown until built, e.g. another source)."""
    if "mixture" in cfg:
        return cfg.get("size")
    builder = get_builder(cfg["builder"])
    defaults = builder_params(builder)
    if cfg.get("source") == "generate" or ("size" in defaults and not {"source", "path"} & set(defaults)):
        size = cfg.get("size", defaults.get("size"))  # rows made, not read: `size` many
    elif cfg.get("path") and (builder.known_sizes or builder.local_copy):
        size = len(load_file(cfg["path"], Path(base_dir) if base_dir else None))
    elif any(k in cfg and cfg[k] != defaults.get(k) for k in ("source", "config")):
        size = None
    else:
        size = builder.known_sizes.get(cfg.get("split", "train"))
    limit = cfg.get("limit")
    if limit is not None:
        size = limit if size is None else min(size, limit)
    return size


def expected_size(cfg: dict, base_dir: str | Path | None = None) -> tuple[int | None, bool]:
    """Rows for training, unbuilt: ``(rows or None, exact)``; filters make it inexact."""
    size = expected_rows(cfg, base_dir)
    if size is not None and cfg.get("eval_size") and not cfg.get("eval_split"):
        size = max(0, size - cfg["eval_size"])
    exact = not (cfg.get("max_prompt_tokens") or cfg.get("max_solution_tokens") or cfg.get("pass_rate"))
    return size, exact and size is not None


def dataset_columns(cfg: dict, base_dir: str | Path | None = None) -> set[str] | None:
    """The columns the section gives rewards, unbuilt (local files are read); ``None`` when only a plugin could say."""
    base, out = Path(base_dir) if base_dir else None, set()
    built = {}  # the local parts' first rows: train joins a mixture's parts, so they must join here too
    for number, part in enumerate(mixture_parts(cfg) if "mixture" in cfg else [cfg], 1):
        builder = get_builder(part["builder"])
        if from_plugin(builder) and callable(builder.columns):
            return None
        if part.get("path") and not from_plugin(builder):  # built as train builds it: it has what the builder needs
            built[number] = _first_row(part, base)
            out |= set(column_names(built[number])) - {"prompt"}
        elif callable(builder.columns):
            out |= set(builder.columns({k: v for k, v in part.items() if k in builder_params(builder)}, base))
        else:
            out |= set(builder.columns)
    if len(built) > 1:
        join_parts(list(built.values()), list(built))
    return out


def _first_row(cfg: dict, base: Path | None) -> Any:
    """A local file's first row, built as train builds it (bad rows: told by ``check_rows``)."""
    return build_one({**cfg, **UNFILTERED, "bad_rows": "drop", "limit": 1}, None, base)[0]


def built_here(part: dict) -> bool:
    """Whether ``check`` builds ``part`` as train does: a local file or generated rows (no download, no plugin)."""
    builder = get_builder(part["builder"])
    loads = "source" in builder_params(builder) and not part.get("path") and part.get("source") != "generate"
    return not (from_plugin(builder) or loads or (builder.local_copy and not part.get("path")))


@contextlib.contextmanager
def no_bars() -> Iterator[None]:
    """datasets' progress bars off while check builds a few rows (no "Map: 100%" before a command's own output)."""
    from datasets.utils.logging import disable_progress_bar, enable_progress_bar, is_progress_bar_enabled

    shown = is_progress_bar_enabled()
    disable_progress_bar()
    try:
        yield
    finally:
        if shown:
            enable_progress_bar()


def check_rows(cfg: dict, base_dir: str | Path | None, needed: list[str]) -> None:
    """``check``, whatever the model: each local file built, scanned and banded (``data.pass_rate``) as ``train``
    will, generated rows built (one), a mixture of such parts joined as train joins them; any pass-rate file read."""
    base = Path(base_dir) if base_dir else None
    parts = mixture_parts(cfg) if cfg.get("mixture") else [cfg]
    with needing(needed), no_bars():
        if cfg.get("mixture") and all(built_here(part) for part in parts):
            mixture = [{**part, **UNFILTERED, "pass_rate": part.get("pass_rate")} for part in cfg["mixture"]]
            build_dataset({**cfg, "mixture": mixture, "eval_size": None}, None, base)  # eval_size: step_problems
            return
        for part in parts:
            local, band, here = part.get("path"), part.get("pass_rate"), built_here(part)
            if here:  # a local file whole (a band that keeps no row fails here too), generated: one row
                one = {} if local or "size" not in builder_params(get_builder(part["builder"])) else {"size": 1}
                build_one({**part, **UNFILTERED, "pass_rate": band if local else None, **one}, None, base)
            if band and not (local and here):
                band_rates(band, base)
