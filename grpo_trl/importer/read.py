"""A permissive, bounded YAML read for peers' configs: a key repeated in one mapping keeps its last value (as PyYAML
and TRL do) and is reported, instead of being refused as grpo-trl's own recipe loader does.

Example:
    >>> data, dups = read_peer_yaml_text("beta: 0.04\\nbeta: 0.0\\n")
    >>> data, dups
    ({'beta': 0.0}, ['beta (lines 1 and 2): the last value, 0.0, is kept'])
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import yaml

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


def read_peer_yaml_text(text: str) -> tuple[object, list[str]]:
    """Parse ``text``; returns the data and one line per repeated key. Raises ``yaml.YAMLError``."""
    loader = _Loader(text)
    try:
        data = loader.get_single_data()
    finally:
        loader.dispose()
    return data, loader.duplicates


def read_peer_yaml(path: str | Path) -> tuple[object, list[str]]:
    """Read a peer's config file (bounded in size). Raises ``OSError``, ``ValueError`` or ``yaml.YAMLError``."""
    fd = os.open(Path(path), os.O_RDONLY | os.O_NONBLOCK)  # a named pipe nothing writes to: no wait forever
    os.set_blocking(fd, True)
    with os.fdopen(fd, "rb") as fh:
        raw = fh.read(MAX_BYTES + 1)
    if not raw and stat.S_ISFIFO(os.stat(path).st_mode):
        raise ValueError("a named pipe with nothing writing to it: not a config file")
    if len(raw) > MAX_BYTES:
        raise ValueError(f"larger than {MAX_BYTES // 1_000_000} MB: not a config file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    return read_peer_yaml_text(text)
