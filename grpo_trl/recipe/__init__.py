"""YAML recipes: load -> coerce into a ``Recipe`` (data), each a pure step in its own module (see ARCHITECTURE.md);
the checks and the plan are ``grpo_trl.check``'s, and ``grpo_trl.load_recipe`` runs load, coerce and the checks.

A recipe has the sections ``model``, ``data``, ``rewards``, ``trainer`` (any ``trl.GRPOConfig`` field, typed from
the installed TRL), and optionally ``generation`` (transformers or vLLM), ``plugins`` (reward/builder files),
``logging`` and ``launch`` (how many training processes the recipe is meant for). ``schema.py`` has one class per
section.

Example:
    >>> from grpo_trl.recipe import open_recipe
    >>> recipe = open_recipe("recipes/demo/tiny-cpu.yaml", overrides=["trainer.learning_rate=1e-4"])
    >>> recipe.trainer["learning_rate"]
    0.0001
    >>> recipe.to_grpo_config().learning_rate
    0.0001
"""

from grpo_trl.errors import Problem, RecipeError, suggest
from grpo_trl.recipe.core import Recipe, open_recipe
from grpo_trl.recipe.load import apply_override, deep_merge, read_recipe
from grpo_trl.recipe.schema import BUILTIN_TINY, DTYPES

__all__ = [
    "BUILTIN_TINY",
    "DTYPES",
    "Problem",
    "Recipe",
    "RecipeError",
    "apply_override",
    "deep_merge",
    "open_recipe",
    "read_recipe",
    "suggest",
]
