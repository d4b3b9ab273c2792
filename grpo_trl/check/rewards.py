"""``rewards:``, checked and built by the same registry: each reward exists and takes its args, names are unique (TRL
logs by name), every column a reward reads is one the data gives; ``build_rewards`` binds the args check saw."""

from __future__ import annotations

import typing
from dataclasses import replace

from grpo_trl.data.rows import reward_columns
from grpo_trl.data.shape import check_rows, dataset_columns
from grpo_trl.environments.registry import owns_reward
from grpo_trl.errors import GrpoTrlError, Problem, RecipeError, RewardError, located, names
from grpo_trl.fields import signature_model, validate_value
from grpo_trl.recipe.core import Recipe
from grpo_trl.recipe.schema import REWARDS_HINT
from grpo_trl.recipe.trl_schema import trainer_model
from grpo_trl.registry import load_plugins
from grpo_trl.rewards.call import NOT_PASSED
from grpo_trl.rewards.registry import (
    SafeReward,
    _lookup,
    check_reward_args,
    get_reward,
    plan_reward,
    required_columns,
    reward_label,
    reward_metadata,
)
from grpo_trl.rewards.signature import column_conflicts, unaccepted_columns


def reward_problems(recipe: Recipe) -> list[Problem]:
    from grpo_trl.models.reward_models import is_model_entry, model_entry_problems, model_label

    file, out = recipe.file, []
    if not recipe.rewards:
        return no_reward_problems(recipe)
    names: dict[str, int] = {}
    for i, spec in enumerate(recipe.rewards):
        key = f"rewards.{i}"
        if is_model_entry(spec):  # a reward model: its config is read, never its weights
            out += located(model_entry_problems(spec, key, recipe.base_dir), file)
            names[model_label(spec)] = i
            continue
        if not spec.get("name"):
            why = "missing" if "name" not in spec else f"expected str, got {spec['name']!r}"
            why += ": a reward name, or model: <id or path> for a reward model"
            out.append(Problem(file, f"{key}.name", why))
            continue
        try:
            check_reward_args(spec["name"], reward_args(recipe, spec))
            out += typed_args_problems(spec["name"], spec.get("args") or {}, file, f"{key}.args")
        except GrpoTrlError as exc:
            out += [Problem(file, f"{key}.{p.key or 'name'}", p.message, p.fix) for p in exc.problems]
            continue
        label = reward_label(spec["name"], spec.get("alias"))
        if label in names:
            why = f"reward name {label!r} is already used by rewards.{names[label]}; TRL logs rewards by name"
            out.append(Problem(file, f"{key}.alias", why, "give one of them an alias"))
        names[label] = i
    return out


def typed_args_problems(name: str, args: dict, file: str, key: str) -> list[Problem]:
    """The reward's ``args`` validated against its own signature's annotations (and the ranges every field has)."""
    import inspect

    obj = _lookup(name)[0]
    target = obj.__init__ if inspect.isclass(obj) else obj  # a class's annotations are its constructor's
    try:
        kind = signature_model("RewardArgs", target, skip=set(inspect.signature(target).parameters) - set(args))
    except (TypeError, ValueError, NameError):  # annotations that cannot be read: the call itself decides
        return []
    return validate_value(kind, args, file, key)[1]


def no_reward_problems(recipe: Recipe) -> list[Problem]:
    """Without reward functions, an environment must score the rollouts (``get_reward()``, which TRL adds)."""
    from grpo_trl.check.extras import nothing_scores

    if (env := recipe.data.get("environment")) is None:
        return [Problem(recipe.file, "rewards", f"missing: {REWARDS_HINT}")]
    try:
        return [nothing_scores(recipe)] if owns_reward(env) is False else []
    except (GrpoTrlError, TypeError, AttributeError):  # a broken environment: reported under environment
        return []


def reward_args(recipe: Recipe, spec: dict) -> dict:
    """The reward's args, with the trainer values it declares (``uses_trainer``) filled in when not given."""
    args = dict(spec.get("args") or {})
    try:
        meta = reward_metadata(spec["name"])
    except GrpoTrlError:
        return args
    for arg, trainer_field in meta.get("uses_trainer", {}).items():
        default = trainer_model().model_fields[trainer_field].default  # the installed TRL's
        args.setdefault(arg, recipe.trainer.get(trainer_field, default))
    return args


def planned_rewards(recipe: Recipe) -> list:
    """The recipe's named rewards as ``check`` knows them (``plan_reward``: no factory called)."""
    named = [s for s in recipe.rewards if "name" in s]
    return [plan_reward(s["name"], alias=s.get("alias"), **reward_args(recipe, s)) for s in named]


def columns_check(recipe: Recipe) -> list[Problem]:
    """Local data files exist and have their columns; every reward's columns are in the dataset; with several
    environments, an ``environment`` column names one per row (as ``train`` requires)."""
    from grpo_trl.check.extras import check_environment_column

    try:
        columns = dataset_columns(recipe.dataset, recipe.base_dir)
        rewards = planned_rewards(recipe)
        check_rows(recipe.dataset, recipe.base_dir, reward_columns(rewards))  # rows train would drop (or refuse)
    except GrpoTrlError as exc:
        return exc.located(recipe.file, "data")
    if columns is None:  # a plugin's builder declares its columns with its own code: not called by check
        return []
    found = column_problems(recipe, rewards, columns)
    try:
        check_environment_column(recipe, list(columns))
    except RecipeError as exc:
        found += exc.problems
    except TypeError:  # a malformed environment: section, reported by its own checks
        pass
    return found


def column_problems(recipe: Recipe, rewards: list, columns: typing.Iterable[str]) -> list[Problem]:
    """One problem per reward that reads a column (``solution``, ``nums``...) that ``columns`` lack."""
    from grpo_trl.rollout import rollout_fields

    fields, complete = rollout_fields(recipe.data.get("rollout_func"))  # TRL forwards them to rewards, as columns
    columns = (set(columns) | fields) - {"prompt"}
    source = recipe.dataset.get("builder") or "mixture"
    problems = located(column_conflicts(rewards, columns), recipe.file)
    columns -= NOT_PASSED  # TRL gives rewards the generated prompts / completions instead
    fix = "use a builder with those columns"
    if recipe.data.get("rollout_func") is not None:
        fix += ", or list them under rollout_func: {func: ..., fields: [...]} if it returns them"
    for i, reward in enumerate(rewards):
        found: list[tuple[str, str]] = []  # (why, fix)
        if extra := unaccepted_columns(reward, columns):
            why = "has no **kwargs parameter, and TRL passes it every dataset column by keyword: column(s) "
            why += f"{names(extra)} would make every call fail (unexpected keyword argument)"
            found.append((why, "add **kwargs to its parameters, or leave those columns out of the data"))
        missing = [c for c in required_columns(reward) if c not in columns]
        if never := [c for c in missing if c in NOT_PASSED]:
            why = f"reads {names(never)}, which TRL never passes to rewards (it drops those dataset columns)"
            found.append((why, "read prompts=, completions= and completion_ids= (the generated ones) instead"))
        if missing := [c for c in missing if c not in NOT_PASSED] if complete else []:  # else rollout_func gives them
            given = names(sorted(columns)) or "nothing"
            why = f"reads column(s) {names(missing)} that data ({source}) does not provide (it gives: {given})"
            found.append((why, fix))
        problems += [Problem(recipe.file, f"rewards.{i}", f"reward {reward.__name__!r} {w}", f) for w, f in found]
    return problems


def build_rewards(recipe: Recipe, output_dir: str | None = None) -> tuple[list, list[float]]:
    """The rewards (bound to their args, in ``SafeReward``; a reward model as the id TRL loads), and weights."""
    from grpo_trl.models.reward_models import is_model_entry, resolve_model

    load_plugins(recipe.base_dir, recipe.plugins)
    funcs = []
    for i, spec in enumerate(recipe.rewards):
        if is_model_entry(spec):
            funcs.append(resolve_model(spec, recipe.base_dir, output_dir or recipe.grpo_kwargs()["output_dir"]))
            continue
        try:
            reward = get_reward(spec["name"], alias=spec.get("alias"), **reward_args(recipe, spec))
        except RewardError as exc:  # its factory failed: name the entry
            raise RewardError(
                [replace(p, file=p.file or recipe.file, key=f"rewards.{i}.{p.key or 'name'}") for p in exc.problems]
            ) from exc
        funcs.append(SafeReward(reward, timeout=spec.get("timeout")))
    return funcs, [float(spec.get("weight", 1.0)) for spec in recipe.rewards]
