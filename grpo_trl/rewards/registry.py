"""The reward registry: register, look up, list; plugin loading. How rewards are called: ``grpo_trl.rewards.call``.

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

import importlib.util
import inspect
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grpo_trl.errors import RewardError, suggest
from grpo_trl.rewards.call import TRL_KWARGS, NamedReward, SafeReward  # noqa: F401 - how rewards are called
from grpo_trl.rewards.results import LengthError  # noqa: F401 - re-exported
from grpo_trl.rewards.signature import required_columns  # noqa: F401 - re-exported
from grpo_trl.rewards.text import completion_text
from grpo_trl.targets import PLUGIN_MODULE_PREFIX, file_module, import_failure, import_target, remember_file

logger = logging.getLogger(__name__)

RewardFunc = Callable[..., list]


@dataclass(frozen=True)
class RewardInfo:
    """What ``list_rewards`` returns for one registered reward."""

    name: str
    description: str
    params: dict[str, Any]  # argument -> default (``inspect.Parameter.empty`` when required)
    factory: bool
    source: str


_REGISTRY: dict[str, tuple[Callable, bool, str]] = {}  # name -> (function or factory, is_factory, where from)
_METADATA: dict[str, dict[str, Any]] = {}  # name -> what the reward declared (uses_trainer, ...)
_LOADED_PLUGINS: set[str] = set()
_UNREGISTERED: dict[str, list[str]] = {}  # plugin file -> its plain functions, when it registered nothing


def register_reward(
    name: str | None = None,
    *,
    factory: bool | None = None,
    uses_trainer: dict[str, str] | None = None,
    passes_at: float | str | None = None,
) -> Callable[[Callable], Callable]:
    """Decorator that registers a reward under ``name`` (default: the function's name). Duplicates are an error.

    A plain function receives its recipe ``args`` as keyword arguments on every call. A *factory* (a class, or
    ``factory=True``) is called once with the ``args`` and must return the reward callable: use it for rewards that
    precompute or hold state (caches, workers). ``uses_trainer`` maps an argument to the ``trainer`` field whose value
    (the recipe's, else TRL's default) it takes when the recipe leaves it out, e.g.
    ``{"max_completion_len": "max_completion_length"}``. ``passes_at`` marks a correctness reward for ``eval``'s
    pass@k: the score that counts as solved (a number, or the name of the argument holding it). The columns a
    reward reads are its required parameters.
    """

    def decorator(obj: Callable) -> Callable:
        reg_name = name or obj.__name__
        is_factory = inspect.isclass(obj) if factory is None else factory
        source = f"{getattr(obj, '__module__', '?')}:{getattr(obj, '__qualname__', reg_name)}"
        if reg_name in _REGISTRY:
            prev = _REGISTRY[reg_name][2]
            if prev == source:  # the same definition imported twice (e.g. a plugin module re-executed)
                _REGISTRY[reg_name] = (obj, is_factory, source)
                _METADATA[reg_name] = {"uses_trainer": dict(uses_trainer or {}), "passes_at": passes_at}
                return obj
            raise RewardError(
                f"reward {reg_name!r} is already registered by {prev}; choose another name for {source} "
                "(register_reward('my_name'))"
            )
        _REGISTRY[reg_name] = (obj, is_factory, source)
        _METADATA[reg_name] = {"uses_trainer": dict(uses_trainer or {}), "passes_at": passes_at}
        return obj

    return decorator


def unregister_reward(name: str) -> None:
    """Remove ``name`` from the registry (for tests and notebooks that redefine a reward)."""
    _REGISTRY.pop(name, None)
    _METADATA.pop(name, None)


def pass_threshold(name: str, args: dict[str, Any]) -> float | None:
    """The score at which reward ``name`` (with ``args``) counts a completion as solved; None if it does not say."""
    rule = reward_metadata(name).get("passes_at")
    if isinstance(rule, str):
        obj, is_factory = _lookup(name)
        default = inspect.signature(obj.__init__ if inspect.isclass(obj) else obj).parameters[rule].default
        return float(args.get(rule, default))
    return None if rule is None else float(rule)


def reward_metadata(name: str) -> dict[str, Any]:
    """What reward ``name`` declared when it was registered (``uses_trainer``); empty for ``module:function``."""
    _lookup(name)
    return dict(_METADATA.get(str(name), {}))


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
    out = []
    for name, (obj, is_factory, source) in sorted(_REGISTRY.items()):
        doc = inspect.getdoc(obj) or ""
        out.append(RewardInfo(name, doc.split("\n")[0], _params(obj, is_factory), is_factory, source))
    return out


def load_plugin(path: str | Path) -> None:
    """Execute a Python file that registers rewards with ``@register_reward`` (ms-swift's ``--external_plugins``)."""
    try:
        p = Path(path).expanduser().resolve()
    except (OSError, RuntimeError, ValueError) as exc:  # a symlink loop, a NUL byte
        raise RewardError(f"plugin file {str(path)!r} cannot be read ({exc}); fix the path under 'plugins:'") from None
    if str(p) in _LOADED_PLUGINS:
        return
    if p.is_file() and file_module(p) is not None:  # imported already as a module:attr reward: not twice
        _LOADED_PLUGINS.add(str(p))
        return
    if not p.is_file():
        what = "is not a Python file" if p.exists() else "does not exist"  # a folder, a device
        raise RewardError(f"plugin file {str(path)!r} {what}; fix the path under 'plugins:' (relative to the recipe)")
    mod_name = f"{PLUGIN_MODULE_PREFIX}{p.stem}_{abs(hash(str(p))) % 10**8}"
    spec = importlib.util.spec_from_file_location(mod_name, p)
    if spec is None or spec.loader is None:  # Python only imports source files it knows by their suffix
        raise RewardError(f"plugin file {str(path)!r} is not a Python file; name a .py file under 'plugins:'")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module  # lets the plugin's rewards pickle by reference
    before = dict(_REGISTRY)
    try:
        spec.loader.exec_module(module)
    except KeyboardInterrupt:
        sys.modules.pop(mod_name, None)
        raise  # Ctrl-C while a slow plugin imports still stops the program
    except BaseException as exc:  # noqa: BLE001 - the plugin fails, or calls exit(), while importing
        sys.modules.pop(mod_name, None)
        raise RewardError(f"plugin file {str(path)!r} failed to import: {import_failure(exc)}") from exc
    _LOADED_PLUGINS.add(str(p))
    remember_file(p, module)
    if _REGISTRY == before:  # registered nothing: remember its plain functions for `check` to name
        _UNREGISTERED[str(p)] = [
            n
            for n, v in vars(module).items()
            if inspect.isfunction(v) and v.__module__ == mod_name and not n.startswith("_")
        ]


def plugin_unregistered(path: str | Path) -> list[str]:
    """Public functions of a loaded plugin file that registered no reward at all (empty when it registered one)."""
    try:
        return list(_UNREGISTERED.get(str(Path(path).expanduser().resolve()), []))
    except (OSError, RuntimeError, ValueError):  # a path load_plugin refused
        return []


def add_import_path(folder: str | Path) -> None:
    """Make modules in ``folder`` (the recipe's) importable for ``module:function`` rewards; searched last."""
    folder = str(Path(folder).resolve())
    if folder not in sys.path:
        sys.path.append(folder)


def _lookup(name: str) -> tuple[Callable, bool]:
    if not isinstance(name, str) or not name.strip():
        raise RewardError(f"reward name must be a non-empty string, got {name!r}", key="name")
    if ":" in name:  # module.path:function
        obj = import_target(name, "reward", RewardError, key="name")
        for o, is_factory, _ in _REGISTRY.values():
            if o is obj:
                return o, is_factory
        if not callable(obj):
            raise RewardError(f"reward {name!r}: {name.partition(':')[2]!r} is not callable", key="name")
        return obj, inspect.isclass(obj)
    if name not in _REGISTRY:
        hint = suggest(name, list(_REGISTRY))
        module, _, attr = name.rpartition(".")
        if "/" in name:  # GRPOTrainer(reward_funcs="org/model") loads a reward model
            hint = f" (a reward model? write {{model: {name}}} instead of name:)"
        elif not hint and module and all(p.isidentifier() for p in [*module.split("."), attr]):  # trl's pkg.mod.func
            hint = f" (did you mean {f'{module}:{attr}'!r}? a module path names its function after ':')"
        raise RewardError(
            f"unknown reward {name!r}{hint}; `grpo-trl rewards` lists them, and your own "
            "can be given as 'module.path:function' or registered in a file listed under 'plugins:'",
            key="name",
        )
    obj, is_factory, _ = _REGISTRY[name]
    return obj, is_factory


def check_reward_args(name: str, args: dict[str, Any]) -> None:
    """Raise ``RewardError`` naming any argument the reward does not take, or a required one that is missing."""
    obj, is_factory = _lookup(name)
    target = obj.__init__ if inspect.isclass(obj) else obj
    try:
        sig = inspect.signature(target)
    except Exception as exc:  # noqa: BLE001 - TypeError/ValueError, or a __signature__ that raises
        raise RewardError(f"reward {name!r}: its signature cannot be read ({exc})", key="name") from exc
    accepts_any = is_factory and any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
    params = _params(obj, is_factory)
    for key in args:
        if key in TRL_KWARGS:
            raise RewardError(
                f"reward {name!r}: argument {key!r} is passed by TRL itself; remove it from args", key="args"
            )
        if key not in params and not accepts_any:
            known = ", ".join(params) or "none"
            raise RewardError(
                f"reward {name!r} has no argument {key!r}{suggest(key, list(params))}; it takes: {known}", key="args"
            )
    if is_factory:
        missing = [k for k, v in params.items() if v is inspect.Parameter.empty and k not in args]
        if missing:
            raise RewardError(f"reward {name!r} needs argument(s) {', '.join(missing)} under its 'args:'", key="args")
    from grpo_trl.rewards.signature import check_call

    check_call(name, obj, is_factory, args)  # TRL's keyword call binds; signatures only, nothing is called
    if is_factory and callable(getattr(obj, "check_args", None)):
        obj.check_args(args)  # a built-in's own dry-run check (judge probes its endpoint); raises RewardError


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
    options = {**_params(obj, is_factory), **args}  # what a recipe can set, for hints
    if is_factory:
        return NamedReward(label, _make(name, obj, args), options=options)
    return NamedReward(label, obj, args, options=options)


def _make(name: str, factory: Callable, args: dict[str, Any]) -> Callable:
    """What the factory of reward ``name`` returns for ``args``; its failure (an exception, ``exit()``) is one
    ``RewardError`` naming the reward, never the end of the program (Ctrl-C still stops it)."""
    try:
        made = factory(**args)
    except KeyboardInterrupt:
        raise
    except RewardError:
        raise
    except BaseException as exc:  # noqa: BLE001 - the user's factory raises, or calls exit()
        raise RewardError(f"reward {name!r}: creating it failed: {import_failure(exc)}", key="args") from exc
    if not callable(made):
        raise RewardError(f"reward {name!r}: its factory returned {type(made).__name__}, not a callable", key="name")
    return made


def text_of(completions: list) -> list[str]:
    """Texts of a batch of completions in either format (see ``completion_text``)."""
    return [completion_text(c) for c in completions]
