"""How every reward is called: as TRL's ``GRPOTrainer._calculate_rewards`` calls it (by keyword, ``async`` ones
awaited), inside ``SafeReward``, which keeps faults to their rows and stops a run whose reward is broken on every row
of its first batch (``guarded``). ``NamedReward`` binds a recipe's ``args``; both stay ``async`` for ``async`` rewards.

    >>> SafeReward(NamedReward("two", lambda completions, **kw: [1.0, 0.0]))(completions=["b"] * 2)
    [1.0, 0.0]
"""

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
from grpo_trl.rewards.inputs import private
from grpo_trl.rewards.isolated import RewardTimeout
from grpo_trl.rewards.results import LengthError, collecting_faults, describe, scores, with_reported
from grpo_trl.rewards.stray_threads import Place, note_threads, snapshot

logger = logging.getLogger(__name__)

# The keywords TRL passes itself (``environments`` only when the trainer has environments).
TRL_KWARGS = frozenset(
    {"prompts", "completions", "completion_ids", "trainer_state", "log_extra", "log_metric", "environments"}
)
# Dataset columns TRL never passes to rewards (``_calculate_rewards`` drops them; the generated ones come as
# ``prompts`` / ``completions`` / ``completion_ids``).
NOT_PASSED = frozenset({"prompt", "completion", "completion_ids"})


def is_async_reward(func: Callable) -> bool:
    """Whether calling ``func`` returns a coroutine, decided as TRL's ``is_async_callable`` decides it."""
    while isinstance(func, functools.partial):
        func = func.func
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(getattr(func, "__call__", None))  # noqa: B004


def _keywords(args: tuple, kwargs: dict) -> dict:
    """TRL's keyword call; one positional argument (``reward(completions, solution=...)``) is ``completions``."""
    if not args:
        return kwargs
    if len(args) > 1 or "completions" in kwargs:
        raise TypeError("call a reward as TRL does: completions=..., prompts=..., columns by keyword")
    return {"completions": args[0], **kwargs}


def _batch_size(kwargs: dict) -> int:
    for key in ("completions", "completion_ids", "prompts"):
        if kwargs.get(key) is not None:
            return len(kwargs[key])
    raise TypeError("a reward call needs completions=... (or completion_ids=... / prompts=...)")


class NamedReward:
    """A reward with its recipe ``args`` bound and a stable ``__name__`` (TRL logs ``rewards/<name>/mean``).

    Called by keyword, as TRL calls it; the bound ``args`` arrive as keywords too. ``options`` are the arguments a
    recipe can set for it, with their values (for hints). Picklable when the function or factory product is.
    """

    def __new__(cls, name: str | None = None, func: Callable | None = None, *args: Any, **kwargs: Any):
        if cls is NamedReward and func is not None and is_async_reward(func):
            cls = AsyncNamedReward
        return super().__new__(cls)

    def __init__(
        self, name: str, func: Callable, args: dict[str, Any] | None = None, options: dict[str, Any] | None = None
    ):
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


# ------------------------------------------------------------------------------------------------ the wrapper
def _is_builtin(reward: Callable) -> bool:
    """A grpo-trl built-in reward (function or factory product), all of which leave their inputs alone."""
    func = reward.func if isinstance(reward, NamedReward) else reward
    module = getattr(func, "__module__", None) if inspect.isroutine(func) else type(func).__module__
    return str(module).startswith("grpo_trl.rewards.")


class SafeReward:
    """Runs a reward so that it can never end a run, calling it exactly as TRL would call it bare.

    - the result may be any sequence TRL accepts (list, tuple, generator, 1-D numpy array or torch tensor, numpy
      scalars); a wrong length or a non-sequence (a coroutine, a string, a number) makes every row ``None``;
      NaN, inf, values beyond float32 (TRL's storage) and non-numbers become ``None`` for their row;
    - an exception (any ``BaseException``: ``GeneratorExit``, a custom one, an ``asyncio.CancelledError`` that is not
      this call being cancelled), ``exit()`` or ``sys.exit()`` makes the reward be called again row by row, so only
      the rows that fail become ``None``; Ctrl-C (``KeyboardInterrupt``) still stops the run;
    - ``timeout`` (seconds): the reward runs in a forked child process (``grpo_trl.rewards.isolated``) killed at the
      deadline, so the bound holds even for a reward stuck in C code or blocking its own event loop;
    - ``os.chdir`` and a closed or replaced ``sys.stdout`` / ``sys.stderr`` are put back after each call (a relative
      ``output_dir`` must still be where the run saves; the summary must still print);
    - the inputs are isolated (``grpo_trl.rewards.inputs``): editing them in place changes nothing others see;
    - a row the reward scores ``None`` and reports as a fault (``grpo_trl.rewards.results.report_fault``, as the
      ``judge`` does for a failed request) is a fault like the others.

    Metrics via TRL's ``log_metric``: ``reward_faults/<name>`` (rows a fault turned ``None``, reported ones included),
    ``reward_none_frac/<name>`` (share of rows scored ``None``, faults or the reward's own ``None``),
    ``timing/reward_s/<name>``. ``cause`` keeps the first reason a row became ``None`` (exception with file:line,
    "returned 3 values for 8 completions", ...). Wrapping an ``async`` reward gives an ``AsyncSafeReward``, itself
    ``async``.

    ``stop_if_broken`` (set by the trainer, ``guarded``): a fault on *every* row of the first call (the first
    generation batch) raises ``RewardError`` naming the reward and the cause, so the run stops at once instead of
    training without it; a timeout never does (the bound is the recipe's), nor does a reward's own ``None``.
    """

    def __new__(cls, reward: Callable | None = None, *args: Any, **kwargs: Any):
        if cls is SafeReward and reward is not None and is_async_reward(reward):
            cls = AsyncSafeReward
        return super().__new__(cls)

    def __init__(self, reward: Callable, timeout: float | None = None, stop_if_broken: bool = False):
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
        self.read_only = _is_builtin(reward)  # a built-in never edits its inputs (tested): no copy needed

    @property
    def cause(self) -> str | None:
        """Why rows were scored ``None``: the first fault, else the reward returning ``None`` itself."""
        return self.first_cause or self._none_cause

    def _first_call(self, kwargs: dict) -> Any:
        if self.timeout is not None:  # a child process: its memory is its own copy
            return isolated.call(self.reward, kwargs, self.timeout)
        return self.reward(**(kwargs if self.read_only else private(kwargs)))  # edits in place reach no one else

    async def _invoke(self, kwargs: dict, first: bool) -> Any:
        """One call of the reward: the batch (``first``) or one row (its own copy)."""
        if first:
            return self._first_call(kwargs)
        return isolated.call(self.reward, kwargs, self.timeout) if self.timeout else self.reward(**kwargs)

    def _rows(self, kwargs: dict, n: int):
        for i in range(n):
            yield private({k: v[i : i + 1] if isinstance(v, list) and len(v) == n else v for k, v in kwargs.items()})

    async def _one(self, kwargs: dict, n: int, place: Place, first: bool) -> tuple[list, int, str | None]:
        """Scores of one call (the batch, or a row): ``(values, rows turned None, cause)``; raises what it raised."""
        with collecting_faults() as reported:
            try:
                raw = await self._invoke(kwargs, first)
            finally:  # before grpo-trl's own code runs again (a deleted builtins.len would break scores())
                place.restore(self._warn)
            out, bad, cause = scores(raw, n)
        return (out, *with_reported(out, bad, cause, reported))

    async def _score(self, kwargs: dict) -> list[float | None]:
        """The wrapper's whole logic, for both flavours: a sync reward's coroutine never suspends (``_drive``)."""
        n, start, before = _batch_size(kwargs), time.perf_counter(), snapshot()
        place, timed_out = Place(), False
        try:
            out, bad, cause = await self._one(kwargs, n, place, first=True)
        except (RewardTimeout, LengthError) as exc:  # row by row would repeat the hang / the bug n times
            out, bad, cause = [None] * n, n, str(exc)
            timed_out = isinstance(exc, RewardTimeout)
        except BaseException as exc:  # noqa: BLE001 - a reward must never end a run
            _reraise_own(exc)
            cause, out, bad = describe(exc), [], 0
            place.restore(self._warn)
            for row in self._rows(kwargs, n) if n > 1 else ():  # only the failing rows become None
                try:
                    value, row_bad, _ = await self._one(row, 1, place, first=False)
                except BaseException as row_exc:  # noqa: BLE001 - this row is the faulty one
                    _reraise_own(row_exc)
                    value, row_bad = [None], 1
                out.append(value[0])
                bad += row_bad
            if n <= 1:
                out, bad = [None] * n, n
        finally:
            place.restore(self._warn)
        note_threads(before, self.__name__)
        return self._account(out, bad, cause, n, kwargs.get("log_metric"), start, timed_out)

    def __call__(self, *args: Any, **kwargs: Any) -> list[float | None]:
        return _drive(self._score(_keywords(args, kwargs)))

    def _warn(self, message: str) -> None:
        if message not in self._warned and len(self._warned) < 20:  # each distinct problem once, not every step
            self._warned.add(message)
            logger.warning("reward %r %s", self.__name__, message)

    def _account(
        self, out: list, bad: int, cause: str | None, n: int, log_metric: Any, start: float, timed_out: bool
    ) -> list:
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
        if callable(log_metric):
            log_metric(f"reward_faults/{self.__name__}", float(bad))
            log_metric(f"reward_none_frac/{self.__name__}", none / n if n else 0.0)
            log_metric(f"timing/reward_s/{self.__name__}", time.perf_counter() - start)
        return out

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.reward!r}, timeout={self.timeout})"

    def mostly_none(self) -> str | None:
        """The cause, when most rows so far were scored ``None`` (for the end-of-run summary)."""
        return self.cause if self.rows and self.none_rows * 2 > self.rows else None


class AsyncSafeReward(SafeReward):
    """``SafeReward`` of an ``async`` reward; ``async`` itself, so TRL awaits it with the other async rewards."""

    async def _invoke(self, kwargs: dict, first: bool) -> Any:
        kwargs = private(kwargs) if first else kwargs  # runs beside others: its own copy
        if self.timeout is not None and isolated.CAN_FORK:  # a child process; this loop waits without blocking
            child = isolated.start(self.reward, kwargs, self.timeout)
            result = await asyncio.get_running_loop().run_in_executor(None, isolated.finish, child)
            return isolated.replay(result, kwargs)
        if self.timeout is not None:
            return await asyncio.to_thread(isolated.call, self.reward, kwargs, self.timeout)
        result = self.reward(**kwargs)
        if not inspect.isawaitable(result):
            return result
        return await result

    async def __call__(self, *args: Any, **kwargs: Any) -> list[float | None]:
        return await self._score(_keywords(args, kwargs))


def _drive(coroutine: Any) -> Any:
    """Run a coroutine that never suspends (a sync reward's ``_score``) to its result, without an event loop."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()  # pragma: no cover - only an async reward awaits, and it has its own __call__
    raise RuntimeError("a synchronous reward's call suspended")


def _reraise_own(exc: BaseException) -> None:
    """Re-raise Ctrl-C, and a ``CancelledError`` that cancels this call itself (the trainer stopping); a reward's
    own ``CancelledError`` (it awaited a task that was cancelled) is its fault like any other."""
    if isinstance(exc, KeyboardInterrupt):
        raise exc
    if isinstance(exc, asyncio.CancelledError):
        try:
            task = asyncio.current_task()
        except RuntimeError:  # no event loop: a sync reward's own CancelledError
            return
        if task is not None and task.cancelling():
            raise exc


def _defined_at(reward: Callable) -> str:
    """`` (defined at file:line)`` of the function a reward runs, or ``""``."""
    func = reward.func if isinstance(reward, NamedReward) else reward
    while isinstance(func, functools.partial):
        func = func.func
    func = func if inspect.isroutine(func) else getattr(type(func), "__call__", func)  # noqa: B004
    code = getattr(inspect.unwrap(func), "__code__", None)
    return f" (defined at {code.co_filename}:{code.co_firstlineno})" if code else ""


def broken(name: str, reward: Callable, cause: str | None, n: int) -> RewardError:
    """The error that stops a run whose reward failed on every row of its first batch."""
    cause = cause or "failed"
    where = "" if " at " in cause else _defined_at(reward)  # an exception names its own file:line
    return RewardError(
        f"reward {name!r} failed on all {n} rows of the first batch, so training would learn nothing from it: "
        f"{cause}{where}",
        key="rewards",
        fix="fix the reward and run again; a reward failing on some rows only costs those rows",
    )


def guarded(reward: Any) -> Any:
    """A reward as the trainer runs it: in ``SafeReward``, stopping the run when broken on the whole first batch.
    The recipe's rewards and those given to ``train``/``build_trainer`` (``reward_funcs=``) alike; a reward model
    (a path, a ``PreTrainedModel``) is TRL's to run and is returned as it is."""
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
    if inspect.isawaitable(result):
        return asyncio.run(_await(result))
    return result


async def _await(awaitable: Any) -> Any:
    return await awaitable
