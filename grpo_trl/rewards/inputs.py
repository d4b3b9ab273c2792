"""What a reward is called with: TRL's keywords, its recipe ``args`` (``NamedReward``), and a private copy of the
batch (TRL passes the *same* lists to each reward and logs them after: in-place edits must reach no one else)."""

from __future__ import annotations

import copy
import functools
import gc
import inspect
from collections.abc import Callable
from typing import Any

# The keywords TRL passes itself, in order (``environments`` only when the trainer has environments)
TRL_CALL = ("prompts", "completions", "completion_ids", "trainer_state", "log_extra", "log_metric")
TRL_KWARGS = frozenset({*TRL_CALL, "environments"})
# Dataset columns TRL never passes to rewards (the generated ones come as prompts / completions / completion_ids)
NOT_PASSED = frozenset({"prompt", "completion", "completion_ids"})


def target(reward: Callable) -> Callable:
    """What a reward runs: through ``NamedReward`` and ``functools.partial``, a function or a callable instance."""
    while isinstance(reward, (NamedReward, functools.partial)):
        reward = reward.func
    return reward


def is_async_reward(func: Callable) -> bool:
    """Whether calling ``func`` returns a coroutine, decided as TRL's ``is_async_callable`` decides it."""
    func = target(func)
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(getattr(func, "__call__", None))  # noqa: B004


def _keywords(args: tuple, kwargs: dict) -> dict:
    """TRL's keyword call; one positional argument (``reward(completions, solution=...)``) is ``completions``."""
    if not args:
        return kwargs
    if len(args) > 1 or "completions" in kwargs:
        raise TypeError("call a reward as TRL does: completions=..., prompts=..., columns by keyword")
    return {"completions": args[0], **kwargs}


class NamedReward:
    """A reward with its recipe ``args`` bound (as keywords) and a stable ``__name__`` (TRL logs
    ``rewards/<name>/mean``); ``options``: what a recipe can set, with values (for hints)."""

    def __init__(
        self, name: str, func: Callable, args: dict[str, Any] | None = None, options: dict[str, Any] | None = None
    ):
        if type(self) is NamedReward and is_async_reward(func):
            self.__class__ = AsyncNamedReward  # awaitable: TRL awaits it with the other async rewards
        self.__name__ = name
        self.func = func
        self.args = dict(args or {})
        self.options = dict(self.args if options is None else options)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(**{**_keywords(args, kwargs), **self.args})

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.__name__!r}, args={self.args})"


class AsyncNamedReward(NamedReward):
    """``NamedReward`` of an ``async`` reward: awaitable, so TRL's ``is_async_callable`` sees it."""

    async def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return await self.func(**{**_keywords(args, kwargs), **self.args})


# What TRL passes that is not data: shared on purpose (state, callbacks, live environment instances).
NOT_DATA = TRL_KWARGS - {"prompts", "completions", "completion_ids"}
_ATOMS = frozenset({str, int, float, bool, type(None), bytes, complex})


def fresh(value: Any) -> Any:
    """A copy of ``value``: lists, dicts and tuples new, strings and numbers shared, other objects deep-copied.

    >>> row = [{"role": "user", "content": "x"}]
    >>> c = fresh(row); c == row, c[0] is row[0], c[0]["content"] is row[0]["content"]
    (True, False, True)
    """
    t = type(value)
    if t in _ATOMS:
        return value
    if t is list:  # first and last items atoms: only atoms, as in every list TRL and ``datasets`` build
        flat = not value or (type(value[0]) in _ATOMS and type(value[-1]) in _ATOMS)
        return value.copy() if flat else [x if type(x) in _ATOMS else fresh(x) for x in value]
    if t is dict:
        return {k: x if type(x) in _ATOMS else fresh(x) for k, x in value.items()}
    if t is tuple:
        return tuple(x if type(x) in _ATOMS else fresh(x) for x in value)
    return copy.deepcopy(value)


def private(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` with every data input copied: what a user's reward is called with."""
    collecting = gc.isenabled()
    gc.disable()  # only new acyclic containers: a collection pass over a trainer's heap costs more
    try:
        return {k: v if k in NOT_DATA or type(v) in _ATOMS else fresh(v) for k, v in kwargs.items()}
    finally:
        if collecting:
            gc.enable()
