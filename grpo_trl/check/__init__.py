"""What ``grpo-trl check`` runs over a ``Recipe``: the same resolvers and constructors train uses, minus the weights.
``load_recipe`` is the one loader that checks: read + coerce (``grpo_trl.recipe``), then ``validate.validate``."""

from __future__ import annotations

import typing
from pathlib import Path

from grpo_trl.check import validate as _validate
from grpo_trl.errors import RecipeError
from grpo_trl.recipe.core import Recipe, open_recipe


def load_recipe(path: str | Path, overrides: typing.Sequence[str] = (), *, validate: bool = True) -> Recipe:
    """Read a recipe (following ``extends``), apply ``--set`` overrides, and validate it (``RecipeError`` if bad)."""
    recipe = open_recipe(path, overrides)
    if validate and (problems := _validate.validate(recipe)):
        raise RecipeError(problems)
    return recipe
