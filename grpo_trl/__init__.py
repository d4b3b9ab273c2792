"""grpo-trl: GRPO training on verifiable tasks, as a thin layer over TRL's ``GRPOTrainer``.

Example:
    >>> import grpo_trl
    >>> recipe = grpo_trl.load_recipe("recipes/demo/tiny-cpu.yaml")
    >>> [r["name"] for r in recipe.rewards]
    ['xml_format', 'countdown', 'soft_overlong']
    >>> "countdown" in [r.name for r in grpo_trl.list_rewards()]
    True
"""

from grpo_trl.recipe import Recipe, RecipeError, load_recipe
from grpo_trl.rewards import get_reward, list_rewards, register_reward

__version__ = "0.1.0"


def train(recipe, overrides=(), **kwargs):
    """Train from a ``Recipe`` or a recipe path; see ``grpo_trl.train.train``. Imports TRL on first use."""
    from grpo_trl.train import train as _train

    return _train(recipe, overrides, **kwargs)


__all__ = [
    "Recipe",
    "RecipeError",
    "get_reward",
    "list_rewards",
    "load_recipe",
    "register_reward",
    "train",
    "__version__",
]
