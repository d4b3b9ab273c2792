"""``rollout_func:``: TRL's ``GRPOTrainer(rollout_func=...)`` named in a recipe, and the fields it gives rewards.

TRL calls ``rollout_func(prompts, trainer)`` instead of generating; it returns ``prompt_ids``, ``completion_ids`` and
``logprobs`` (optionally ``logprob_token_ids``), and any other key is forwarded to every reward as a keyword, one value
per completion. A recipe names it by ``module.path:function``; listing the extra keys under ``fields`` lets ``check``
tell a reward that reads one of them from a reward that reads a column the data lacks::

    rollout_func: my_pkg.rollouts:remote_agent
    rollout_func: {func: my_pkg.rollouts:remote_agent, fields: [env_reward]}

The Python API does the same: ``train(recipe, rollout_func=f, rollout_fields=["env_reward"])``. Fields not listed
(a bare name, or no ``rollout_fields``) are checked at the first batch: ``checked_rollout`` raises one error naming
those the rewards read and the function did not return.

Example:
    >>> rollout_fields({"func": "m:f", "fields": ["env_reward"]}), rollout_fields("m:f"), rollout_fields(None)
    (({'env_reward'}, True), (set(), False), (set(), True))
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from grpo_trl.errors import Problem, RecipeError
from grpo_trl.targets import import_target

REQUIRED_KEYS = ("prompt_ids", "completion_ids", "logprobs")  # what TRL requires in its output (the rest: rewards)


def rollout_name(value: Any) -> str | None:
    """The ``module.path:function`` of a ``rollout_func:`` section (a string or ``{func, fields}``), or None."""
    if isinstance(value, dict):
        return value.get("func")
    return value if isinstance(value, str) else None


def rollout_fields(value: Any) -> tuple[set[str], bool]:
    """``(fields rewards may read, whether that list is complete)``: a bare name declares none, so any field may
    come from it (a reward reading one the function does not return scores ``None``, with the cause in the logs)."""
    if value is None:
        return set(), True
    if isinstance(value, dict):
        return set(value.get("fields") or ()) - set(REQUIRED_KEYS), True
    return set(), False


def rollout_problems(value: Any) -> list[Problem]:
    """``(key, message)`` when the function cannot be imported or cannot take ``(prompts, trainer)``."""
    name = rollout_name(value)
    if value is None or name is None:
        return []
    key = "rollout_func.func" if isinstance(value, dict) else "rollout_func"
    try:
        func = load_rollout(value)
    except RecipeError as exc:
        return [Problem("", key, exc.problems[0].message)]
    try:
        inspect.signature(func).bind(None, None)
    except TypeError as exc:
        return [
            Problem("", key, f"{name!r} cannot be called as rollout_func(prompts, trainer), as TRL calls it: {exc}")
        ]
    except ValueError:  # no signature to read (a builtin): TRL's call will tell
        pass
    return []


def load_rollout(value: Any) -> Callable:
    """The function a ``rollout_func:`` section names (``RecipeError`` with the reason)."""
    name = rollout_name(value)
    func = import_target(str(name), "rollout_func", RecipeError)
    if not callable(func):
        raise RecipeError(f"rollout_func {name!r} is not callable")
    return func


def for_trainer(rollout: Any, fields: list[str] | None, read: set[str]) -> tuple[Callable, set[str]]:
    """The function TRL gets for ``rollout`` (a callable from the API, with its ``fields``, or a recipe section) and
    the keys it gives the rewards: the declared ones, else all ``read`` (the rewards' columns the data lacks), which
    the returned function checks at its first batch."""
    if callable(rollout):
        declared = None if fields is None else set(fields)
    else:
        rollout, (declared, complete) = load_rollout(rollout), rollout_fields(rollout)
        declared = declared if complete else None
    given = read if declared is None else declared
    return checked_rollout(rollout, read & given), given


def checked_rollout(func: Callable, fields: set[str], key: str = "rollout_func") -> Callable:
    """``func`` checked once, at its first batch: its output must hold every one of ``fields`` (what the rewards
    read beside the dataset's columns); else one ``RecipeError`` naming them and ``key``. Later batches pass as is."""
    if not fields:
        return func
    checked = False

    @functools.wraps(func)
    def rollout(prompts: Any, trainer: Any) -> Any:
        nonlocal checked
        out = func(prompts, trainer)
        if not checked:
            missing = sorted(set(fields) - set(out if isinstance(out, dict) else ()))
            if missing:
                got = ", ".join(sorted(out)) if isinstance(out, dict) else type(out).__name__
                raise RecipeError(
                    [
                        Problem(
                            "",
                            key,
                            f"{getattr(func, '__name__', 'rollout_func')} returned no {', '.join(missing)}, which "
                            f"the rewards read (it returned: {got})",
                            f"return {', '.join(missing)} from it (one value per completion), or read it in no reward",
                        )
                    ]
                )
            checked = True
        return out

    return rollout


def passed_to_python_api(prompts: Any, trainer: Any) -> Any:
    """Stands for a ``rollout_func=`` that cannot be imported by name (a lambda, a closure) in the recipe a run
    records; the function itself is what TRL calls."""
    raise RuntimeError("the rollout_func given to grpo_trl.train/build_trainer is called instead")


def recipe_entry(func: Callable, fields: list[str] | None) -> str | dict:
    """The ``rollout_func:`` entry a recipe would hold for ``func``: its ``module:qualname`` when importable by that
    name, and ``{func, fields}`` when the fields are declared.

    >>> recipe_entry(load_rollout, None).endswith(":load_rollout"), recipe_entry(lambda p, t: p, ["x"])["func"]
    (True, 'grpo_trl.rollout:passed_to_python_api')
    """
    name = f"{getattr(func, '__module__', '')}:{getattr(func, '__qualname__', '')}"
    try:
        if import_target(name, "rollout_func", RecipeError) is not func:
            raise RecipeError("not the same function")
    except RecipeError:
        name = "grpo_trl.rollout:passed_to_python_api"
    return name if fields is None else {"func": name, "fields": list(fields)}
