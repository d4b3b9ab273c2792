"""The recipe schema's building blocks: the ``Section`` base, YAML quirks coerced once, pydantic types read from
annotations (a signature or a dataclass), and pydantic's errors translated into ``Problem`` s naming key and fix.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import math
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter, ValidationError, create_model

from grpo_trl.errors import Problem, suggest


def _yaml_float(value: Any) -> Any:
    """PyYAML reads ``1e-6`` (no dot) as a string: accept it where a float is expected."""
    try:
        return float(value) if isinstance(value, str) else value
    except ValueError:
        return value


def _yaml_no(value: Any) -> Any:
    """YAML 1.1 reads an unquoted ``no`` as ``False``: for string fields (``save_strategy: no``) it meant ``"no"``."""
    return "no" if value is False else value


YamlFloat = Annotated[int | float, BeforeValidator(_yaml_float)]  # an int stays an int (save_steps)


class Section(BaseModel):
    """Base of every section: strict types, unknown keys refused, no NaN/inf, immutable once loaded."""

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False, frozen=True)


def field_type(hint: Any, choices: tuple | None = None) -> Any:
    """A strict pydantic type for a dataclass / signature annotation (``Any`` where it cannot be expressed)."""
    origin = typing.get_origin(hint)
    if hint is Any or hint is inspect.Parameter.empty:
        return Any
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        args = typing.get_args(hint)
        enums = [a for a in args if isinstance(a, type) and issubclass(a, enum.Enum)]
        if enums:  # transformers' `IntervalStrategy | str`: the enum's values are the choices
            values = tuple(dict.fromkeys(m.value for e in enums for m in e))
            rest = [a for a in args if a not in enums and a is not str]
            lit = Annotated[Literal[values], BeforeValidator(_yaml_no)]  # type: ignore[valid-type]
            return typing.Union[tuple([lit, *[field_type(a) for a in rest]])] if rest else lit  # noqa: UP007
        mapped = tuple(field_type(a, choices) for a in args)
        return Any if Any in mapped else typing.Union[mapped]  # noqa: UP007
    if choices:
        if hint is str and False not in choices:  # with False a choice (scale_rewards), YAML's no is that False
            return Annotated[Literal[choices], BeforeValidator(_yaml_no)]  # type: ignore[valid-type]
        return Literal[choices]  # type: ignore[valid-type]
    if hint is float:
        return YamlFloat
    if hint is str:
        return Annotated[str, BeforeValidator(_yaml_no)]
    if hint in (int, bool, type(None)) or origin is Literal:
        return hint
    if origin in (list, dict, tuple) or hint in (list, dict):
        args = typing.get_args(hint)
        try:
            return origin[tuple(field_type(a) for a in args)] if args else hint
        except TypeError:
            return origin
    return Any


def jsonable(value: Any) -> Any:
    """A default as JSON can hold it: an enum's value, ``None`` for NaN/inf and for objects JSON cannot express."""
    value = value.value if isinstance(value, enum.Enum) else value
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value if isinstance(value, (str, int, float, bool, type(None), list, dict)) else None


# Ranges by what a value is, read from its name: outside them a constructor accepts it, then the run hangs/overflows.
MAX_SECONDS = 7 * 24 * 3600
MAX_COUNT = 10**8


def name_bounds(name: str, hint: Any = None) -> dict[str, Any]:
    """Pydantic bounds for a numeric field named ``name``: ports, timeouts (seconds) and sizes/counts.
    >>> name_bounds("vllm_server_port"), name_bounds("timeout")["le"], name_bounds("size")
    ({'ge': 1, 'le': 65535}, 604800, {'gt': 0, 'le': 100000000})
    """
    if hint is not None and not {int, float} & {hint, *typing.get_args(hint)}:
        return {}
    if name == "port" or name.endswith("_port"):
        return {"ge": 1, "le": 65535}
    if "timeout" in name:
        return {"gt": 0, "le": MAX_SECONDS}
    if name in ("size", "limit", "n", "max_workers") or name.endswith(("_size", "_length", "_len")):  # positive
        return {"gt": 0, "le": MAX_COUNT}  # sizes, pools, lengths (in tokens or characters: 0 trains on nothing)
    if name.endswith(("_rows", "_samples", "_steps")):
        return {"le": MAX_COUNT}
    return {}


def signature_model(name: str, func: Any, skip: typing.Container[str] = ()) -> type[Section]:
    """A ``Section`` whose fields are the keyword parameters of ``func`` (types and defaults from its signature)."""
    hints, fields = typing.get_type_hints(func), {}
    for pname, p in inspect.signature(func).parameters.items():
        if pname not in skip and pname != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            hint, default = hints.get(pname, Any), ... if p.default is p.empty else p.default
            fields[pname] = (field_type(hint), Field(default=default, **name_bounds(pname, hint)))
    return create_model(name, __base__=Section, **fields)


def dataclass_model(
    name: str,
    cls: type,
    doc: str = "",
    skip: typing.Container[str] = (),
    choices: Callable[[Any, Any, Any], Any] = lambda f, hint, default: f.metadata.get("choices"),
    bounds: Mapping[str, dict] | None = None,
) -> type[Section]:
    """A ``Section`` of a dataclass's init fields (``trl.GRPOConfig``): read, never copied; ``bounds`` add ranges."""
    hints, fields = typing.get_type_hints(cls), {}
    for f in (f for f in dataclasses.fields(cls) if f.init and f.name not in skip):
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        default, hint = None if default is dataclasses.MISSING else default, hints.get(f.name, Any)
        kind = field_type(hint, tuple(choices(f, hint, default) or ()) or None)
        ranges = {**name_bounds(f.name, hint), **(bounds or {}).get(f.name, {})}
        text = (f.metadata.get("help") or "")[:300] or None
        fields[f.name] = (kind, Field(jsonable(default), description=text, **ranges))
    return create_model(name, __base__=Section, __doc__=doc or cls.__doc__, **fields)


_TYPE_NAMES = dict.fromkeys(("int_type", "int_parsing", "int_from_float"), "int")
_TYPE_NAMES |= {"float_type": "float", "float_parsing": "float", "string_type": "str", "bool_type": "bool"}
_TYPE_NAMES |= {"bool_parsing": "bool", "list_type": "list", "tuple_type": "list", "none_required": "null"}
_TYPE_NAMES |= dict.fromkeys(("dict_type", "model_type", "model_attributes_type"), "mapping")
_BOUNDS = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<", "less_than_equal": "<="}
MAX_REPR = 60


def short(value: Any) -> str:
    """``repr`` bounded in length (a hostile value must not flood the terminal)."""
    text = repr(value) if not isinstance(value, (dict, list)) or len(value) < 20 else f"<{type(value).__name__}>"
    return text if len(text) <= MAX_REPR else text[: MAX_REPR - 3] + "..."


def _path(loc: tuple, value: Any) -> tuple[list, Any]:
    """The part of ``loc`` that names keys of the input (pydantic appends union member tags), and the value there."""
    path, node = [], value
    for part in loc:
        if not (isinstance(node, dict) and part in node or isinstance(node, list) and part in range(len(node))):
            break
        node = node[part]
        path.append(part)
    return path, node


def _kind_at(kind: Any, path: list) -> Any:
    """The type reached by ``path`` inside ``kind`` (``None`` when unknown; ``Options | None`` reads as Options)."""
    for part in path:
        while typing.get_origin(kind) is typing.Annotated:  # Annotated[list[Spec], ...] -> list[Spec]
            kind = typing.get_args(kind)[0]
        if isinstance(part, int):
            kind = (typing.get_args(kind) or (kind,))[0]  # list[Spec] -> Spec
            continue
        fields = getattr(kind, "model_fields", None)
        if not fields or part not in fields:
            return None
        kind = fields[part].annotation
        kind = next((a for a in typing.get_args(kind) if hasattr(a, "model_fields")), kind)
    return kind


def _takes_float(kind: Any) -> bool:
    return kind is float or any(_takes_float(a) for a in typing.get_args(kind))


class Hints(typing.NamedTuple):
    """What messages may add, from the layer that knows: hints by dotted key, by section, for unknown keys."""

    required: Mapping[str, str] = {}
    sections: Mapping[str, str] = {}
    unknown: Mapping[str, Callable[[str, list[str]], str]] = {}
    bounds: Mapping[str, str] = {}


NO_HINT = Hints()


def _one(key: str, errs: list[tuple[dict, Any, list]], file: str, section: str, kind: Any, hints: Hints) -> Problem:
    err, node, path = errs[0]
    kinds = {e["type"]: e for e, _, _ in errs}
    where, _, last = key.rpartition(".")
    fields = getattr(_kind_at(kind, path[:-1]), "model_fields", None) or {}  # for did-you-mean and what is missing
    if "extra_forbidden" in kinds:
        if where in hints.unknown:
            return Problem(file, key, hints.unknown[where](last, list(fields)))
        return Problem(file, key, f"unknown key{suggest(last, fields)}; {where} keys: {', '.join(fields)}")
    if "missing" in kinds:  # the hint, else the field's own description, says what to give
        need = hints.required.get(key) or getattr(fields.get(last), "description", None)
        return Problem(file, key, f"missing: {need}" if need else "missing")
    if "literal_error" in kinds:
        expected = kinds["literal_error"]["ctx"]["expected"]
        choices = [c.strip().strip("'") for c in expected.replace(" or ", ", ").split(", ")]
        why = f"{short(node)} is not allowed{suggest(node, choices)}; use one of {', '.join(choices)}"
        return Problem(file, key, why)
    if "finite_number" in kinds:
        return Problem(file, key, f"must be a finite number, got {short(node)}")
    for e, _, _ in errs:
        if e["type"] in _BOUNDS:
            bound = next(iter(e["ctx"].values()))
            why = hints.bounds.get(key, "")
            if e["type"] == "greater_than" and bound == 0:
                kind_name = "number" if isinstance(node, float) or _takes_float(_kind_at(kind, path)) else "integer"
                return Problem(file, key, f"must be a positive {kind_name}, got {short(node)}", why)
            return Problem(file, key, f"must be {_BOUNDS[e['type']]} {bound}, got {short(node)}", why)
        if e["type"] in ("too_short", "string_too_short"):
            return Problem(file, key, f"missing: {h}" if (h := hints.required.get(key)) else "must not be empty")
    if names := list(dict.fromkeys(_TYPE_NAMES[e["type"]] for e, _, _ in errs if e["type"] in _TYPE_NAMES)):
        if node is None and "null" not in names and path:
            return Problem(file, key, f"expected {'/'.join(names)}, got null (remove the key for the default)")
        expected = "/".join(n for n in names if not ("float" in names and n == "int"))
        if expected == "mapping" and not path:
            hint = hints.sections.get(section, "")
            expected = hint if hint.startswith("a ") else f"a mapping ({hint})" if hint else "a mapping"
            return Problem(file, key, f"must be {expected}, got {type(node).__name__} {short(node)}")
        if expected == "float":
            return Problem(file, key, f"must be a number (expected float), got {type(node).__name__} {short(node)}")
        return Problem(file, key, f"expected {expected}, got {type(node).__name__} {short(node)}")
    return Problem(file, key, err["msg"])


def validate_value(kind: Any, value: Any, file: str, prefix: str, hints: Hints = NO_HINT) -> tuple[Any, list[Problem]]:
    """``value`` validated as ``kind``: ``(coerced value of the keys given, [])`` or ``(None, a problem per key)``."""
    try:
        typed = TypeAdapter(kind).validate_python(value)
    except ValidationError as exc:
        grouped: dict[str, list[tuple[dict, Any, list]]] = {}
        for err in exc.errors():
            path, node = (list(err["loc"]), None) if err["type"] == "missing" else _path(tuple(err["loc"]), value)
            grouped.setdefault(".".join([prefix, *map(str, path)]), []).append((err, node, path))
        return None, [_one(key, errs, file, prefix, kind, hints) for key, errs in grouped.items()]
    except RecursionError:
        return None, [Problem(file, prefix, "nested too deeply")]
    return TypeAdapter(kind).dump_python(typed, exclude_unset=True), []
