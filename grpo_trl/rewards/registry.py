"""The reward registry: register, look up, list, plan. A reward is a function in TRL's signature
``(completions, **kwargs) -> list[float | None]``, ``kwargs`` the dataset's columns and TRL's own (docs/rewards.md).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from grpo_trl.errors import RewardError, suggest
from grpo_trl.registry import Registry, import_failure, load_plugin  # noqa: F401 - load_plugin re-exported
from grpo_trl.rewards.call import NamedReward, SafeReward  # noqa: F401 - how rewards are called
from grpo_trl.rewards.signature import RewardPlan, arguments, check_call, required_columns, trl_signature  # noqa: F401
from grpo_trl.rewards.text import completion_text


@dataclass(frozen=True)
class RewardInfo:
    """What ``list_rewards`` returns for one registered reward."""

    name: str
    description: str
    params: dict[str, Any]  # argument -> default (``inspect.Parameter.empty`` when required)
    factory: bool
    source: str


def _hint(name: str, names: list[str]) -> str:
    """The did-you-mean of an unknown reward, or what it looks like (a reward model, TRL's ``pkg.mod.func``)."""
    hint = suggest(name, names)
    module, _, attr = name.rpartition(".")
    if "/" in name:  # GRPOTrainer(reward_funcs="org/model") loads a reward model
        hint = f" (a reward model? write {{model: {name}}} instead of name:)"
    elif not hint and module and all(p.isidentifier() for p in [*module.split("."), attr]):  # trl's pkg.mod.func
        hint = f" (did you mean {f'{module}:{attr}'!r}? a module path names its function after ':')"
    return hint


REWARDS = Registry(
    "reward",
    RewardError,
    duplicate="reward {name!r} is already registered by {prev}; choose another name for {source} "
    "(register_reward('my_name'))",
    unknown="unknown reward {name!r}{hint}; `grpo-trl rewards` lists them, and your own "
    "can be given as 'module.path:function' or registered in a file listed under 'plugins:'",
    hint=_hint,
    key="name",
)


def register_reward(
    name: str | None = None,
    *,
    factory: bool | None = None,
    uses_trainer: dict[str, str] | None = None,
    passes_at: float | str | None = None,
) -> Callable[[Callable], Callable]:
    """Register a reward under ``name`` (default: its own); a *factory* (a class, or ``factory=True``) is called with
    the recipe's ``args``. ``uses_trainer``: argument -> ``trainer`` field it defaults to; ``passes_at``: the score
    that counts as solved for pass@k (a number, or the argument holding it). See docs/rewards.md."""

    def decorator(obj: Callable) -> Callable:
        is_factory = inspect.isclass(obj) if factory is None else factory
        return REWARDS.add(
            name or obj.__name__, obj, factory=is_factory, uses_trainer=dict(uses_trainer or {}), passes_at=passes_at
        )

    return decorator


def unregister_reward(name: str) -> None:
    """Remove ``name`` from the registry (for tests and notebooks that redefine a reward)."""
    REWARDS.remove(name)


def pass_threshold(name: str, args: dict[str, Any]) -> float | None:
    """The score at which reward ``name`` (with ``args``) counts a completion as solved; None if it does not say."""
    rule = reward_metadata(name).get("passes_at")
    if isinstance(rule, str):
        default = inspect.signature(_lookup(name)[0]).parameters[rule].default
        return float(args.get(rule, default))
    return None if rule is None else float(rule)


def reward_metadata(name: str) -> dict[str, Any]:
    """What reward ``name`` declared when registered (``uses_trainer``, ``passes_at``)."""
    _lookup(name)
    meta = REWARDS.get(name).meta if name in REWARDS else {}
    return {k: meta[k] for k in ("uses_trainer", "passes_at") if k in meta}


def list_rewards() -> list[RewardInfo]:
    """All registered rewards, sorted by name, with one-line descriptions and their arguments."""
    out = []
    for entry in REWARDS:
        doc = inspect.getdoc(entry.obj) or ""
        factory = entry.meta["factory"]
        out.append(RewardInfo(entry.name, doc.split("\n")[0], arguments(entry.obj, factory), factory, entry.source))
    return out


def _lookup(name: str) -> tuple[Callable, bool]:
    """What a registered name or ``module.path:function`` names, and whether it is a factory."""
    if not isinstance(name, str) or not name.strip():
        raise RewardError(f"reward name must be a non-empty string, got {name!r}", key="name")
    obj = REWARDS.resolve(name)
    entry = REWARDS.get(name) if ":" not in name else REWARDS.entry_of(obj)
    if entry is not None:
        return entry.obj, entry.meta["factory"]
    if not callable(obj):
        raise RewardError(f"reward {name!r}: {name.partition(':')[2]!r} is not callable", key="name")
    return obj, inspect.isclass(obj)


def check_reward_args(name: str, args: dict[str, Any]) -> None:
    """Raise ``RewardError`` when TRL could not call reward ``name`` with ``args`` bound (signatures only): an
    unregistered class, unreadable parameters, unknown, missing or TRL's own arguments, TRL's call not binding."""
    obj, is_factory = _lookup(name)
    qualname = getattr(obj, "__qualname__", type(obj).__name__)
    if inspect.isclass(obj) and REWARDS.entry_of(obj) is None:
        raise RewardError(
            f"reward {name!r} names the class {qualname}, which is not a registered reward (building it would run "
            "its constructor); name a function, or register the class with @register_reward in a plugin: it is then "
            "a factory, called with 'args' when training starts",
            key="name",
        )
    check_call(name, obj, is_factory, args, REWARDS.names())
    if is_factory and callable(getattr(obj, "check_args", None)):
        obj.check_args(args)  # a built-in's own dry-run check (judge probes its endpoint); raises RewardError


def plan_reward(name: str, alias: str | None = None, **args: Any) -> RewardPlan:
    """``name`` resolved (imports only) to what ``required_columns`` and ``column_conflicts`` need; nothing called.

    >>> from grpo_trl.rewards.signature import column_conflicts
    >>> plan = plan_reward("countdown")
    >>> plan.__name__, required_columns(plan)
    ('countdown', ['nums', 'target'])
    >>> column_conflicts([plan], ["nums", "target", "completions"])[0].key
    'data'
    """
    obj, is_factory = _lookup(name)
    return RewardPlan(reward_label(name, alias), trl_signature(obj, is_factory), dict(args))


def reward_label(name: str, alias: str | None = None) -> str:
    """The name TRL logs a reward under: ``alias``, else ``name`` (the part after ``:`` for ``module:function``)."""
    return alias or str(name).rpartition(":")[2]


def get_reward(name: str, alias: str | None = None, **args: Any) -> NamedReward:
    """The reward ``name`` (registered or ``module.path:function``) with ``args`` bound, named ``reward_label``; a
    factory is called with them (its failure, even ``exit()``, is a ``RewardError``)."""
    check_reward_args(name, args)
    obj, is_factory = _lookup(name)
    label = reward_label(name, alias)
    options = {**arguments(obj, is_factory), **args}  # what a recipe can set, for hints
    if not is_factory:
        return NamedReward(label, obj, args, options=options)
    try:
        made = obj(**args)
    except (KeyboardInterrupt, RewardError):
        raise
    except BaseException as exc:  # noqa: BLE001 - the user's factory raises, or calls exit()
        raise RewardError(f"reward {name!r}: creating it failed: {import_failure(exc)}", key="args") from exc
    if not callable(made):
        raise RewardError(f"reward {name!r}: its factory returned {type(made).__name__}, not a callable", key="name")
    return NamedReward(label, made, options=options)


def text_of(completions: list) -> list[str]:
    """Texts of a batch of completions in either format (see ``completion_text``)."""
    return [completion_text(c) for c in completions]
