"""The registry of dataset builders: ``@register_builder``, lookup, and what a builder declares about itself.

A builder turns a source (the Hub, a local file, a generator) into a ``datasets.Dataset`` with a ``user`` column
(the user turn) and the columns rewards read (``solution``, ``nums``, ``target``...). What every builder shares is
in ``build.py`` (``build_dataset``); reading sources in ``sources.py``; what a section gives without building it in
``shape.py``. Builders import ``register_builder`` and the source readers from here.

Example:
    >>> from grpo_trl.data import get_builder
    >>> builder = get_builder("countdown")
    >>> builder.name, "size" in builder_params(builder)
    ('countdown', True)
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grpo_trl.data.pass_rate import pass_rate_problems
from grpo_trl.data.refill import dynamic_sampling_problems
from grpo_trl.data.sampler import sampler_problems
from grpo_trl.data.sources import load_file, load_hub_or_file, require_columns
from grpo_trl.errors import DataError, Problem
from grpo_trl.registry import Registry, source_of
from grpo_trl.registry import from_plugin as _defined_by_plugin

# the source readers and the error every builder uses, importable from here (where builders find register_builder)
__all__ = [
    "Builder",
    "DataError",
    "builder_params",
    "get_builder",
    "list_builders",
    "load_file",
    "load_hub_or_file",
    "option_problems",
    "register_builder",
    "require_columns",
    "to_conversation",
]


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
    # ``path:`` (when given) is a local copy of the data the builder otherwise downloads: ``check`` counts its rows,
    # and without it builds no sample row (it downloads nothing)
    local_copy: bool = False


BUILDERS = Registry(
    "dataset builder",
    DataError,
    duplicate="dataset builder {name!r} is already registered",
    unknown="unknown dataset builder {name!r}{hint}; available: {names}",
)


def register_builder(
    name: str,
    *,
    system_prompt: str | None = None,
    known_sizes: dict[str, int] | None = None,
    columns: tuple[str, ...] | Callable[[dict, Path | None], Any] = (),
    local_copy: bool = False,
) -> Callable[[Callable], Callable]:
    """Register a builder ``func(split, **options) -> Dataset`` with a ``user`` column. Duplicates are an error.

    ``columns``: the reward columns it gives (or ``f(options, base_dir)``); ``local_copy``: its ``path:`` option is
    a local copy of what it otherwise downloads (see ``Builder``).
    """

    def decorator(func: Callable) -> Callable:
        doc = (inspect.getdoc(func) or "").split("\n")[0]
        cols = columns if callable(columns) else tuple(columns)
        builder = Builder(name, func, system_prompt, dict(known_sizes or {}), doc, cols, local_copy)
        BUILDERS.add(name, builder, source=source_of(func, name))
        return func

    return decorator


def list_builders() -> list[Builder]:
    return [e.obj for e in BUILDERS]


def get_builder(name: str) -> Builder:
    return BUILDERS.get(name).obj


def from_plugin(builder: Builder) -> bool:
    """A builder a ``plugins:`` file registered: the user's code, which ``check`` never runs (not even on one row)."""
    return _defined_by_plugin(builder.func)


def builder_params(builder: Builder) -> dict[str, Any]:
    sig = inspect.signature(builder.func)
    return {
        k: p.default for k, p in sig.parameters.items() if k not in ("split", "base_dir") and p.kind is p.KEYWORD_ONLY
    }


def option_problems(cfg: dict) -> list[Problem]:
    """Problems of ``data.pass_rate``, ``data.sampler`` and ``data.dynamic_sampling`` (keys ``data.pass_rate...``, no
    file named)."""
    return (
        pass_rate_problems(cfg.get("pass_rate"))
        + sampler_problems(cfg.get("sampler"))
        + dynamic_sampling_problems(cfg.get("dynamic_sampling"))
    )


def to_conversation(user: str, system_prompt: str | None) -> list[dict[str, str]]:
    """The ``prompt`` column: an optional system turn and the user turn."""
    turns = [{"role": "system", "content": system_prompt}] if system_prompt else []
    return turns + [{"role": "user", "content": user}]
