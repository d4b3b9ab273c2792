"""One translation's state (``Translation``: read a peer key, place a value with its comment, record why a key is not
mapped) and its result (``Imported``); the sections are mixins beside it (``model_keys``, ``data_keys``...).

    >>> t = Translation({"beta": 0.1}, "c.yaml", "trl", "1.0", None)
    >>> t.put(("trainer", "beta"), t.take("beta"), "beta"); t.out.recipe, t.done
    ({'trainer': {'beta': 0.1}}, {'beta'})
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grpo_trl import tables as T
from grpo_trl.errors import Problem


@dataclass
class Imported:
    """The translated recipe with a comment per translated value, and what could not be translated."""

    recipe: dict
    comments: dict[tuple, str] = field(default_factory=dict)
    unmapped: list[tuple[str, str]] = field(default_factory=list)  # (peer key, why)
    warnings: list[str] = field(default_factory=list)
    changed_defaults: list[str] = field(default_factory=list)
    flavour: str = "trl"
    baseline: str = T.BASELINE_TRL


def installed_fields(cls) -> dict[str, Any]:
    """A dataclass's init fields and their defaults (``MISSING`` where it has none), as installed."""
    none = dataclasses.MISSING
    return {
        f.name: f.default if f.default is not none else f.default_factory() if f.default_factory is not none else none
        for f in dataclasses.fields(cls)
        if f.init
    }


class Translation:
    """One translation under way: the peer config, the recipe being written, and the keys already placed."""

    def __init__(self, data: dict, file: str, flavour: str, baseline: str, out_dir: Path | None):
        from trl import GRPOConfig, ModelConfig

        self.data = data
        self.file = file
        self.out = Imported(recipe={}, flavour=flavour, baseline=baseline)
        self.problems: list[Problem] = []
        self.done: set[str] = set()
        self.carried: set[str] = set()  # peer keys whose value reached the recipe (``put``'s comment names them)
        self.grpo = installed_fields(GRPOConfig)
        self.model_defaults = installed_fields(ModelConfig)
        self.out_dir = out_dir

    # helpers
    def problem(self, key: str, message: str) -> None:
        self.problems.append(Problem(self.file, key, message))

    def unmapped(self, key: str, why: str) -> None:
        self.done.add(key)
        self.out.unmapped.append((key, why))

    def put(self, path: tuple, value: Any, comment: str | None = None) -> None:
        node = self.out.recipe
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
        if comment:
            self.out.comments[path] = comment
            self.carried.add(re.split(r"[^\w.]", comment, maxsplit=1)[0])
        if path[-1] in self.data:  # a field under its own name
            self.carried.add(path[-1])

    def silent_keys(self) -> list[str]:
        """Peer keys that reached neither the recipe nor the ``unmapped`` list (each is named by ``translate``)."""
        named = {k.split(".")[0] for k, _ in self.out.unmapped}
        named |= {line.split(":")[0] for line in self.out.changed_defaults}
        return [k for k in self.data if k not in self.carried and k not in named]

    def take(self, key: str, default: Any = None) -> Any:
        self.done.add(key)
        return self.data.get(key, default)

    def local(self, value: str) -> str:
        """``value`` relative to where the recipe is written when it is an existing relative file or folder (the peer
        resolved it from where it ran; a recipe's paths are relative to the recipe), else unchanged."""
        p = Path(value).expanduser()
        if self.out_dir is None or p.is_absolute() or not p.exists():
            return value
        return os.path.relpath(p.resolve(), self.out_dir.resolve())

    def has(self, key: str) -> bool:
        return key in self.data and self.data[key] is not None

    def string(self, key: str, default: str | None = None) -> str | None:
        value = self.take(key, default)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            self.problem(key, f"must be a string, got {type(value).__name__} {value!r}")
            return None
        return str(value)
