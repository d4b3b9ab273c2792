"""The building blocks of the recipe schema: the ``Section`` base, the YAML quirks coerced once, and pydantic types
read from Python annotations (a function's signature or a dataclass field), never written by hand.

Example:
    >>> field_type(float) is YamlFloat, field_type(str, ("no", "steps")) is not str
    (True, True)
    >>> def build(*, rows: int = 4, name: str = "x"): ...
    >>> signature_model("BuildOptions", build).model_validate({"rows": 8}).rows
    8
"""

from __future__ import annotations

import enum
import inspect
import math
import typing
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, create_model


# ------------------------------------------------------------------------------------------------ YAML coercions
def _yaml_float(value: Any) -> Any:
    """PyYAML reads ``1e-6`` (no dot) as a string: accept it where a float is expected."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def _yaml_no(value: Any) -> Any:
    """YAML 1.1 reads an unquoted ``no`` as ``False``: for string fields (``save_strategy: no``) it meant ``"no"``."""
    return "no" if value is False else value


YamlFloat = Annotated[int | float, BeforeValidator(_yaml_float)]  # an int stays an int (save_steps)


class Section(BaseModel):
    """Base of every section: strict types, unknown keys refused, no NaN/inf, immutable once loaded."""

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False, frozen=True)


# ------------------------------------------------------------------------------------------------ annotations
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
    if hint in (int, bool, type(None)):
        return hint
    if origin in (list, dict, tuple) or hint in (list, dict):
        args = typing.get_args(hint)
        if not args:
            return hint
        try:
            return origin[tuple(field_type(a) for a in args)] if origin is not list else list[field_type(args[0])]
        except TypeError:
            return origin
    if origin is Literal:
        return hint
    return Any


def jsonable(value: Any) -> Any:
    """A default as JSON can hold it: an enum's value, ``None`` for NaN/inf and for objects JSON cannot express."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value if isinstance(value, (str, int, float, bool, type(None), list, dict)) else None


def signature_model(name: str, func: Any, skip: typing.Container[str] = ()) -> type[Section]:
    """A ``Section`` whose fields are the keyword parameters of ``func`` (types and defaults from its signature)."""
    hints = typing.get_type_hints(func)
    fields: dict[str, Any] = {}
    for pname, p in inspect.signature(func).parameters.items():
        if pname in skip or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or pname == "self":
            continue
        default = ... if p.default is p.empty else p.default
        fields[pname] = (field_type(hints.get(pname, Any)), Field(default=default))
    return create_model(name, __base__=Section, **fields)
