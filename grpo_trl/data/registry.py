"""The registry of dataset builders: ``@register_builder`` and what a builder declares about itself (it returns a
``datasets.Dataset`` with a ``user`` or ``prompt`` column and the columns rewards read)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grpo_trl.data.rows import place
from grpo_trl.data.sources import load_file, load_hub_or_file, require_columns  # noqa: F401 (builders use them)
from grpo_trl.errors import DataError, GrpoTrlError
from grpo_trl.registry import Registry, source_of
from grpo_trl.registry import from_plugin as _defined_by_plugin

__all__ = ["Builder", "DataError", "get_builder", "list_builders", "map_rows", "register_builder", "to_conversation"]
BAD_VALUE = (ValueError, TypeError, AttributeError, KeyError, IndexError)  # what a value of the wrong type raises


@dataclass(eq=False)
class Builder:
    name: str
    func: Callable[..., Any]
    system_prompt: str | None = None  # the default of data.system_prompt
    known_sizes: dict[str, int] = field(default_factory=dict)
    # reward columns beside ``prompt``: a tuple, or ``f(options, base_dir) -> columns`` when options decide them
    columns: tuple[str, ...] | Callable[[dict, Path | None], Any] = ()
    # ``path:`` is a local copy of what it otherwise downloads: ``check`` counts its rows, else builds no sample row
    local_copy: bool = False


BUILDERS = Registry(
    "dataset builder",
    DataError,
    duplicate="dataset builder {name!r} is already registered",
    unknown="unknown dataset builder {name!r}{hint}; available: {names}",
)


def register_builder(name: str, **declared: Any) -> Callable[[Callable], Callable]:
    """Register ``func(split, **options) -> Dataset``; ``declared``: the other fields of ``Builder``."""

    def decorator(func: Callable) -> Callable:
        BUILDERS.add(name, Builder(name, func, **declared), source=source_of(func, name))
        return func

    return decorator


def list_builders() -> list[Builder]:
    return [e.obj for e in BUILDERS]


def get_builder(name: str) -> Builder:
    return BUILDERS.get(name).obj


def from_plugin(builder: Builder) -> bool:
    """A builder a ``plugins:`` file registered: the user's code, which ``check`` never runs."""
    return _defined_by_plugin(builder.func)


def builder_params(builder: Builder) -> dict[str, Any]:
    params = inspect.signature(builder.func).parameters.items()
    return {k: p.default for k, p in params if k not in ("split", "base_dir") and p.kind is p.KEYWORD_ONLY}


def to_conversation(user: str, system_prompt: str | None) -> list[dict[str, str]]:
    """The ``prompt`` column: an optional system turn and the user turn."""
    turns = [{"role": "system", "content": system_prompt}] if system_prompt else []
    return turns + [{"role": "user", "content": user}]


def map_rows(ds: Any, to_row: Callable[[dict], dict], where: str, key: str = "data", **kwargs: Any) -> Any:
    """``ds.map(to_row)``; a value ``to_row`` cannot take (a number where text belongs) is one ``DataError`` naming
    its row and ``key``, not a crash: check (which builds local files) and train refuse it alike."""

    def guarded(row: dict, index: int) -> dict:
        try:
            return to_row(row)
        except GrpoTrlError:
            raise
        except BAD_VALUE as exc:
            why = f"{place(index, where)} cannot be read ({type(exc).__name__}: {str(exc)[:160]})"
            raise DataError(why, key=key, fix="give each column the type the builder reads") from None

    return ds.map(guarded, with_indices=True, **kwargs)
