"""YAML recipes: load (``load.py``) -> coerce (``coerce.py``, ``schema.py``) into a ``Recipe`` (``core.py``), which
makes TRL's configs; the checks are ``grpo_trl.check``'s (``grpo_trl.load_recipe`` runs both)."""

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
