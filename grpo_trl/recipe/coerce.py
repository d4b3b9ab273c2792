"""Coerce a raw recipe mapping into typed sections, once: pydantic's errors become ``Problem`` s with a fix.

The result keeps only what the user wrote (coerced: ``1e-6`` -> float, ``no`` -> ``"no"``), so that mapping onto
``GRPOConfig`` passes exactly the user's fields and TRL keeps its own defaults; defaults live in the schema.

Example:
    >>> data, problems = coerce({"model": {"name": "m", "dtyp": "bf16"}}, "r.yaml", sections=("model",))
    >>> [str(p).split(";")[0] for p in problems]
    ["r.yaml: model.dtyp: unknown key (did you mean 'dtype'?)"]
"""

from __future__ import annotations

import typing
from collections.abc import Iterable
from typing import Any

from pydantic import TypeAdapter, ValidationError

from grpo_trl.errors import Problem, suggest, suggest_fix
from grpo_trl.recipe import schema
from grpo_trl.recipe.trl_schema import BOUND_REASONS, MANAGED_FIELDS, REMOVED_FIELDS, takes_float

_TYPE_NAMES = {
    "int_type": "int",
    "int_parsing": "int",
    "int_from_float": "int",
    "float_type": "float",
    "float_parsing": "float",
    "string_type": "str",
    "bool_type": "bool",
    "bool_parsing": "bool",
    "list_type": "list",
    "tuple_type": "list",
    "dict_type": "mapping",
    "model_type": "mapping",
    "model_attributes_type": "mapping",
    "none_required": "null",
}
_BOUNDS = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<", "less_than_equal": "<="}
MAX_REPR = 60


def short(value: Any) -> str:
    """``repr`` bounded in length (a hostile value must not flood the terminal)."""
    text = repr(value) if not isinstance(value, (dict, list)) or len(value) < 20 else f"<{type(value).__name__}>"
    return text if len(text) <= MAX_REPR else text[: MAX_REPR - 3] + "..."


def _path(loc: tuple, value: Any) -> tuple[list, Any]:
    """The part of ``loc`` that names keys of the input (pydantic appends union member tags), and the value there."""
    path: list = []
    node = value
    for part in loc:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            break
        path.append(part)
    return path, node


def _fields_at(kind: Any, path: list) -> list[str]:
    """Field names of the model reached by ``path`` inside ``kind`` (for did-you-mean); empty when unknown."""
    for part in path:
        while typing.get_origin(kind) is typing.Annotated:  # Annotated[list[Spec], ...] -> list[Spec]
            kind = typing.get_args(kind)[0]
        if isinstance(part, int):
            kind = (typing.get_args(kind) or (kind,))[0]  # list[Spec] -> Spec
            continue
        fields = getattr(kind, "model_fields", None)
        if not fields or part not in fields:
            return []
        kind = fields[part].annotation
    return list(getattr(kind, "model_fields", {}) or {})


def translate(errors: list[dict], value: Any, file: str, prefix: str, kind: Any) -> list[Problem]:
    """One ``Problem`` per offending key from pydantic ``errors`` about ``value`` (the section named ``prefix``)."""
    grouped: dict[str, list[tuple[dict, Any, list]]] = {}
    for err in errors:
        loc = tuple(err["loc"])
        if err["type"] == "missing":
            path, node = list(loc), None
        else:
            path, node = _path(loc, value)
        key = ".".join([prefix, *[str(p) for p in path]])
        grouped.setdefault(key, []).append((err, node, path))
    problems = []
    for key, errs in grouped.items():
        problems.append(_one(key, errs, file, prefix, kind))
    return problems


def _one(key: str, errs: list[tuple[dict, Any, list]], file: str, section: str, kind: Any) -> Problem:
    err, node, path = errs[0]
    kinds = {e["type"] for e, _, _ in errs}
    last = key.rpartition(".")[2]
    if "extra_forbidden" in kinds:
        choices = _fields_at(kind, path[:-1])
        where = key.rpartition(".")[0]
        if where == "trainer":
            if last in MANAGED_FIELDS:
                return Problem(file, key, MANAGED_FIELDS[last])
            if last in REMOVED_FIELDS:
                return Problem(file, key, REMOVED_FIELDS[last])
            return Problem(
                file,
                key,
                f"not a trl.GRPOConfig field{suggest(last, choices)} (checked against the installed TRL)",
            )
        known = ", ".join(choices)
        return Problem(file, key, f"unknown key{suggest(last, choices)}; {where} keys: {known}")
    if "missing" in kinds:
        hint = schema.REQUIRED_SECTIONS.get(key) or ""
        return Problem(file, key, "missing" + (f": {hint}" if hint else ""))
    if "literal_error" in kinds:
        expected = next(e for e, _, _ in errs if e["type"] == "literal_error")["ctx"]["expected"]
        choices = [c.strip().strip("'") for c in expected.replace(" or ", ", ").split(", ")]
        return Problem(
            file, key, f"{short(node)} is not allowed{suggest(node, choices)}; use one of {', '.join(choices)}"
        )
    if "finite_number" in kinds:
        return Problem(file, key, f"must be a finite number, got {short(node)}")
    for e, _, _ in errs:
        if e["type"] in _BOUNDS:
            bound = next(iter(e["ctx"].values()))
            why = BOUND_REASONS.get(key, "")
            if e["type"] == "greater_than" and bound == 0:
                kind_name = "number" if isinstance(node, float) or takes_float(key) else "integer"
                return Problem(file, key, f"must be a positive {kind_name}, got {short(node)}", why)
            return Problem(file, key, f"must be {_BOUNDS[e['type']]} {bound}, got {short(node)}", why)
        if e["type"] in ("too_short", "string_too_short"):
            hint = schema.REQUIRED_SECTIONS.get(key)
            return Problem(file, key, f"missing: {hint}" if hint else "must not be empty")
    names = list(dict.fromkeys(_TYPE_NAMES.get(e["type"], "") for e, _, _ in errs if _TYPE_NAMES.get(e["type"])))
    if names:
        if node is None and "null" not in names and path:
            return Problem(file, key, f"expected {'/'.join(names)}, got null (remove the key for the default)")
        expected = "/".join(n for n in names if not ("float" in names and n == "int"))
        if expected == "mapping" and not path:
            hint = schema.SECTION_HINTS.get(section, "")
            expected = hint if hint.startswith("a ") else f"a mapping ({hint})" if hint else "a mapping"
            return Problem(file, key, f"must be {expected}, got {type(node).__name__} {short(node)}")
        if expected == "float":
            return Problem(file, key, f"must be a number (expected float), got {type(node).__name__} {short(node)}")
        return Problem(file, key, f"expected {expected}, got {type(node).__name__} {short(node)}")
    return Problem(file, key, err["msg"])


def validate_value(kind: Any, value: Any, file: str, prefix: str) -> tuple[Any, list[Problem]]:
    """``value`` validated as ``kind``: ``(coerced value, only the keys given; [])`` or ``(None, problems)``."""
    try:
        typed = TypeAdapter(kind).validate_python(value)
    except ValidationError as exc:
        return None, translate(exc.errors(), value, file, prefix, kind)
    except RecursionError:
        return None, [Problem(file, prefix, "nested too deeply")]
    return TypeAdapter(kind).dump_python(typed, exclude_unset=True), []


def coerce(data: dict, file: str, sections: Iterable[str] | None = None) -> tuple[dict, list[Problem]]:
    """Every section of ``data`` validated and coerced. Returns the coerced mapping and every problem found.

    A section with problems keeps its raw value in the mapping (later checks skip it: see ``bad`` in validate).
    """
    from grpo_trl.importer import peer_config_problems, top_level_hint

    peer = peer_config_problems(data, file)  # a flat TRL/open-r1 config: one line pointing at `grpo-trl import`
    if peer:
        return dict(data), peer
    wanted = tuple(sections) if sections is not None else tuple(schema.SECTIONS)
    out: dict = {}
    problems: list[Problem] = []
    for name, value in data.items():
        if name not in schema.SECTIONS:
            fix = top_level_hint(str(name)) or suggest_fix(name, schema.SECTIONS)
            problems.append(
                Problem(
                    file,
                    str(name),
                    "unknown section" + (f" ({fix})" if fix else "") + f"; sections: {', '.join(schema.SECTIONS)}",
                )
            )
            continue
        if name not in wanted:
            out[name] = value
            continue
        kind = schema.section_type(name)
        if value is None and name not in schema.REQUIRED_SECTIONS:
            continue  # an empty section (`logging:` with nothing under it)
        coerced, found = validate_value(kind, value, file, name)
        problems += found
        out[name] = value if found else coerced
    for name, hint in schema.REQUIRED_SECTIONS.items():
        if name in wanted and data.get(name) is None and not any(p.key == name for p in problems):
            problems.append(Problem(file, name, f"missing: {hint}"))
    model = out.get("model")
    if (
        "model" in wanted
        and isinstance(model, dict)
        and model.get("tiny")
        and not any(p.key.startswith("model.tiny") for p in problems)
    ):
        tiny, found = validate_value(schema.tiny_model(), model["tiny"], file, "model.tiny")
        problems += found
        if not found:
            out["model"] = {**model, "tiny": tiny}
    return out, problems
