"""``rollout_func:``: TRL's ``GRPOTrainer(rollout_func=...)`` named in a recipe (``module.path:function``, or
``{func, fields}`` listing the extra keys it returns for the rewards); undeclared ones are checked at the first batch.

    >>> rollout_fields({"func": "m:f", "fields": ["env_reward"]}), rollout_fields("m:f"), rollout_fields(None)
    (({'env_reward'}, True), (set(), False), (set(), True))
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from grpo_trl.errors import Problem, RecipeError
from grpo_trl.registry import import_target

REQUIRED_KEYS = ("prompt_ids", "completion_ids", "logprobs")  # what TRL requires in its output (the rest: rewards)
STAND_IN = "grpo_trl.rollout:passed_to_python_api"


def rollout_fields(value: Any) -> tuple[set[str], bool]:
    """``(fields rewards may read, whether that list is complete)``: a bare name declares none."""
    if isinstance(value, dict):
        return set(value.get("fields") or ()) - set(REQUIRED_KEYS), True
    return set(), value is None


def load_rollout(value: Any) -> Callable:
    """The function a ``rollout_func:`` section (a name or ``{func, fields}``) names; ``RecipeError`` says why not."""
    name = value.get("func") if isinstance(value, dict) else value
    func = import_target(str(name), "rollout_func", RecipeError)
    if not callable(func):
        raise RecipeError(f"rollout_func {name!r} is not callable")
    return func


def rollout_problems(value: Any) -> list[Problem]:
    """Why the function cannot be imported or cannot take ``(prompts, trainer)``."""
    name = value.get("func") if isinstance(value, dict) else value
    if value is None or name is None:
        return []
    key = "rollout_func.func" if isinstance(value, dict) else "rollout_func"
    try:
        inspect.signature(load_rollout(value)).bind(None, None)
    except RecipeError as exc:
        return [Problem("", key, exc.problems[0].message)]
    except TypeError as exc:
        return [
            Problem("", key, f"{name!r} cannot be called as rollout_func(prompts, trainer), as TRL calls it: {exc}")
        ]
    except ValueError:  # no signature to read (a builtin): TRL's call will tell
        pass
    return []


def for_trainer(rollout: Any, fields: list[str] | None, read: set[str]) -> tuple[Callable, set[str]]:
    """The function TRL gets for ``rollout`` (a callable or a recipe section) and the keys it gives the rewards: the
    declared ones, else all ``read``, which its first batch must hold (one error if not)."""
    if callable(rollout):
        func, declared = rollout, None if fields is None else set(fields)
    else:
        func, (declared, complete) = load_rollout(rollout), rollout_fields(rollout)
        declared = declared if complete else None
    given = read if declared is None else declared
    if not (needed := read & given):
        return func, given
    checked = False

    @functools.wraps(func)
    def checked_rollout(prompts: Any, trainer: Any) -> Any:
        nonlocal checked
        out = func(prompts, trainer)
        if not checked and (missing := sorted(needed - set(out if isinstance(out, dict) else ()))):
            got = ", ".join(sorted(out)) if isinstance(out, dict) else type(out).__name__
            name, lacking = getattr(func, "__name__", "rollout_func"), ", ".join(missing)
            why = f"{name} returned no {lacking}, which the rewards read (it returned: {got})"
            fix = f"return {lacking} from it (one value per completion), or read it in no reward"
            raise RecipeError(why, key="rollout_func", fix=fix)
        checked = True
        return out

    return checked_rollout, given


def passed_to_python_api(prompts: Any, trainer: Any) -> Any:
    """Stands, in the recipe a run records, for a ``rollout_func=`` that cannot be imported by name (a lambda)."""
    raise RuntimeError("the rollout_func given to grpo_trl.train/build_trainer is called instead")


def recipe_entry(func: Callable, fields: list[str] | None) -> str | dict:
    """The ``rollout_func:`` entry a recipe would hold for ``func`` (its ``module:qualname`` when importable so).

    >>> recipe_entry(load_rollout, None).endswith(":load_rollout"), recipe_entry(lambda p, t: p, ["x"])["func"]
    (True, 'grpo_trl.rollout:passed_to_python_api')
    """
    name = f"{getattr(func, '__module__', '')}:{getattr(func, '__qualname__', '')}"
    try:
        if import_target(name, "rollout_func", RecipeError) is not func:
            name = STAND_IN
    except RecipeError:
        name = STAND_IN
    return name if fields is None else {"func": name, "fields": list(fields)}
