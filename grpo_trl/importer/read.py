"""A permissive, bounded YAML read for peers' configs: a key repeated in one mapping keeps its last value (as PyYAML
and TRL do) and is reported, instead of being refused as grpo-trl's own recipe loader does.

Example:
    >>> data, dups = read_peer_yaml_text("beta: 0.04\\nbeta: 0.0\\n")
    >>> data, dups
    ({'beta': 0.0}, ['beta (lines 1 and 2): the last value, 0.0, is kept'])
"""

from __future__ import annotations

from pathlib import Path

import yaml

from grpo_trl.errors import GrpoTrlError
from grpo_trl.io import load_yaml, read_text

MAX_BYTES = 2_000_000  # a config, not a dataset


class _Loader(yaml.SafeLoader):
    """SafeLoader that records keys repeated within one mapping (the last value wins, as in plain PyYAML)."""

    def __init__(self, stream):
        super().__init__(stream)
        self.duplicates: list[str] = []

    def construct_mapping(self, node, deep=False):
        seen: dict = {}
        for key_node, value_node in node.value:
            try:
                key = self.construct_object(key_node, deep=True)
                hash(key)
            except TypeError:
                continue  # unhashable key: the base class reports it
            if key in seen:
                value = self.construct_object(value_node, deep=True)
                self.duplicates.append(
                    f"{key} (lines {seen[key] + 1} and {key_node.start_mark.line + 1}): the last value, "
                    f"{value!r}, is kept"
                )
            seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep=deep)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _Loader.construct_mapping)


def read_peer_yaml_text(text: str, file: str = "<config>") -> tuple[object, list[str]]:
    """Parse ``text`` (alias expansion and depth bounded: ``grpo_trl.io.load_yaml``); returns the data and one line
    per repeated key. Raises ``yaml.YAMLError``, or ``ValueError`` for a bomb."""
    try:
        data, loader = load_yaml(text, file, _Loader)
    except GrpoTrlError as exc:
        raise ValueError(exc.problems[0].text) from None
    return data, loader.duplicates


def read_peer_yaml(path: str | Path) -> tuple[object, list[str]]:
    """Read a peer's config file (``grpo_trl.io``'s bounded reader). Raises ``ValueError`` or ``yaml.YAMLError``."""
    try:
        text = read_text(path, MAX_BYTES, "config file")
    except GrpoTrlError as exc:
        raise ValueError(exc.problems[0].text) from None
    return read_peer_yaml_text(text, str(path))
