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
import types
import typing
from collections.abc import Callable
from typing import Any

from grpo_trl.errors import GrpoTrlError, Problem, suggest
from grpo_trl.registry import Registry
from grpo_trl.tools.registry import ToolError, bounded, tool_schema

ENV_KEYS = ("factory", "args")


class EnvError(GrpoTrlError):
    """An environment could not be found or does not meet TRL's contract. The message says what to change."""


ENVIRONMENTS = Registry(
    "environment",
    EnvError,
    duplicate="environment {name!r} is already registered; choose another name",
    unknown="unknown environment {name!r}{hint}; built-in: {names}; "
    "or give 'module.path:Class', or register one with @register_environment in a file under 'plugins:'",
    form="Class",
)


def register_environment(name: str | None = None) -> Callable[[Callable], Callable]:
    """Decorator that registers an environment class (or factory) under ``name`` (default: its ``__name__``).
    Duplicates are an error."""
    return ENVIRONMENTS.decorator(name)


def lookup_environment(name: str) -> Callable:
    """The class or factory for a registered name or ``module.path:Class``."""
    if not isinstance(name, str) or not name:
        raise EnvError(f"an environment factory is named by a string, got {name!r}")
    return ENVIRONMENTS.resolve(name)


def is_multi(section: Any) -> bool:
    """A mapping of names to factories (rows pick one with an ``environment`` column), not a single factory."""
    return isinstance(section, dict) and "factory" not in section


def _entries(section: Any) -> dict[Any, Any]:
    if is_multi(section):
        return {k: ({"factory": v} if isinstance(v, str) else v) for k, v in section.items()}
    return {None: {"factory": section} if isinstance(section, str) else section}


def environment_problems(section: Any) -> list[Problem]:
    """``(key, message)`` for everything wrong with an ``environment:`` section, read from the classes: nothing is
    built (an environment opening a remote client must not connect during ``check``). A factory function that does
    not annotate the class it returns is checked when ``train`` builds it."""
    if section is None:
        return []
    if not isinstance(section, (dict, str)) or (isinstance(section, dict) and not section):
        return [
            Problem("", "environment", "must be {factory: NAME, args: {...}} or a mapping of names to such entries")
        ]
    problems = []
    for name, spec in _entries(section).items():
        key = entry_key(name)
        if not isinstance(spec, dict) or "factory" not in spec:
            problems.append(Problem("", key, "must be a factory name or {factory: NAME or module:Class, args: {...}}"))
            continue
        for k in spec:
            if k not in ENV_KEYS:
                problems.append(
                    Problem("", f"{key}.{k}", f"unknown key{suggest(k, ENV_KEYS)}; environment keys: factory, args")
                )
        try:
            obj = _factory(spec)
        except EnvError as exc:
            problems.append(Problem("", f"{key}.factory", str(exc)))
            continue
        if why := _args_problem(obj):
            problems.append(Problem("", f"{key}.args", why))
            continue
        cls = environment_class(obj)
        if cls is not None:
            try:
                check_class(cls)
            except EnvError as exc:
                problems.append(Problem("", f"{key}.factory", str(exc)))
    return problems


def entry_key(name: Any) -> str:
    """The recipe key of one environment entry: ``environment`` or ``environment.<name>``."""
    return "environment" if name is None else f"environment.{name}"


def _args_problem(obj: Callable) -> str | None:
    """Why the constructor would refuse ``args:`` (its signature, read without calling it), or None."""
    target, args = (obj.func, obj.keywords) if isinstance(obj, functools.partial) else (obj, {})
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):  # a C type or a callable without a signature: checked when built
        return None
    try:
        signature.bind(**args)
    except TypeError as exc:
        return f"the constructor refuses them: {exc}"
    return None


def _factory(spec: dict) -> Callable:
    obj = lookup_environment(spec["factory"])
    args = spec.get("args") or {}
    if not isinstance(args, dict):
        raise EnvError("args must be a mapping of constructor arguments")
    if not callable(obj):
        raise EnvError(f"{spec['factory']!r} is not a class or a factory function")
    return functools.partial(obj, **args) if args else obj


def environment_class(factory: Any) -> type | None:
    """The class ``factory`` builds, known without calling it: the class itself, or the return annotation of a
    factory function; None when only calling it would tell."""
    target = factory.func if isinstance(factory, functools.partial) else factory
    if isinstance(target, type):
        return target
    try:
        hint = typing.get_type_hints(target).get("return")
    except Exception:  # noqa: BLE001 - an annotation that does not resolve: checked when built
        return None
    return hint if isinstance(hint, type) else None


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


def class_tools(cls: type) -> list[Callable]:
    """The tools of ``cls`` as the model sees them (bound to a stand-in, so ``self`` is not a parameter), for schema
    checks without building an instance."""
    stand_in = object()
    out = []
    for n in tool_names(cls):
        func = getattr(cls, n)
        static = isinstance(inspect.getattr_static(cls, n), staticmethod)
        out.append(func if static else types.MethodType(func, stand_in))
    return out


def check_class(cls: type) -> None:
    """``EnvError`` unless ``cls`` meets TRL's contract: ``reset``, tool schemas, a callable ``get_reward``."""
    if not callable(getattr(cls, "reset", None)):
        raise EnvError(
            f"{cls.__name__} has no reset() method; TRL calls reset(**row) on every rollout: add "
            "`def reset(self, **row) -> str | None` (return text to append to the prompt, or None)"
        )
    for method in class_tools(cls):
        try:
            tool_schema(method)
        except ToolError as exc:
            raise EnvError(f"{cls.__name__}.{method.__name__}: {exc}") from exc
    get_reward = inspect.getattr_static(cls, "get_reward", None)
    if get_reward is not None and not callable(getattr(cls, "get_reward", None)):
        raise EnvError(f"{cls.__name__}.get_reward must be a method returning a float")


def check_environment(factory: Callable) -> None:
    """``check_class`` of what ``factory`` builds (built once when its class is not known from the factory)."""
    check_class(environment_class(factory) or type(factory()))


def owns_reward(section: Any) -> bool | None:
    """Whether any environment of a valid section defines ``get_reward()``, read from the classes (None: a factory
    function that does not say what it returns, known once built)."""
    classes = [environment_class(_factory(spec)) for spec in _entries(section).values()]
    if any(c is not None and callable(getattr(c, "get_reward", None)) for c in classes):
        return True
    return None if any(c is None for c in classes) else False


class EnvironmentFactory:
    """One entry of ``environment_factory``: builds an instance as the user's factory does, then gives it grpo-trl's
    guards (see ``_managed``). A constructor that raises or calls ``exit()`` is one ``EnvError`` naming the entry.

    ``probe()`` builds the instance grpo-trl reads tool schemas from before the trainer exists (prompt rendering,
    token filters) and keeps it: the trainer's own first call (TRL's probe, which seeds its pool) gets that instance,
    so a run builds exactly as many environments as plain TRL.
    """

    def __init__(self, factory: Callable, key: str = "environment", hide_reward: bool = False):
        self.factory, self.key, self.hide_reward = factory, key, hide_reward
        self._spare: Any = None

    def __call__(self) -> Any:
        if self._spare is not None:
            instance, self._spare = self._spare, None
            return instance
        return self._build()

    def probe(self) -> Any:
        if self._spare is None:
            self._spare = self._build()
        return self._spare

    def _build(self) -> Any:
        try:
            instance = self.factory()
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - a user constructor failing, or calling exit()
            raise EnvError(
                f"building the environment failed: {type(exc).__name__}: {exc}",
                key=f"{self.key}.args",
                fix="fix its constructor or args",
            ) from exc
        try:
            instance.__class__ = _managed(type(instance), self.hide_reward, self.key)
        except TypeError:  # a layout that cannot take a subclass (__slots__, a C type): used as written
            pass
        return instance


def build_environment_factory(section: Any, *, hide_reward: bool = False) -> Callable | dict[str, Callable]:
    """``environment_factory`` for ``GRPOTrainer``: one ``EnvironmentFactory``, or a dict of named ones.

    ``hide_reward``: the recipe scores environments through the ``environment`` reward (with its weight), so TRL must
    not add ``get_reward`` a second time on its own (TRL adds a reward column for any class defining it).
    """
    built = {
        name: EnvironmentFactory(_factory(spec), entry_key(name), hide_reward)
        for name, spec in _entries(section).items()
    }
    return built[None] if None in built else built


@functools.cache
def _managed(cls: type, hide_reward: bool, key: str) -> type:
    """A subclass of ``cls`` (same name, so TRL logs ``rewards/<cls>/mean``) whose

    - tool methods are ``tools.registry.bounded`` like any tool: a call that hangs, raises, calls ``exit()`` or
      returns what ``str()`` cannot render fails that call only; same signatures and docstrings, same schemas;
    - ``reset()`` failing (raising, calling ``exit()``) or returning anything but text, content blocks or None is one
      ``EnvError`` naming the class and the row's columns: TRL calls ``reset`` outside any guard and stops with a
      traceback (``10**5000`` added to the prompt text), grpo-trl stops with one ``error:`` line instead;
    - ``get_reward`` is hidden from TRL when ``hide_reward`` (the ``environment`` reward scores it, once).
    """
    attrs: dict[str, Any] = {n: _rewrap(cls, n, bounded(getattr(cls, n))) for n in tool_names(cls)}
    original_reset = cls.reset

    def reset(self: Any, **row: Any) -> Any:
        where = f"{cls.__name__}.reset() (row columns: {', '.join(map(str, row)) or 'none'})"
        try:
            observation = original_reset(self, **row)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - TRL would stop here too, with a traceback
            raise EnvError(
                f"{where} failed: {type(exc).__name__}: {str(exc)[:300]}",
                key=key,
                fix="fix reset(); it must not raise",
            ) from exc
        if observation is not None and not isinstance(observation, (str, list)):
            raise EnvError(
                f"{where} returned a value of type {type(observation).__name__}; TRL appends it to the prompt",
                key=key,
                fix="return a string, a list of content blocks, or None",
            )
        return observation

    if inspect.isfunction(original_reset) and not inspect.iscoroutinefunction(original_reset):
        attrs["reset"] = functools.wraps(original_reset)(reset)
    if hide_reward and callable(getattr(cls, "get_reward", None)):
        attrs["get_reward"] = None  # not a function: TRL does not see it
        attrs["_grpo_trl_get_reward"] = cls.get_reward
    return type(cls.__name__, (cls,), {**attrs, "__module__": cls.__module__, "__doc__": cls.__doc__})


def _rewrap(cls: type, name: str, func: Callable) -> Any:
    """A ``@staticmethod`` tool stays one (TRL calls it without ``self``), a plain method stays a method."""
    return staticmethod(func) if isinstance(inspect.getattr_static(cls, name), staticmethod) else func


def environment_score(env: Any) -> float | None:
    """What the environment's ``get_reward()`` says about its rollout (also when hidden from TRL), or None."""
    get = getattr(env, "_grpo_trl_get_reward", None) or getattr(env, "get_reward", None)
    return get() if callable(get) else None
