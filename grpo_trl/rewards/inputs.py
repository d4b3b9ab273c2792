"""The inputs TRL hands every reward stay what they were, whatever a reward does to them.

TRL's ``GRPOTrainer`` passes the *same* ``prompts``, ``completions``, ``completion_ids`` and dataset-column lists to
each reward of a batch, and logs them (the completion table, ``completions.jsonl``) after the rewards ran. A reward
that edits them in place (``completions.pop()``, ``messages[0]["content"] = ...``) would change what every later
reward and the logs see. Two ways to prevent that, chosen by cost:

- rewards that run one after the other (TRL's synchronous rewards) share the batch's objects; one snapshot per batch
  (containers copied, immutable strings and numbers shared) is compared with them after each reward at C speed, and
  whatever changed is put back *in place*, so every holder of the objects sees the originals again. grpo-trl's
  built-ins, which never edit their inputs (``tests/rewards/test_call_contract.py`` checks each), skip this;
- rewards that may still run while others do (``async`` ones, time-limited ones left running in a thread, row-by-row
  retries) get a private copy each.

Example:
    >>> batch = {"completions": [[{"role": "assistant", "content": "hi"}]], "solution": ["1"]}
    >>> snap = GUARD.snapshot(batch)
    >>> batch["completions"][0][0]["content"] = "edited"; batch["solution"].append("2")
    >>> GUARD.restore(batch, snap)
    ['completions', 'solution']
    >>> batch
    {'completions': [[{'role': 'assistant', 'content': 'hi'}]], 'solution': ['1']}
"""

from __future__ import annotations

import copy
import gc
from typing import Any

# What TRL passes that is not data: shared on purpose (state, callbacks, live environment instances).
NOT_DATA = frozenset({"trainer_state", "log_extra", "log_metric", "environments"})
_ATOMS = frozenset({str, int, float, bool, type(None), bytes, complex})


class _Opaque(Exception):
    """A value of a type that cannot be compared cheaply (numpy arrays, images...): give such inputs private copies."""


def _flat(x: Any) -> bool:
    """A list of strings/numbers (first and last item checked) or a dict whose values are all strings/numbers."""
    if type(x) is list:
        return not x or (type(x[0]) in _ATOMS and type(x[-1]) in _ATOMS)
    return type(x) is dict and _ATOMS.issuperset(map(type, x.values()))


def _message(m: Any) -> bool:
    """The common chat message, ``{"role": str, "content": str}``, recognised without iterating."""
    return type(m) is dict and len(m) == 2 and type(m.get("content")) is str and type(m.get("role")) is str


def fresh(value: Any, *, strict: bool = False) -> Any:
    """A copy of ``value`` whose lists, dicts and tuples are new and whose strings and numbers are shared.

    Other objects are deep-copied, or with ``strict`` raise ``_Opaque``. A list whose first and last items are
    strings or numbers is taken to hold only such items, as every list TRL and ``datasets`` (one Arrow type per
    column) build does: checking each item would cost more than most rewards. TRL's shapes (rows of strings, of
    token ids, of message dicts) are copied without recursion, at close to C speed.

    >>> row = [{"role": "user", "content": "x"}]
    >>> c = fresh(row); c == row, c[0] is row[0], c[0]["content"] is row[0]["content"]
    (True, False, True)
    """
    t = type(value)
    if t in _ATOMS:
        return value
    if t is list:
        if _flat(value):
            return value.copy()
        first = value[0]
        if type(first) is list and first and type(first[0]) is dict:  # rows of messages
            return [
                [m.copy() if _message(m) or _flat(m) else fresh(m, strict=strict) for m in row]
                if type(row) is list
                else fresh(row, strict=strict)
                for row in value
            ]
        return [x.copy() if _flat(x) else x if type(x) in _ATOMS else fresh(x, strict=strict) for x in value]
    if t is dict:
        out = value.copy()
        for k, x in out.items():
            if type(x) not in _ATOMS:
                out[k] = fresh(x, strict=strict)
        return out
    if t is tuple:
        return tuple(x if type(x) in _ATOMS else fresh(x, strict=strict) for x in value)
    if strict:
        raise _Opaque(t.__name__)
    return copy.deepcopy(value)


def _put_back(current: Any, snap: Any) -> bool:
    """Make ``current`` equal ``snap`` again by changing it in place; False when it cannot be (not a container).

    Lists and dicts keep their identity at every level where their shape survived, so holders of them see the fix.
    """
    t = type(current)
    if t is not type(snap):
        return False
    if t is list:
        if len(current) != len(snap):
            current[:] = fresh(snap)
            return True
        for i, s in enumerate(snap):
            c = current[i]
            if c is not s and (type(c) is not type(s) or c != s) and not _put_back(c, s):
                current[i] = fresh(s)
        return True
    if t is dict:
        if current.keys() != snap.keys():
            current.clear()
            current.update(fresh(snap))
            return True
        for k, s in snap.items():
            c = current[k]
            if c is not s and (type(c) is not type(s) or c != s) and not _put_back(c, s):
                current[k] = fresh(s)
        return True
    if t is tuple and len(current) == len(snap):  # immutable itself; its lists and dicts can be put back
        return all(c is s or c == s or _put_back(c, s) for c, s in zip(current, snap))
    return False


class InputGuard:
    """One snapshot per batch of reward inputs; after each reward, changed inputs are put back in place."""

    def __init__(self) -> None:
        self._batch: tuple | None = None  # (the input objects, their snapshot); holding them keeps their ids unique

    def snapshot(self, kwargs: dict[str, Any], *, reuse: bool = False) -> dict[str, Any]:
        """``{key: copy}`` for the data inputs in ``kwargs``; keys that cannot be compared are left out.

        ``reuse``: the same objects seen by the previous call are one TRL batch (nothing outside the rewards changes
        them between rewards), so their snapshot is reused instead of copied again.
        """
        objects = tuple((k, v) for k, v in kwargs.items() if k not in NOT_DATA and type(v) not in _ATOMS)
        if reuse and self._batch is not None:
            prev, snap = self._batch
            if len(prev) == len(objects) and all(a[0] == b[0] and a[1] is b[1] for a, b in zip(prev, objects)):
                return snap
        snap = {}
        collecting = gc.isenabled()
        gc.disable()  # only new acyclic containers: a collection pass over a training process's heap costs more
        try:
            for k, v in objects:
                try:
                    snap[k] = fresh(v, strict=True)
                except _Opaque:
                    continue
        finally:
            if collecting:
                gc.enable()
        self._batch = (objects, snap)
        return snap

    def restore(self, kwargs: dict[str, Any], snap: dict[str, Any]) -> list[str]:
        """Put back, in place, every input that differs from ``snap``; return the keys that had changed."""
        changed = []
        for k, copied in snap.items():
            current = kwargs.get(k)
            try:
                same = current == copied
            except Exception:  # noqa: BLE001 - an element whose == misbehaves: treat as changed
                same = False
            if not same:
                changed.append(k)
                _put_back(current, copied)
        return changed


def private(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` with every data input copied (for a reward that may run while others do)."""
    return {k: v if k in NOT_DATA or type(v) in _ATOMS else fresh(v) for k, v in kwargs.items()}


GUARD = InputGuard()
