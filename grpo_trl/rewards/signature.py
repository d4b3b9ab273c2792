"""What ``check`` knows of a reward from signatures alone, calling no user code: ``args`` bound to the factory,
the per-batch call bound to TRL's keywords, the dataset columns read from its parameters."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Collection, Iterable
from typing import Any

from grpo_trl.errors import RENAMES, Problem, RewardError, suggest
from grpo_trl.rewards.call import SafeReward
from grpo_trl.rewards.inputs import NOT_PASSED, TRL_CALL, TRL_KWARGS, NamedReward


class RewardPlan:
    """A reward's name, call signature (None when only calling its factory would tell) and bound args."""

    def __init__(self, name: str, signature: inspect.Signature | None, args: dict[str, Any]):
        self.__name__, self.signature, self.args = name, signature, args


_KEYWORD = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def trl_signature(obj: Any, is_factory: bool) -> inspect.Signature | None:
    """The signature of what TRL calls: ``obj``, or what factory ``obj`` makes (a class's ``__call__``); None when
    only calling it would tell (a factory function, a signature that cannot be read)."""
    if is_factory:
        return product_signature(obj) if inspect.isclass(obj) else None
    try:  # a function, or a callable instance (its bound __call__)
        return inspect.signature(obj)
    except Exception:  # noqa: BLE001 - TypeError/ValueError, or a __signature__ that raises
        return None


def _plan(reward: Any) -> tuple[inspect.Signature | None, dict[str, Any]]:
    """The signature TRL's keyword call meets and the bound ``args`` (through ``SafeReward``, ``NamedReward``)."""
    reward = reward.reward if isinstance(reward, SafeReward) else reward
    if isinstance(reward, RewardPlan):
        return reward.signature, reward.args
    if isinstance(reward, NamedReward):
        return trl_signature(reward.func, False), reward.args
    return trl_signature(reward, False), {}


def _columns(sig: inspect.Signature) -> list[str]:
    """Keyword parameters without a default: what the call needs passed (dataset columns, TRL's own)."""
    return [k for k, p in sig.parameters.items() if p.default is p.empty and p.kind in _KEYWORD]


def required_columns(reward: Any) -> list[str]:
    """Dataset columns a reward reads: parameters of its call without a default, besides TRL's own and bound args."""
    sig, bound = _plan(reward)
    return [k for k in _columns(sig) if k not in TRL_KWARGS and k not in bound] if sig else []


def unaccepted_columns(reward: Any, columns: Iterable[str]) -> list[str]:
    """Dataset columns TRL would pass (by keyword, every batch) that the reward's call cannot take."""
    sig, bound = _plan(reward)
    if sig is None or any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return []
    takes = {k for k, p in sig.parameters.items() if p.kind in _KEYWORD}
    return sorted(set(columns) - takes - TRL_KWARGS - set(bound) - NOT_PASSED)


def product_signature(cls: type) -> inspect.Signature | None:
    """The signature of ``cls``'s instances' ``__call__`` (without ``self``); None when it defines none."""
    call = inspect.getattr_static(cls, "__call__", None) if "__call__" in dir(cls) else None  # not the metaclass's
    if not callable(call):  # none, or ``__call__ = None``: instances cannot be called
        return None
    sig = inspect.signature(call)
    return sig.replace(parameters=list(sig.parameters.values())[1:])


def arguments(obj: Callable, is_factory: bool) -> dict[str, Any]:
    """Argument -> default; a plain reward's parameters without one are dataset columns, not arguments."""
    return {
        k: p.default
        for k, p in inspect.signature(obj).parameters.items()
        if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL) and k not in TRL_KWARGS
        and (is_factory or p.default is not p.empty)
    }  # fmt: skip


def check_call(name: str, obj: Callable, is_factory: bool, args: dict, reward_names: Collection[str]) -> None:
    """Raise ``RewardError`` when TRL could not call what ``name`` resolves to with ``args`` (nothing is called):
    unreadable parameters, unknown, missing or TRL's own arguments, args not binding, TRL's keywords not binding."""
    qualname = getattr(obj, "__qualname__", type(obj).__name__)
    try:
        signature = inspect.signature(obj)
    except Exception as exc:  # noqa: BLE001 - TypeError/ValueError, or a __signature__ that raises
        raise RewardError(
            f"reward {name!r}: the parameters of {qualname} cannot be read ({exc}), so nothing says it takes "
            "completions; wrap it in a Python function `def my_reward(completions, **kwargs)`",
            key="name",
        ) from exc
    accepts_any = is_factory and any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
    params = arguments(obj, is_factory)
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
        try:
            signature.bind(**args)
        except TypeError as exc:
            raise RewardError(f"reward {name!r}: args do not fit {qualname}{signature} ({exc})", key="args") from exc
        if not inspect.isclass(obj):
            return  # a factory function: only calling it would tell what it makes
        signature, args = product_signature(obj), {}
        if signature is None:
            raise RewardError(
                f"reward {name!r}: class {qualname} defines no __call__, so its instances cannot score", key="name"
            )
    try:  # TRL's keyword call, plus ``args`` and the columns the reward names
        signature.bind(**dict.fromkeys([*_columns(signature), *TRL_CALL]) | args)  # a set's order varied per run
    except TypeError as problem:
        builtin = RENAMES.get(name.rpartition(":")[2])  # TRL's get_cosine_scaled_reward -> cosine
        same = f"; grpo-trl's built-in {builtin!r} is this reward: name it, its arguments under args:"
        raise RewardError(
            f"reward {name!r} cannot be called the way TRL calls rewards ({problem}): TRL passes "
            f"{', '.join(TRL_CALL)} and every dataset column by keyword; "
            "give it a **kwargs parameter (a factory that returns the reward? register it with "
            f"@register_reward(factory=True)){same if builtin in reward_names else ''}",
            key="name",
        ) from None


def column_conflicts(rewards: list, columns: Iterable[str]) -> list[Problem]:
    """A ``Problem`` for each dataset column named like a keyword TRL passes (TRL fails or passes its own) or like a
    bound argument (which would hide the column)."""
    columns = set(columns)
    out = []
    for col in sorted(columns & TRL_KWARGS):
        out.append(
            Problem(
                "",
                "data",
                f"column {col!r} has the name of a keyword TRL passes to every reward itself "
                f"({', '.join(sorted(TRL_KWARGS))}): rename it in the data (e.g. {col}_data), or leave it out "
                "of data.columns",
            )
        )
    for i, reward in enumerate(rewards):
        for arg in sorted(columns & set(_plan(reward)[1])):
            out.append(
                Problem(
                    "",
                    f"rewards.{i}.args.{arg}",
                    f"reward {reward.__name__!r} binds args.{arg}, and the dataset has a column {arg!r} too: the "
                    "bound value would hide the column from the reward; rename the column (or leave it out of "
                    f"data.columns), or remove {arg} from args",
                )
            )
    return out
