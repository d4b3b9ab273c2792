"""Read a recipe into a plain mapping: bounded YAML (``grpo_trl.io``'s reader, duplicate keys refused), ``extends``,
``--set`` overrides; a secret's value (``trainer.hub_token``) refused: it belongs in the environment (``HF_TOKEN``).
"""

from __future__ import annotations

import copy
import os
import re
from pathlib import Path
from typing import Any

import yaml

from grpo_trl.errors import SECRET_FIX, GrpoTrlError, Problem, RecipeError, is_secret_key, keep_secret
from grpo_trl.io import load_yaml, read_text

MAX_BYTES = 1_000_000  # a recipe is a few KB; anything over 1 MB is not one
MAX_EXTENDS = 16  # length of an extends chain


def _shown(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else f"{text[: limit * 3 // 4]}... ({len(text)} characters)"


def _error(file: str, key: str, message: str, fix: str = "") -> RecipeError:
    return RecipeError([Problem(file, _shown(key, 120), message[:1000], fix)])


class YamlLoader(yaml.SafeLoader):
    """``SafeLoader`` that records keys repeated in one mapping (PyYAML keeps the last: the recipe loader refuses
    them, ``grpo-trl import`` warns) and names the line of an unreadable value."""

    file = "<recipe>"

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self.duplicates: list[tuple[str, int, int, yaml.Node]] = []  # key, first line, its repeat's line, value

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except GrpoTrlError:
            raise
        except ValueError as exc:  # an integer of more than 4,300 digits, a bad date
            why = f"a value cannot be read (line {node.start_mark.line + 1}): {str(exc).split(';')[0][:200]}"
            raise _error(self.file, "", why, "quote it to keep it as text") from None

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: dict[Any, int] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=deep)
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key (a list as a key): PyYAML reports it below
                break
            if first is not None:
                self.duplicates.append((str(key)[:80], first, key_node.start_mark.line + 1, value_node))
            seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)


def parse_yaml(text: str, file: str) -> Any:
    """YAML text -> Python data, bounded in expansion and depth (``grpo_trl.io``), duplicate keys refused."""
    try:
        data, loader = load_yaml(text, file, type("RecipeLoader", (YamlLoader,), {"file": file}))
        for key, first, line, _ in loader.duplicates[:1]:
            why = f"duplicate key in one mapping (line {line}; the first is on line {first})"
            raise _error(file, key, why, "keep one of them")
        return data
    except yaml.YAMLError as exc:
        raise _error(file, "", *yaml_problem(exc)) from None
    except GrpoTrlError as exc:  # a duplicate key, an unreadable value, the bounds of the one reader
        raise RecipeError(exc.problems) from None


def yaml_problem(exc: yaml.YAMLError) -> tuple[str, str]:
    """What is wrong, and the fix: line, column and PyYAML's problem with the text it quotes (an alias, a tag: maybe a
    secret's value) left out; a control character (a NUL byte) fails before any line is read."""
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    problem = str(getattr(exc, "problem", None) or str(exc).split("\n")[0])[:200]
    problem = re.sub(r"'(?!<)(?:[^'\\]|\\.){2,}'", "'...'", problem)  # keep '\t', ':' and '<scalar>'
    return f"not valid YAML{where}: {problem}", "" if mark else "remove the control characters"


def read_yaml(path: Path) -> dict:
    """One recipe file as a mapping: at most 1 MB, UTF-8, valid bounded YAML (``grpo_trl.io``'s one reader)."""
    try:
        text = read_text(path, MAX_BYTES, "recipe")
    except GrpoTrlError as exc:
        raise RecipeError(exc.problems) from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the name
        raise _error(str(path), "", f"cannot read the recipe: {getattr(exc, 'strerror', None) or exc}") from None
    data = parse_yaml(text, str(path))
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise _error(str(path), "", f"a recipe must be a YAML mapping of sections, got {type(data).__name__}")
    return data


def secrets(data: Any, prefix: str = "") -> list[str]:
    """Dotted keys holding a secret's value: a recipe is copied into the run folder and card, so secrets come from the
    environment instead."""
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    found = []
    for key, value in items:
        if isinstance(key, str) and is_secret_key(key) and isinstance(value, (str, dict, list)) and value:
            found.append(f"{prefix}{key}")
            keep_secret(value)  # never shown from now on, whatever echoes it
        else:
            found += secrets(value, f"{prefix}{key}.")
    return found


def deep_merge(base: dict, override: dict) -> dict:
    """``override`` on top of ``base``: mappings merge key by key, anything else (lists included) replaces."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def resolve_extends(path: Path, seen: tuple[Path, ...] = ()) -> dict:
    """The recipe at ``path`` merged on top of the chain of recipes it ``extends``."""
    given, path = path, path.resolve()
    if path in seen:
        chain = " -> ".join(p.name for p in (*seen, path))
        raise _error(str(path), "extends", f"circular extends: {chain}")
    if len(seen) >= MAX_EXTENDS:
        raise _error(str(path), "extends", f"more than {MAX_EXTENDS} recipes in the extends chain")
    data = read_yaml(path if os.path.exists(path) else given)  # /dev/stdin, <(...) resolve to "pipe:[n]"
    parent = data.pop("extends", None)
    if parent is None:
        return data
    if not isinstance(parent, str) or not parent.strip():
        why = f"must be the path of another recipe (a string), got {type(parent).__name__}"
        raise _error(str(path), "extends", why)
    parent_path = path.parent / parent
    if not os.path.lexists(parent_path):  # the reader says what else it is (a pipe, a folder, a loop)
        raise _error(str(path), "extends", f"{parent!r} not found (looked at {parent_path})")
    return deep_merge(resolve_extends(parent_path, (*seen, path)), data)


def _override_value(raw: str, key: str) -> Any:
    """The YAML value of ``--set KEY=RAW``; text YAML would read as a block mapping (``Q: {question}``) stays text."""
    if not raw.strip():
        return ""
    try:
        value = parse_yaml(raw, "--set")
    except RecipeError as exc:
        raise _error("--set", key, f"value is not valid YAML: {exc.problems[0].message}") from None
    return raw if isinstance(value, (dict, list)) and raw.lstrip()[:1] not in ("{", "[") else value


def _index(part: str, length: int) -> bool:
    """Whether ``part`` is the index of an item of a list of ``length`` (a 5,000-digit one is not)."""
    return part.isascii() and part.isdigit() and len(part) < 10 and int(part) < length


def apply_override(data: dict, assignment: str) -> dict:
    """``section.key=value`` on a copy of ``data`` (list items by index: ``rewards.0.weight=2``); ``=null`` removes."""
    if not isinstance(assignment, str) or "=" not in assignment:
        raise _error("--set", str(assignment), "expected KEY=VALUE", "e.g. trainer.learning_rate=1e-6")
    key, _, raw = assignment.partition("=")
    value = _override_value(raw, key)
    parts = key.strip().split(".")
    if not all(parts):
        raise _error("--set", key, "empty part in the key", "write section.key, e.g. trainer.seed=1")
    data = node = copy.deepcopy(data)
    for i, part in enumerate(parts):
        if isinstance(node, list):
            if not _index(part, len(node)):
                where = f"{_shown('.'.join(parts[: i + 1]))}: " if i < len(parts) - 1 else ""  # an inner part
                raise _error("--set", key, f"{where}no list item {_shown(part)} (the list has {len(node)})")
            part = int(part)
        elif not isinstance(node, dict):
            above = ".".join(parts[:i])
            raise _error("--set", key, f"{above} is a {type(node).__name__}, not a section", f"set {above}=VALUE")
        if i == len(parts) - 1:
            break
        if isinstance(node, dict) and node.get(part) is None:
            if value is None:
                return data  # removing a key under a section that is not there: nothing to do
            node[part] = {}
        node = node[part]
    if value is not None:
        node[part] = value
    elif isinstance(node, list) or part in node:
        del node[part]
    return data


def read_recipe(path: str | Path, overrides: tuple[str, ...] | list[str] = ()) -> dict:
    """The raw recipe mapping: ``extends`` merged, ``--set`` overrides applied in order."""
    data = resolve_extends(Path(path))
    for assignment in overrides:
        data = apply_override(data, assignment)
    if found := secrets(data):
        why = "a secret in a recipe is copied into the run folder and its card"
        raise RecipeError([Problem(str(path), key, why, SECRET_FIX) for key in found])
    return data
