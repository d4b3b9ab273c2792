"""What a reward may return (``scores``: what TRL accepts; NaN, inf, beyond float32, non-numbers become ``None``
with a reason), how a fault is described, and ``report_fault`` for a row a reward scores ``None`` after a failure.
"""

from __future__ import annotations

import contextlib
import contextvars
import inspect
import itertools
import reprlib
import sysconfig
import traceback
from collections.abc import Iterable, Iterator, Mapping, Set
from typing import Any

_PATHS = sysconfig.get_paths()
_STDLIB, _SITE = _PATHS["stdlib"], (_PATHS["purelib"], _PATHS["platlib"])
FLOAT32_MAX = 3.4028234663852886e38  # TRL stores rewards in a float32 tensor: larger finite values become inf


class LengthError(ValueError):
    """A reward returned something other than one value per completion (wrong length, a coroutine, a string...)."""


def _show(value: Any) -> str:
    try:
        return f"{reprlib.repr(value)} ({type(value).__name__})"
    except Exception:  # noqa: BLE001 - a hostile __repr__, an int too long to print
        return f"a {type(value).__name__}"


def _number(value: Any) -> tuple[float | None, str | None]:
    """``(float, None)`` for a score TRL can store, else ``(None, why)``."""
    if type(value) is not float:
        if getattr(value, "ndim", None) == 0 and hasattr(value, "item"):  # 0-d numpy array / torch tensor
            value = value.item()
        if isinstance(value, (str, bytes, complex)) or not hasattr(type(value), "__float__"):
            return None, f"returned {_show(value)}, not a number"  # "1.0" is text, not a score
        try:
            value = float(value)  # int, bool, numpy scalars, Fraction, Decimal
        except OverflowError:
            return None, "returned an integer beyond float32 (TRL stores rewards as float32)"
        except Exception:  # noqa: BLE001 - a __float__ that raises
            return None, f"returned {_show(value)}, not a number"
    if value != value:
        return None, "returned nan"
    if not -FLOAT32_MAX <= value <= FLOAT32_MAX:
        return None, f"returned {value!r}, beyond float32 (TRL stores rewards as float32)"
    return value, None


def _as_list(raw: Any, n: int) -> list:
    if type(raw) is list:
        return raw
    if inspect.isawaitable(raw):
        if inspect.iscoroutine(raw):
            raw.close()  # never awaited: no "coroutine was never awaited" warning at exit
        raise LengthError("returned a coroutine: declare the reward `async def` (TRL awaits those) instead")
    ndim = getattr(raw, "ndim", None)
    if ndim is not None and hasattr(raw, "tolist"):  # numpy array, torch tensor
        if ndim != 1:
            raise LengthError(f"returned a {ndim}-D {type(raw).__name__}, not one value per completion")
        return raw.tolist()
    # TRL iterates whatever it gets (``dict.values()``, a class with ``__iter__``); text, a mapping (its keys) and a
    # set (no order) iterate too, but never into one score per completion
    if isinstance(raw, (str, bytes, Mapping, Set)) or not isinstance(raw, Iterable):
        raise LengthError(f"returned {_show(raw)}, not a list of {n} numbers")
    return list(itertools.islice(raw, n + 1))  # a generator may be endless; one that raises is retried row by row


def scores(raw: Any, n: int) -> tuple[list[float | None], int, str | None]:
    """TRL-storable scores from a reward's result: ``(values, rows turned None, first cause)``; ``LengthError`` when
    ``raw`` is not one value per completion."""
    values = _as_list(raw, n)
    if len(values) != n:
        raise LengthError(f"returned {len(values)} values for {n} completions")
    checked = [(None, None) if v is None else _number(v) for v in values]  # None itself: "not applicable", no fault
    whys = [why for _, why in checked if why]
    return [f for f, _ in checked], len(whys), next(iter(whys), None)


def describe(exc: BaseException) -> str:
    """``Type: message at file:line``, the line being where it was raised (outside the standard library)."""
    described = getattr(exc, "described", None)  # a fault already described where it happened (a child process)
    if isinstance(described, str):
        return described
    frames = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ else []
    own = [f for f in frames if not (f.filename.startswith((_STDLIB, "<frozen")) and not f.filename.startswith(_SITE))]
    own = own or frames  # exit() raises inside the standard library's site module: name the caller
    at = f" at {own[-1].filename}:{own[-1].lineno}" if own else ""
    try:
        msg = f"exit({exc.code!r}) / sys.exit() called" if isinstance(exc, SystemExit) else str(exc)
    except Exception:  # noqa: BLE001 - a hostile __str__
        msg = "(unprintable message)"
    return f"{type(exc).__name__}: {msg[:300]}{at}"


_REPORTED: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("grpo_trl_reward_faults", default=None)


def report_fault(why: str) -> bool:
    """Call from inside a reward for each row it scores ``None`` because of a failure: ``SafeReward`` counts it as a
    fault. ``False`` when no wrapper listens (called bare, or from a thread the reward started): log ``why`` yourself.
    """
    reported = _REPORTED.get()
    if reported is None:
        return False
    try:
        text = " ".join(str(why).split())  # one line: it goes into a warning and the reward_none alert as it is
    except Exception:  # noqa: BLE001 - a hostile __str__ must not turn a reported row into a failed batch
        text = f"(an unprintable {type(why).__name__})"
    reported.append(text[:300])
    return True


@contextlib.contextmanager
def collecting_faults() -> Iterator[list[str]]:
    """The faults a reward reports with :func:`report_fault` while this block runs it (also from tasks it starts)."""
    reported: list[str] = []
    token = _REPORTED.set(reported)
    try:
        yield reported
    finally:
        _REPORTED.reset(token)
