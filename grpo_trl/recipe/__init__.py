"""YAML recipes: load (``load.py``) -> coerce (``schema.py``) into a ``Recipe`` (``core.py``), which makes TRL's
configs; the checks are ``grpo_trl.check``'s (``grpo_trl.load_recipe`` runs both)."""

from grpo_trl.errors import Problem, RecipeError
from grpo_trl.recipe.core import Recipe, open_recipe

__all__ = ["Problem", "Recipe", "RecipeError", "open_recipe"]
