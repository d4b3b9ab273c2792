"""YAML recipes: load -> coerce -> validate -> plan, each a pure step in its own module (see ARCHITECTURE.md).

A recipe has the sections ``model``, ``data``, ``rewards``, ``trainer`` (any ``trl.GRPOConfig`` field, typed from
the installed TRL), and optionally ``generation`` (transformers or vLLM), ``plugins`` (reward/builder files),
``logging`` and ``launch`` (how many training processes the recipe is meant for). ``schema.py`` has one class per
section.

Example:
    >>> from grpo_trl.recipe import load_recipe
    >>> recipe = load_recipe("recipes/demo/tiny-cpu.yaml", overrides=["trainer.learning_rate=1e-4"])
    >>> recipe.trainer["learning_rate"]
    0.0001
    >>> recipe.to_grpo_config().learning_rate
    0.0001
"""

from grpo_trl.check.plan import Plan
from grpo_trl.errors import Problem, RecipeError, suggest
from grpo_trl.recipe.core import Recipe, load_recipe
from grpo_trl.recipe.load import apply_override, deep_merge, read_recipe
from grpo_trl.recipe.schema import BUILTIN_TINY, DTYPES

__all__ = [
    "BUILTIN_TINY",
    "DTYPES",
    "Plan",
    "Problem",
    "Recipe",
    "RecipeError",
    "apply_override",
    "deep_merge",
    "load_recipe",
    "read_recipe",
    "suggest",
]
