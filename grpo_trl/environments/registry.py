"""Environments for TRL's ``environment_factory``: one instance per rollout, its public methods are the tools.

TRL's contract (``GRPOTrainer(environment_factory=...)``): the class defines ``reset(**row)`` (called with the dataset
row before generation; a returned string is appended to the last user message), public methods with type hints and
Google-style docstrings (exposed to the model as tools), and optionally ``get_reward()`` (the environment scores the
rollout; TRL adds it as a reward column). A recipe names one factory, or maps names to factories chosen per row by an
``environment`` column::

    environment: {factory: countdown, args: {max_attempts: 3}}
    environment: {countdown: {factory: countdown}, other: {factory: my_pkg.envs:Maze}}

Example:
    >>> from grpo_trl.environments import build_environment_factory
    >>> factory = build_environment_factory({"factory": "countdown"})
    >>> env = factory()
    >>> env.reset(nums=[3, 5, 2], target=16) is None
    True
    >>> env.check_equation("(3 + 5) * 2"), env.get_reward()
    ('correct: (3 + 5) * 2 = 16', 1.0)
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from grpo_trl.errors import GrpoTrlError, suggest
from grpo_trl.targets import import_target

_REGISTRY: dict[str, Callable] = {}
ENV_KEYS = ("factory", "args")


class EnvError(GrpoTrlError):
    """An environment could not be found or does not meet TRL's contract. The message says what to change."""


def register_environment(name: str | None = None) -> Callable[[Callable], Callable]:
    """Decorator that registers an environment class (or factory) under ``name`` (default: its ``__name__``)."""

    def decorator(obj: Callable) -> Callable:
        reg = name or obj.__name__
        if reg in _REGISTRY and _REGISTRY[reg] is not obj and _REGISTRY[reg].__qualname__ != obj.__qualname__:
            raise EnvError(f"environment {reg!r} is already registered; choose another name")
        _REGISTRY[reg] = obj
        return obj

    return decorator


def _builtins_loaded() -> None:
    from grpo_trl.environments import countdown  # noqa: F401


def lookup_environment(name: str) -> Callable:
    """The class or factory for a registered name or ``module.path:Class``."""
    if not isinstance(name, str) or not name:
        raise EnvError(f"an environment factory is named by a string, got {name!r}")
    if ":" in name:
        return import_target(name, "environment", EnvError, form="Class")
    _builtins_loaded()
    if name not in _REGISTRY:
        raise EnvError(
            f"unknown environment {name!r}{suggest(name, list(_REGISTRY))}; built-in: {', '.join(sorted(_REGISTRY))}; "
            "or give 'module.path:Class', or register one with @register_environment in a file under 'plugins:'"
        )
    return _REGISTRY[name]


def is_multi(section: Any) -> bool:
    """A mapping of names to factories (rows pick one with an ``environment`` column), not a single factory."""
    return isinstance(section, dict) and "factory" not in section


def _entries(section: Any) -> dict[Any, Any]:
    if is_multi(section):
        return {k: ({"factory": v} if isinstance(v, str) else v) for k, v in section.items()}
    return {None: {"factory": section} if isinstance(section, str) else section}


def environment_problems(section: Any) -> list[tuple[str, str]]:
    """``(key, message)`` for everything wrong with an ``environment:`` section; probes one instance of each."""
    if section is None:
        return []
    if not isinstance(section, (dict, str)) or (isinstance(section, dict) and not section):
        return [("environment", "must be {factory: NAME, args: {...}} or a mapping of names to such entries")]
    problems = []
    for name, spec in _entries(section).items():
        key = "environment" if name is None else f"environment.{name}"
        if not isinstance(spec, dict) or "factory" not in spec:
            problems.append((key, "must be a factory name or {factory: NAME or module:Class, args: {...}}"))
            continue
        for k in spec:
            if k not in ENV_KEYS:
                problems.append((f"{key}.{k}", f"unknown key{suggest(k, ENV_KEYS)}; environment keys: factory, args"))
        try:
            check_environment(_factory(spec))
        except EnvError as exc:
            problems.append((f"{key}.factory", str(exc)))
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - a user factory failing to build, or calling exit()
            problems.append((f"{key}.args", f"building the environment failed: {type(exc).__name__}: {exc}"))
    return problems


def _factory(spec: dict) -> Callable:
    obj = lookup_environment(spec["factory"])
    args = spec.get("args") or {}
    if not isinstance(args, dict):
        raise EnvError("args must be a mapping of constructor arguments")
    if not callable(obj):
        raise EnvError(f"{spec['factory']!r} is not a class or a factory function")
    return functools.partial(obj, **args) if args else obj


def tool_names(cls: type) -> list[str]:
    """The methods TRL exposes as tools, as TRL lists them: public functions on the class but reset/get_reward."""
    return [
        n
        for n, _ in inspect.getmembers(cls, predicate=inspect.isfunction)
        if n not in ("reset", "get_reward") and not n.startswith("_")
    ]


def tool_methods(instance: Any) -> list[Callable]:
    """The bound tool methods of an environment instance (``tool_names`` of its class)."""
    return [getattr(instance, n) for n in tool_names(type(instance))]


def check_environment(factory: Callable) -> None:
    """Build one instance and check it the way TRL will use it: ``reset``, tool schemas, ``get_reward``."""
    from grpo_trl.tools.registry import ToolError, tool_schema

    instance = factory()
    if not callable(getattr(type(instance), "reset", None)):
        raise EnvError(
            f"{type(instance).__name__} has no reset() method; TRL calls reset(**row) on every rollout: add "
            "`def reset(self, **row) -> str | None` (return text to append to the prompt, or None)"
        )
    methods = tool_methods(instance)
    get_reward = getattr(type(instance), "get_reward", None)
    for method in methods:
        try:
            tool_schema(method)
        except ToolError as exc:
            raise EnvError(f"{type(instance).__name__}.{method.__name__}: {exc}") from exc
    if get_reward is not None and not callable(get_reward):
        raise EnvError(f"{type(instance).__name__}.get_reward must be a method returning a float")


def owns_reward(section: Any) -> bool:
    """Whether any environment of a valid section defines ``get_reward()`` (builds one instance of each)."""
    return any(callable(getattr(type(_factory(spec)()), "get_reward", None)) for spec in _entries(section).values())


def build_environment_factory(section: Any, *, hide_reward: bool = False) -> Callable | dict[str, Callable]:
    """``environment_factory`` for ``GRPOTrainer``: one callable, or a dict of named callables.

    ``hide_reward``: the recipe scores environments through the ``environment`` reward (with its weight), so TRL must
    not add ``get_reward`` a second time on its own (TRL adds a reward column for any class defining it).
    """
    built = {name: functools.partial(_with_bounded_tools, _factory(spec)) for name, spec in _entries(section).items()}
    if hide_reward:
        built = {name: functools.partial(_without_trl_reward, f) for name, f in built.items()}
    return built[None] if None in built else built


@functools.cache
def _bounded(cls: type) -> type:
    """A subclass whose tool methods are ``tools.registry.bounded`` like any tool: a call that hangs, raises or calls
    ``exit()`` fails that call only. Same names, signatures and docstrings, so the model sees the same schemas."""
    from grpo_trl.tools.registry import bounded

    tools = {n: _rewrap(cls, n, bounded(getattr(cls, n))) for n in tool_names(cls)}
    return type(cls.__name__, (cls,), {**tools, "__module__": cls.__module__, "__doc__": cls.__doc__})


def _rewrap(cls: type, name: str, func: Callable) -> Any:
    """A ``@staticmethod`` tool stays one (TRL calls it without ``self``), a plain method stays a method."""
    return staticmethod(func) if isinstance(inspect.getattr_static(cls, name), staticmethod) else func


def _with_bounded_tools(factory: Callable) -> Any:
    instance = factory()
    try:
        instance.__class__ = _bounded(type(instance))
    except TypeError:  # a layout that cannot take a subclass (__slots__, a C type): its tools stay as written
        pass
    return instance


@functools.cache
def _hidden(cls: type) -> type:
    """A subclass whose ``get_reward`` TRL does not see (not a function); the score stays reachable for our reward."""
    return type(cls.__name__, (cls,), {"get_reward": None, "_grpo_trl_get_reward": cls.get_reward})


def _without_trl_reward(factory: Callable) -> Any:
    instance = factory()
    if callable(getattr(type(instance), "get_reward", None)):
        instance.__class__ = _hidden(type(instance))
    return instance


def environment_score(env: Any) -> float | None:
    """What the environment's ``get_reward()`` says about its rollout (also when hidden from TRL), or None."""
    get = getattr(env, "_grpo_trl_get_reward", None) or getattr(env, "get_reward", None)
    return get() if callable(get) else None
