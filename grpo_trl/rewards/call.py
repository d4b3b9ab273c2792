"""The one reward call wrapper: ``SafeReward`` calls a reward as TRL does (by keyword, ``async`` ones awaited), keeps
faults to their rows and stops a run whose reward is broken on every row of its first batch (``guarded``)."""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import time
from collections.abc import Callable
from typing import Any

from grpo_trl.errors import RewardError
from grpo_trl.rewards import isolated
from grpo_trl.rewards.inputs import NOT_PASSED, NamedReward, _keywords, is_async_reward, private, target  # noqa: F401
from grpo_trl.rewards.isolated import RewardTimeout
from grpo_trl.rewards.results import LengthError, collecting_faults, describe, scores
from grpo_trl.rewards.stray_threads import Place

logger = logging.getLogger(__name__)


def _batch_size(kwargs: dict) -> int:
    for key in ("completions", "completion_ids", "prompts"):
        if kwargs.get(key) is not None:
            return len(kwargs[key])
    raise TypeError("a reward call needs completions=... (or completion_ids=... / prompts=...)")


class SafeReward:
    """Runs a reward as TRL would call it bare, so that it can never end a run: a fault costs only its rows (the
    batch is retried row by row); ``timeout``: in a child killed at the deadline; cwd, streams and builtins are put
    back; inputs are private copies; ``stop_if_broken``: a fault on all of the first batch raises. docs/rewards.md."""

    def __init__(self, reward: Callable, timeout: float | None = None, stop_if_broken: bool = False):
        if type(self) is SafeReward and is_async_reward(reward):
            self.__class__ = AsyncSafeReward  # async itself: TRL awaits it with the other async rewards
        self.reward = reward
        self.timeout = timeout
        self.stop_if_broken = stop_if_broken
        self.__name__ = getattr(reward, "__name__", type(reward).__name__)
        self.faults = 0  # rows a fault turned into None over this object's lifetime
        self.rows = 0
        self.none_rows = 0
        self.first_cause: str | None = None  # the first fault
        self._none_cause: str | None = None  # the reward's own None, when no fault came first
        self._warned: set[str] = set()
        func = target(reward)
        module = getattr(func, "__module__", None) if inspect.isroutine(func) else type(func).__module__
        self.read_only = str(module).startswith("grpo_trl.rewards.")  # built-ins never edit their inputs (tested)

    @property
    def cause(self) -> str | None:
        """Why rows were scored ``None``: the first fault, else the reward returning ``None`` itself."""
        return self.first_cause or self._none_cause

    async def _invoke(self, kwargs: dict, first: bool) -> Any:
        """The batch (``first``: copied, but for a sync built-in or child) or one row (already its own copy)."""
        wait = isinstance(self, AsyncSafeReward)  # runs beside other rewards: its own copy, a child waited in a thread
        child = self.timeout is not None  # a child process: its memory is its own copy
        if first and (wait or not (self.read_only or child)):
            kwargs = private(kwargs)
        if child:
            call = functools.partial(isolated.call, self.reward, kwargs, self.timeout)
            return await asyncio.to_thread(call) if wait else call()
        result = self.reward(**kwargs)
        return await result if wait and inspect.isawaitable(result) else result

    async def _one(self, kwargs: dict, n: int, place: Place, first: bool) -> tuple[list, int, str | None]:
        """Scores of one call (the batch, or a row): ``(values, rows turned None, cause)``; raises what it raised."""
        with collecting_faults() as reported:
            try:
                raw = await self._invoke(kwargs, first)
            finally:  # before grpo-trl's own code runs again (a deleted builtins.len would break scores())
                place.restore(self._warn)
            out, bad, cause = scores(raw, n)
        extra = min(len(reported), sum(v is None for v in out) - bad)  # at most one per row the reward scored None
        return out, bad + max(0, extra), cause or (reported[0] if extra > 0 else None)

    async def _score(self, kwargs: dict) -> list[float | None]:
        """The whole logic, for both flavours: a sync reward's coroutine never suspends (``_drive``)."""
        n, start = _batch_size(kwargs), time.perf_counter()
        place, timed_out = Place(), False  # each call puts it back (``_one``)
        try:
            out, bad, cause = await self._one(kwargs, n, place, first=True)
        except (RewardTimeout, LengthError) as exc:  # row by row would repeat the hang / the bug n times
            out, bad, cause = [None] * n, n, str(exc)
            timed_out = isinstance(exc, RewardTimeout)
        except BaseException as exc:  # noqa: BLE001 - a reward must never end a run
            _reraise_own(exc)
            cause, out, bad = describe(exc), [None] * n, n
            for i in range(n if n > 1 else 0):  # only the failing rows become None
                row = {k: v[i : i + 1] if isinstance(v, list) and len(v) == n else v for k, v in kwargs.items()}
                try:
                    value, row_bad, _ = await self._one(private(row), 1, place, first=False)
                    out[i], bad = value[0], bad - 1 + row_bad
                except BaseException as row_exc:  # noqa: BLE001 - this row is the faulty one
                    _reraise_own(row_exc)
        place.note_threads(self.__name__)
        none = sum(v is None for v in out)
        if self.stop_if_broken and not self.rows and n and bad == n and not timed_out:
            raise broken(self.__name__, self.reward, cause, n)
        if bad:
            self.first_cause = self.first_cause or cause
            self._warn(f"{cause}; {bad} of {n} row(s) scored None (counted in reward_faults/{self.__name__})")
        elif none and self._none_cause is None:
            self._none_cause = "returned None itself (TRL skips such rows)"
        self.faults += bad
        self.rows += n
        self.none_rows += none
        if callable(log_metric := kwargs.get("log_metric")):
            log_metric(f"reward_faults/{self.__name__}", float(bad))
            log_metric(f"reward_none_frac/{self.__name__}", none / n if n else 0.0)
            log_metric(f"timing/reward_s/{self.__name__}", time.perf_counter() - start)
        return out

    def __call__(self, *args: Any, **kwargs: Any) -> list[float | None]:
        return _drive(self._score(_keywords(args, kwargs)))

    def _warn(self, message: str) -> None:
        if message not in self._warned and len(self._warned) < 20:  # each distinct problem once, not every step
            self._warned.add(message)
            logger.warning("reward %r %s", self.__name__, message)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.reward!r}, timeout={self.timeout})"

    def mostly_none(self) -> str | None:
        """The cause, when most rows so far were scored ``None`` (for the end-of-run summary)."""
        return self.cause if self.rows and self.none_rows * 2 > self.rows else None


class AsyncSafeReward(SafeReward):
    """``SafeReward`` of an ``async`` reward; ``async`` itself, so TRL awaits it with the other async rewards."""

    async def __call__(self, *args: Any, **kwargs: Any) -> list[float | None]:
        return await self._score(_keywords(args, kwargs))


def _drive(coroutine: Any) -> Any:
    """Run a coroutine that never suspends (a sync reward's ``_score``) without an event loop."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()  # pragma: no cover - only an async reward awaits, and it has its own __call__
    raise RuntimeError("a synchronous reward's call suspended")


def _reraise_own(exc: BaseException) -> None:
    """Re-raise Ctrl-C, and a ``CancelledError`` cancelling this call itself (not one the reward got from a task)."""
    if isinstance(exc, KeyboardInterrupt):
        raise exc
    if isinstance(exc, asyncio.CancelledError):
        try:
            task = asyncio.current_task()
        except RuntimeError:  # no event loop: a sync reward's own CancelledError
            return
        if task is not None and task.cancelling():
            raise exc


def broken(name: str, reward: Callable, cause: str | None, n: int) -> RewardError:
    """The error that stops a run whose reward failed on every row of its first batch (naming where it is defined)."""
    cause = cause or "failed"
    func = target(reward)
    func = func if inspect.isroutine(func) else getattr(type(func), "__call__", func)  # noqa: B004
    code = getattr(inspect.unwrap(func), "__code__", None)
    where = f" (defined at {code.co_filename}:{code.co_firstlineno})" if code and " at " not in cause else ""
    return RewardError(
        f"reward {name!r} failed on all {n} rows of the first batch, so training would learn nothing from it: "
        f"{cause}{where}",  # an exception's cause names its own file:line
        key="rewards",
        fix="fix the reward and run again; a reward failing on some rows only costs those rows",
    )


def guarded(reward: Any) -> Any:
    """A reward as the trainer runs it: ``SafeReward(stop_if_broken)``; a reward model is TRL's, returned as is."""
    if isinstance(reward, SafeReward):
        reward.stop_if_broken = True
        return reward
    import torch

    if isinstance(reward, (str, torch.nn.Module)) or not callable(reward):  # a model: TRL scores it
        return reward
    return SafeReward(reward, stop_if_broken=True)


def call_sync(reward: Callable, *args: Any, **kwargs: Any) -> Any:
    """Call a reward from synchronous code (eval, tests), running it to completion when it is ``async``."""
    result = reward(*args, **kwargs)
    return isolated.run_awaitable(result) if inspect.isawaitable(result) else result
