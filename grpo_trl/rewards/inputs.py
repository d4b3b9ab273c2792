"""The inputs TRL hands every reward stay what they were: TRL passes the *same* lists to each reward and logs them
after, so a user's reward is called with its own copy (``private``: containers copied, strings and numbers shared)
and its in-place edits reach no other reward and no log. The built-ins, tested read-only, read the originals.

    >>> batch = {"completions": [[{"role": "assistant", "content": "hi"}]]}
    >>> private(batch)["completions"][0][0]["content"] = "edited"; batch
    {'completions': [[{'role': 'assistant', 'content': 'hi'}]]}
"""

from __future__ import annotations

import copy
import gc
from typing import Any

# What TRL passes that is not data: shared on purpose (state, callbacks, live environment instances).
NOT_DATA = frozenset({"trainer_state", "log_extra", "log_metric", "environments"})
_ATOMS = frozenset({str, int, float, bool, type(None), bytes, complex})


def _flat(x: Any) -> bool:
    """A list of strings/numbers (first and last item checked) or a dict whose values are all strings/numbers."""
    if type(x) is list:
        return not x or (type(x[0]) in _ATOMS and type(x[-1]) in _ATOMS)
    return type(x) is dict and _ATOMS.issuperset(map(type, x.values()))


def _message(m: Any) -> bool:
    """The common chat message, ``{"role": str, "content": str}``, recognised without iterating."""
    return type(m) is dict and len(m) == 2 and type(m.get("content")) is str and type(m.get("role")) is str


def fresh(value: Any) -> Any:
    """A copy of ``value`` whose lists, dicts and tuples are new and whose strings and numbers are shared.

    Other objects are deep-copied. A list whose first and last items are
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
                [m.copy() if _message(m) or _flat(m) else fresh(m) for m in row] if type(row) is list else fresh(row)
                for row in value
            ]
        return [x.copy() if _flat(x) else x if type(x) in _ATOMS else fresh(x) for x in value]
    if t is dict:
        out = value.copy()
        for k, x in out.items():
            if type(x) not in _ATOMS:
                out[k] = fresh(x)
        return out
    if t is tuple:
        return tuple(x if type(x) in _ATOMS else fresh(x) for x in value)
    return copy.deepcopy(value)


def private(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` with every data input copied: what a user's reward is called with."""
    collecting = gc.isenabled()
    gc.disable()  # only new acyclic containers: a collection pass over a training process's heap costs more
    try:
        return {k: v if k in NOT_DATA or type(v) in _ATOMS else fresh(v) for k, v in kwargs.items()}
    finally:
        if collecting:
            gc.enable()
