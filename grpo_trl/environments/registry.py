"""Environments for TRL's ``environment_factory`` (one instance per rollout, its public methods the tools): the
registry, TRL's contract checked from the class, and each instance's guards (docs/tools-and-environments.md)."""

from __future__ import annotations

import functools
import inspect
import types
import typing
from collections.abc import Callable
from typing import Any

from grpo_trl.errors import GrpoTrlError, Problem, suggest
from grpo_trl.registry import Registry
from grpo_trl.tools.registry import ToolError, bounded, tool_schema

ENV_KEYS = ("factory", "args")


class EnvError(GrpoTrlError):
    """An environment could not be found or does not meet TRL's contract."""


ENVIRONMENTS = Registry(
    "environment",
    EnvError,
    duplicate="environment {name!r} is already registered; choose another name",
    unknown="unknown environment {name!r}{hint}; built-in: {names}; "
    "or give 'module.path:Class', or register one with @register_environment in a file under 'plugins:'",
    form="Class",
)


register_environment = ENVIRONMENTS.decorator  # @register_environment(name): a class or factory, default __name__
lookup_environment = ENVIRONMENTS.resolve  # the class or factory for a registered name or ``module.path:Class``


def is_multi(section: Any) -> bool:
    """A mapping of names to factories (rows pick one with an ``environment`` column), not a single factory."""
    return isinstance(section, dict) and "factory" not in section


def _entries(section: Any) -> dict[Any, Any]:
    """Name (None for a single one) -> its ``{factory, args}`` entry."""
    named = section.items() if is_multi(section) else [(None, section)]
    return {k: {"factory": v} if isinstance(v, str) else v for k, v in named}


def _key(name: Any) -> str:
    return "environment" if name is None else f"environment.{name}"


def _factory(spec: dict) -> tuple[Callable, dict]:
    """The class or factory an entry names and its ``args``."""
    obj = lookup_environment(spec["factory"])
    if not isinstance(args := spec.get("args") or {}, dict):
        raise EnvError("args must be a mapping of constructor arguments")
    if not callable(obj):
        raise EnvError(f"{spec['factory']!r} is not a class or a factory function")
    return obj, args


def environment_problems(section: Any) -> list[Problem]:
    """Everything wrong with an ``environment:`` section, read from the classes: nothing is built (a remote client
    must not connect during ``check``)."""
    if section is None:
        return []
    if not section or not isinstance(section, (dict, str)):
        why = "must be {factory: NAME, args: {...}} or a mapping of names to such entries"
        return [Problem("", "environment", why)]
    problems = []
    for name, spec in _entries(section).items():
        key = _key(name)
        if not isinstance(spec, dict) or "factory" not in spec:
            problems.append(Problem("", key, "must be a factory name or {factory: NAME or module:Class, args: {...}}"))
            continue
        for k in spec:
            if k not in ENV_KEYS:
                why = f"unknown key{suggest(k, ENV_KEYS)}; environment keys: factory, args"
                problems.append(Problem("", f"{key}.{k}", why))
        try:
            obj, args = _factory(spec)
            if (cls := environment_class(obj)) is not None:
                check_class(cls)
            inspect.signature(obj).bind(**args)  # what the constructor would refuse, read without calling it
        except EnvError as exc:
            problems.append(Problem("", f"{key}.factory", str(exc)))
        except TypeError as exc:
            problems.append(Problem("", f"{key}.args", f"the constructor refuses them: {exc}"))
        except ValueError:  # no signature to read: checked when built
            pass
    return problems


def environment_class(factory: Any) -> type | None:
    """The class ``factory`` builds, known without calling it (the class, or a factory's return annotation)."""
    if isinstance(factory, type):
        return factory
    try:
        hint = typing.get_type_hints(factory).get("return")
    except Exception:  # noqa: BLE001 - an annotation that does not resolve: checked when built
        return None
    return hint if isinstance(hint, type) else None


def tool_names(cls: type) -> list[str]:
    """The methods TRL exposes as tools: public functions of the class but ``reset``/``get_reward``."""
    members = inspect.getmembers(cls, predicate=inspect.isfunction)
    return [n for n, _ in members if n not in ("reset", "get_reward") and not n.startswith("_")]


def tool_methods(instance: Any) -> list[Callable]:
    """The bound tool methods of an environment instance."""
    return [getattr(instance, n) for n in tool_names(type(instance))]


def check_class(cls: type) -> None:
    """``EnvError`` unless ``cls`` meets TRL's contract: ``reset``, tool schemas, a callable ``get_reward``."""
    if not callable(getattr(cls, "reset", None)):
        raise EnvError(
            f"{cls.__name__} has no reset() method; TRL calls reset(**row) on every rollout: add "
            "`def reset(self, **row) -> str | None` (return text to append to the prompt, or None)"
        )
    stand_in = object()  # tools as the model sees them: bound, so ``self`` is not a parameter
    for n in tool_names(cls):
        method = getattr(cls, n)
        method = method if _static(cls, n) else types.MethodType(method, stand_in)
        try:
            tool_schema(method)
        except ToolError as exc:
            raise EnvError(f"{cls.__name__}.{method.__name__}: {exc}") from exc
    if inspect.getattr_static(cls, "get_reward", None) is not None and not callable(getattr(cls, "get_reward", None)):
        raise EnvError(f"{cls.__name__}.get_reward must be a method returning a float")


def _static(cls: type, name: str) -> bool:
    return isinstance(inspect.getattr_static(cls, name), staticmethod)


def owns_reward(section: Any) -> bool | None:
    """Whether an environment of a valid section defines ``get_reward()`` (None: only building one would tell)."""
    classes = [environment_class(_factory(spec)[0]) for spec in _entries(section).values()]
    if any(c is not None and callable(getattr(c, "get_reward", None)) for c in classes):
        return True
    return None if any(c is None for c in classes) else False


class EnvironmentFactory:
    """One entry of ``environment_factory``: the user's factory, its instances guarded (``_managed``); ``probe()``'s
    instance (prompts are rendered with it) is the trainer's first, so no extra one is built."""

    def __init__(self, factory: Callable, key: str = "environment", hide_reward: bool = False):
        self.factory, self.key, self.hide_reward, self._spare = factory, key, hide_reward, []

    def __call__(self) -> Any:
        return self._spare.pop() if self._spare else self._build()

    def probe(self) -> Any:
        self._spare = self._spare or [self._build()]
        return self._spare[0]

    def _build(self) -> Any:
        try:
            instance = self.factory()
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - a user constructor failing, or calling exit()
            why = f"building the environment failed: {type(exc).__name__}: {exc}"
            raise EnvError(why, key=f"{self.key}.args", fix="fix its constructor or args") from exc
        try:
            instance.__class__ = _managed(type(instance), self.hide_reward, self.key)
        except TypeError:  # a layout that cannot take a subclass (__slots__, a C type): used as written
            pass
        return instance


def build_environment_factory(section: Any, *, hide_reward: bool = False) -> Callable | dict[str, Callable]:
    """``environment_factory`` for ``GRPOTrainer``: one ``EnvironmentFactory``, or a dict of named ones.
    ``hide_reward``: the ``environment`` reward scores them, so TRL must not add ``get_reward`` a second time."""
    built = {}
    for n, spec in _entries(section).items():
        obj, args = _factory(spec)
        built[n] = EnvironmentFactory(functools.partial(obj, **args) if args else obj, _key(n), hide_reward)
    return built[None] if None in built else built


@functools.cache
def _managed(cls: type, hide_reward: bool, key: str) -> type:
    """``cls`` (same name, for TRL's ``rewards/<cls>/mean``) with ``bounded`` tools, a ``reset()`` that fails or
    returns other than text, content blocks or None as one ``EnvError``, ``get_reward`` hidden if ``hide_reward``."""
    attrs: dict[str, Any] = {}
    for n in tool_names(cls):
        attrs[n] = staticmethod(bounded(getattr(cls, n))) if _static(cls, n) else bounded(getattr(cls, n))
    original_reset = cls.reset

    def reset(self: Any, **row: Any) -> Any:
        where = f"{cls.__name__}.reset() (row columns: {', '.join(map(str, row)) or 'none'})"
        try:
            observation = original_reset(self, **row)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - TRL would stop here too, with a traceback
            why = f"{where} failed: {type(exc).__name__}: {str(exc)[:300]}"
            raise EnvError(why, key=key, fix="fix reset(); it must not raise") from exc
        if observation is not None and not isinstance(observation, (str, list)):
            why = f"{where} returned a value of type {type(observation).__name__}; TRL appends it to the prompt"
            raise EnvError(why, key=key, fix="return a string, a list of content blocks, or None")
        return observation

    if inspect.isfunction(original_reset) and not inspect.iscoroutinefunction(original_reset):
        attrs["reset"] = functools.wraps(original_reset)(reset)
    if hide_reward and callable(getattr(cls, "get_reward", None)):
        attrs["get_reward"] = None  # not a function: TRL does not see it
        attrs["_grpo_trl_get_reward"] = cls.get_reward
    return type(cls.__name__, (cls,), {**attrs, "__module__": cls.__module__, "__doc__": cls.__doc__})


def environment_score(env: Any) -> float | None:
    """What the environment's ``get_reward()`` says about its rollout (also when hidden from TRL), or None."""
    get = getattr(env, "_grpo_trl_get_reward", None) or getattr(env, "get_reward", None)
    return get() if callable(get) else None
