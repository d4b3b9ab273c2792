"""Checks of what ``train`` wires into ``GRPOTrainer`` besides data and rewards (tools, environments, ``rollout_func``,
the chat template with TRL's own template checks): at check without a model, and at train on what it built."""

from __future__ import annotations

import logging
from typing import Any

from grpo_trl.environments import is_multi
from grpo_trl.environments.registry import environment_problems, owns_reward
from grpo_trl.errors import Problem, RecipeError, located
from grpo_trl.models.chat_templates import template_problems
from grpo_trl.models.load import apply_chat_template
from grpo_trl.models.tiny import builtin_tokenizer
from grpo_trl.recipe.core import Recipe
from grpo_trl.recipe.schema import REWARDS_HINT
from grpo_trl.rollout import rollout_problems
from grpo_trl.tools import tool_problems

logger = logging.getLogger("grpo_trl")


def fail(recipe: Recipe, problems: list[Problem]) -> None:
    """``RecipeError`` for ``problems``, located in the recipe's file."""
    if problems:
        raise RecipeError(located(problems, recipe.file))


def nothing_scores(recipe: Recipe) -> Problem:
    """No reward functions, and no environment scores the rollouts: what check and train both say."""
    why = "missing: no reward functions, and no environment in environment: defines get_reward(), so nothing would"
    fix = f"list rewards ({REWARDS_HINT}), or give the environment a get_reward() method"
    return Problem(recipe.file, "rewards", f"{why} score the rollouts", fix)


def recipe_problems(recipe: Recipe) -> list[Problem]:
    """Problems in the sections this module wires (tools, environment, chat template), no model load."""
    env = recipe.data.get("environment")
    env_problems = environment_problems(env)
    found = [
        *tool_problems(recipe.data.get("tools")),
        *rollout_problems(recipe.data.get("rollout_func")),
        *env_problems,
    ]
    why = "the 'environment' reward scores an environment's get_reward()"
    if any(s.get("name") == "environment" for s in recipe.rewards if isinstance(s, dict)):
        if env is None:
            found.append(Problem("", "rewards", f"{why}: add an environment: section"))
        elif not env_problems and owns_reward(env) is False:
            none = "no environment in environment: defines one (every row would score None)"
            found.append(Problem("", "rewards", f"{why}, and {none}: add get_reward() or score with reward functions"))
    if not found and (recipe.data.get("tools") or env is not None):  # a tokenizer here without a download
        from transformers import AutoTokenizer

        name = str(recipe.model.get("name"))
        tokenizer = builtin_tokenizer(name) if name.startswith("builtin:") else offline(AutoTokenizer, recipe)
        if tokenizer is not None:
            apply_chat_template(tokenizer, recipe.model, recipe.base_dir)
            found += _template_problems(tokenizer)
    return located(found, recipe.file)


def offline(loader: Any, recipe: Recipe) -> Any:
    """``loader.from_pretrained`` of the model where it is here without a download (local folder, HF cache)."""
    name = str(recipe.model.get("name"))
    local = recipe.base_dir / name
    try:
        return loader.from_pretrained(str(local) if local.is_dir() else name, local_files_only=True)
    except Exception:  # noqa: BLE001 - not here offline, or no such class for it: checked when training loads it
        logger.info("%s of %s: checked when training starts (not available offline)", loader.__name__, name)
        return None


def _template_problems(tokenizer: Any) -> list[Problem]:
    """Where the tokenizer's chat template would break tool calling (TRL's own checks)."""
    return [Problem("", "model.chat_template", m) for m in template_problems(tokenizer)]


def check_template(recipe: Recipe, tokenizer: Any) -> None:
    fail(recipe, _template_problems(tokenizer))


def check_environment_column(recipe: Recipe, columns: list[str], rows: Any = None) -> None:
    """With named environments, every row must name one of them in its ``environment`` column."""
    if not is_multi(section := recipe.data.get("environment")):
        return
    names = ", ".join(sorted(section))
    if "environment" not in columns:
        why = f"several environments ({names}) need an 'environment' column naming one per row; use a builder that "
        fix = f"sets it (data: {{builder: environment, environments: [{names}]}}: TRL's routing-only rows)"
        fail(recipe, [Problem("", "environment", f"{why}{fix} or a single environment: {{factory: ...}}")])
    if rows is not None and (found := {str(v) for v in rows["environment"]} - set(section)):
        why = f"rows name environment(s) {', '.join(map(repr, sorted(found)))} that environment: does not define"
        fail(recipe, [Problem("", "environment", f"{why} (it defines: {names}); add them or fix the data")])


def check_env_scores(recipe: Recipe, env: Any) -> None:
    """Without reward functions, an environment must score the rollouts (``get_reward``), read from its probe."""
    instances = [getattr(f, "probe", f)() for f in (env.values() if isinstance(env, dict) else [env])]
    if not any(callable(getattr(type(i), "get_reward", None)) for i in instances):
        raise RecipeError([nothing_scores(recipe)])
