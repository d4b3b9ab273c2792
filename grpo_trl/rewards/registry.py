"""The reward registry: register, look up, list; plugin loading; the safety wrapper every recipe reward runs in.

A reward is a function in TRL's signature ``(completions, **kwargs) -> list[float | None]``: ``completions`` are
plain strings or conversational message lists, ``kwargs`` hold the dataset's extra columns (``solution``, ``nums``...)
plus what TRL adds (``prompts``, ``completion_ids``, ``trainer_state``, ``log_metric``...).

Example:
    >>> from grpo_trl.rewards import register_reward, get_reward
    >>> @register_reward("says_yes_doc")
    ... def says_yes(completions, bonus: float = 1.0, **kwargs):
    ...     "1 when the completion contains 'yes'."
    ...     return [bonus if "yes" in c else 0.0 for c in completions]
    >>> reward = get_reward("says_yes_doc", bonus=2.0)
    >>> reward.__name__, reward(["yes", "no"])
    ('says_yes_doc', [2.0, 0.0])
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import inspect
import logging
import math
import numbers
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grpo_trl.rewards.text import completion_text

logger = logging.getLogger(__name__)

RewardFunc = Callable[..., list]

# Arguments TRL passes itself: never reward "args" a recipe may set.
TRL_KWARGS = frozenset(
    {"prompts", "completions", "completion_ids", "trainer_state", "log_extra", "log_metric", "environments"}
)


class RewardError(ValueError):
    """A reward could not be found, registered or configured. The message says what to change."""


@dataclass(frozen=True)
class RewardInfo:
    """What ``list_rewards`` returns for one registered reward."""

    name: str
    description: str
    params: dict[str, Any]  # argument -> default (``inspect.Parameter.empty`` when required)
    factory: bool
    source: str


_REGISTRY: dict[str, tuple[Callable, bool, str]] = {}  # name -> (function or factory, is_factory, where from)
_LOADED_PLUGINS: set[str] = set()


def register_reward(name: str | None = None, *, factory: bool | None = None) -> Callable[[Callable], Callable]:
    """Decorator that registers a reward under ``name`` (default: the function's name). Duplicates are an error.

    A plain function receives its recipe ``args`` as keyword arguments on every call. A *factory* (a class, or
    ``factory=True``) is called once with the ``args`` and must return the reward callable: use it for rewards that
    precompute or hold state (caches, workers).
    """

    def decorator(obj: Callable) -> Callable:
        reg_name = name or obj.__name__
        is_factory = inspect.isclass(obj) if factory is None else factory
        source = f"{getattr(obj, '__module__', '?')}:{getattr(obj, '__qualname__', reg_name)}"
        if reg_name in _REGISTRY:
            prev = _REGISTRY[reg_name][2]
            if prev == source:  # the same definition imported twice (e.g. a plugin module re-executed)
                _REGISTRY[reg_name] = (obj, is_factory, source)
                return obj
            raise RewardError(
                f"reward {reg_name!r} is already registered by {prev}; choose another name for {source} "
                "(register_reward('my_name'))"
            )
        _REGISTRY[reg_name] = (obj, is_factory, source)
        return obj

    return decorator


def unregister_reward(name: str) -> None:
    """Remove ``name`` from the registry (for tests and notebooks that redefine a reward)."""
    _REGISTRY.pop(name, None)


def _builtins_loaded() -> None:
    # Importing the modules registers the built-ins; done lazily so `import grpo_trl` stays light.
    from grpo_trl.rewards import countdown, format, math, shaping  # noqa: F401


def _params(obj: Callable, is_factory: bool) -> dict[str, Any]:
    target = obj.__init__ if inspect.isclass(obj) else obj
    params = {}
    for pname, p in inspect.signature(target).parameters.items():
        if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL) or pname in ("self",) or pname in TRL_KWARGS:
            continue
        if not is_factory and p.default is p.empty:
            continue  # a dataset column the reward reads (solution, nums...), not an argument
        params[pname] = p.default
    return params


def list_rewards() -> list[RewardInfo]:
    """All registered rewards, sorted by name, with one-line descriptions and their arguments."""
    _builtins_loaded()
    out = []
    for name, (obj, is_factory, source) in sorted(_REGISTRY.items()):
        doc = inspect.getdoc(obj) or ""
        out.append(RewardInfo(name, doc.split("\n")[0], _params(obj, is_factory), is_factory, source))
    return out


def suggest(name: str, choices: list[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest choice, or an empty string."""
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def load_plugin(path: str | Path) -> None:
    """Execute a Python file that registers rewards with ``@register_reward`` (ms-swift's ``--external_plugins``)."""
    p = Path(path).expanduser().resolve()
    if str(p) in _LOADED_PLUGINS:
        return
    if not p.is_file():
        raise RewardError(
            f"plugin file {str(path)!r} does not exist; fix the path under 'plugins:' (relative to the recipe)"
        )
    mod_name = f"grpo_trl_plugin_{p.stem}_{abs(hash(str(p))) % 10**8}"
    spec = importlib.util.spec_from_file_location(mod_name, p)
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module  # lets the plugin's rewards pickle by reference
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(mod_name, None)
        raise RewardError(f"plugin file {str(path)!r} failed to import: {type(exc).__name__}: {exc}") from exc
    _LOADED_PLUGINS.add(str(p))


def _lookup(name: str) -> tuple[Callable, bool]:
    if ":" in name:  # module.path:function
        mod_name, _, attr = name.partition(":")
        try:
            module = importlib.import_module(mod_name)
        except ImportError as exc:
            raise RewardError(
                f"reward {name!r}: cannot import module {mod_name!r} ({exc}); is it on PYTHONPATH?"
            ) from exc
        if not hasattr(module, attr):
            raise RewardError(f"reward {name!r}: module {mod_name!r} has no attribute {attr!r}")
        obj = getattr(module, attr)
        for o, is_factory, _ in _REGISTRY.values():
            if o is obj:
                return o, is_factory
        return obj, inspect.isclass(obj)
    _builtins_loaded()
    if name not in _REGISTRY:
        raise RewardError(
            f"unknown reward {name!r}{suggest(name, list(_REGISTRY))}; `grpo-trl rewards` lists them, and your own "
            "can be given as 'module.path:function' or registered in a file listed under 'plugins:'"
        )
    obj, is_factory, _ = _REGISTRY[name]
    return obj, is_factory


def check_reward_args(name: str, args: dict[str, Any]) -> None:
    """Raise ``RewardError`` naming any argument the reward does not take, or a required one that is missing."""
    obj, is_factory = _lookup(name)
    target = obj.__init__ if inspect.isclass(obj) else obj
    sig = inspect.signature(target)
    accepts_any = is_factory and any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
    params = _params(obj, is_factory)
    for key in args:
        if key in TRL_KWARGS:
            raise RewardError(f"reward {name!r}: argument {key!r} is passed by TRL itself; remove it from args")
        if key not in params and not accepts_any:
            known = ", ".join(params) or "none"
            raise RewardError(
                f"reward {name!r} has no argument {key!r}{suggest(key, list(params))}; it takes: {known}"
            )
    if is_factory:
        missing = [k for k, v in params.items() if v is inspect.Parameter.empty and k not in args]
        if missing:
            raise RewardError(f"reward {name!r} needs argument(s) {', '.join(missing)} under its 'args:'")


class NamedReward:
    """A registered reward with its arguments bound and a stable ``__name__`` (TRL logs ``rewards/<name>/mean``).

    Picklable when the underlying function or factory product is.
    """

    def __init__(self, name: str, func: Callable, args: dict[str, Any] | None = None):
        self.__name__ = name
        self.func = func
        self.args = dict(args or {})

    def __call__(self, completions: list, **kwargs: Any) -> list[float | None]:
        return self.func(completions, **{**kwargs, **self.args})

    def __repr__(self) -> str:
        return f"NamedReward({self.__name__!r}, args={self.args})"


def reward_label(name: str, alias: str | None = None) -> str:
    """The name TRL logs a reward under: ``alias``, else ``name`` (the part after ``:`` for ``module:function``)."""
    return alias or str(name).rpartition(":")[2]


def get_reward(name: str, alias: str | None = None, **args: Any) -> NamedReward:
    """The reward ``name`` (registered name or ``module.path:function``) with ``args`` bound.

    Its ``__name__`` is ``alias`` or ``name`` (the part after ``:`` for a module reference).
    """
    check_reward_args(name, args)
    obj, is_factory = _lookup(name)
    label = reward_label(name, alias)
    if is_factory:
        return NamedReward(label, obj(**args))
    return NamedReward(label, obj, args)


class SafeReward:
    """Runs a reward so that it can never crash a run.

    - completions in either format reach the reward as TRL sent them; the result is checked:
      a wrong length makes every row ``None`` (logged), a non-number or NaN/inf becomes ``None`` for that row;
    - an exception makes the reward be called again row by row, so only the rows that raise become ``None``;
    - with ``timeout`` (seconds) the call runs in a worker thread and is abandoned after that long (rows ``None``).
      Python cannot kill a thread: a reward stuck in pure Python keeps a core busy until it returns.

    Each problem is counted in the metric ``reward_faults/<name>`` (rows affected per batch), via TRL's ``log_metric``.
    """

    def __init__(self, reward: Callable, timeout: float | None = None):
        self.reward = reward
        self.timeout = timeout
        self.__name__ = getattr(reward, "__name__", type(reward).__name__)
        self.faults = 0  # rows turned into None over this object's lifetime

    def _call(self, completions: list, kwargs: dict) -> Any:
        if self.timeout is None:
            return self.reward(completions, **kwargs)
        box: dict[str, Any] = {}

        def target() -> None:
            try:
                box["value"] = self.reward(completions, **kwargs)
            except BaseException as exc:  # noqa: BLE001 - reported below
                box["error"] = exc

        worker = threading.Thread(target=target, name=f"reward-{self.__name__}", daemon=True)
        worker.start()
        worker.join(self.timeout)
        if worker.is_alive():
            raise TimeoutError(f"reward {self.__name__!r} did not return within {self.timeout} s")
        if "error" in box:
            raise box["error"]
        return box.get("value")

    def _checked(self, completions: list, kwargs: dict) -> tuple[list[float | None], int]:
        """Call once; validate the result. Raises on an exception, a timeout or a wrong length."""
        n = len(completions)
        raw = self._call(completions, kwargs)
        if not isinstance(raw, (list, tuple)) or len(raw) != n:
            got = len(raw) if isinstance(raw, (list, tuple)) else type(raw).__name__
            raise LengthError(f"returned {got} values for {n} completions")
        out, bad = [], 0
        for value in raw:
            if value is None:
                out.append(None)
                continue
            f = float(value) if isinstance(value, numbers.Real) else math.nan  # "1.0" (a str) is not a score
            if not math.isfinite(f):
                bad += 1
                out.append(None)
            else:
                out.append(f)
        return out, bad

    def _row_by_row(self, completions: list, kwargs: dict) -> tuple[list[float | None], int]:
        """After an exception: score each row alone, so only the rows that fail become None."""
        n = len(completions)
        out, bad = [], 0
        for i in range(n):
            row_kwargs = {k: (v[i : i + 1] if isinstance(v, list) and len(v) == n else v) for k, v in kwargs.items()}
            try:
                value, row_bad = self._checked(completions[i : i + 1], row_kwargs)
                out.append(value[0])
                bad += row_bad
            except Exception:  # noqa: BLE001 - this row is the faulty one
                out.append(None)
                bad += 1
        return out, bad

    def __call__(self, completions: list, **kwargs: Any) -> list[float | None]:
        n = len(completions)
        log_metric = kwargs.get("log_metric")
        start = time.perf_counter()
        try:
            out, bad = self._checked(completions, kwargs)
            if bad:
                logger.warning(
                    "reward %r returned %d non-finite or non-numeric value(s); scored None", self.__name__, bad
                )
        except (TimeoutError, LengthError) as exc:  # retrying row by row would repeat the hang / the bug n times
            logger.warning("reward %r on a batch of %d: %s; rows scored None", self.__name__, n, exc)
            out, bad = [None] * n, n
        except Exception as exc:  # noqa: BLE001 - a reward must never end a run
            out, bad = self._row_by_row(completions, kwargs) if n > 1 else ([None] * n, n)
            logger.warning(
                "reward %r raised %s: %s; %d of %d row(s) scored None", self.__name__, type(exc).__name__, exc, bad, n
            )
        self.faults += bad
        if callable(log_metric):
            log_metric(f"reward_faults/{self.__name__}", float(bad))
            log_metric(f"timing/reward_s/{self.__name__}", time.perf_counter() - start)
        return out


class LengthError(ValueError):
    """A reward returned a list of the wrong length (or not a list)."""


def required_columns(reward: Callable) -> list[str]:
    """Dataset columns a reward reads: parameters of its call without a default, besides TRL's own and bound args."""
    target = getattr(reward, "reward", reward)  # SafeReward -> NamedReward
    func = getattr(target, "func", target)  # NamedReward -> function or factory product
    try:
        params = inspect.signature(func).parameters  # a function, or a callable instance (its bound __call__)
    except (TypeError, ValueError):
        return []
    bound = getattr(target, "args", {})
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [
        name
        for name, p in params.items()
        if p.default is p.empty and p.kind in kinds and name not in TRL_KWARGS and name not in bound
    ]


def text_of(completions: list) -> list[str]:
    """Texts of a batch of completions in either format (see ``completion_text``)."""
    return [completion_text(c) for c in completions]
