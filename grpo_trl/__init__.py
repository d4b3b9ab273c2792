"""grpo-trl: GRPO training on verifiable tasks, as a thin layer over TRL's ``GRPOTrainer``.

Example:
    >>> import grpo_trl
    >>> recipe = grpo_trl.load_recipe("recipes/demo/tiny-cpu.yaml")
    >>> [r["name"] for r in recipe.rewards]
    ['xml_format', 'countdown', 'soft_overlong']
    >>> "countdown" in [r.name for r in grpo_trl.list_rewards()]
    True
"""

import sys as _sys

if _sys.argv and _sys.argv[0].replace("\\", "/").rsplit("/", 1)[-1] in ("grpo-trl", "grpo-trl.exe"):
    # The console script: Ctrl-C while the libraries import (the first ~0.5 s) is a quiet exit, not a traceback;
    # grpo_trl.cli.main puts Python's own handler back once it runs.
    import signal as _signal

    def _interrupted(signum: int, frame: object) -> None:
        import os

        os.write(2, b"interrupted\n")
        os._exit(130)

    _signal.signal(_signal.SIGINT, _interrupted)

from grpo_trl import environments as _environments  # noqa: E402, F401 - registers the 'environment' reward
from grpo_trl.check import load_recipe  # noqa: E402
from grpo_trl.recipe import Recipe, RecipeError  # noqa: E402
from grpo_trl.rewards import get_reward, list_rewards, register_reward  # noqa: E402
from grpo_trl.train import train as _train  # light (TRL loads on first use); binds the name before the submodule

__version__ = "0.1.0"


def train(recipe, overrides=(), **kwargs):
    """Train from a ``Recipe`` or a recipe path; see ``grpo_trl.train.train``. Imports TRL on first use.

    Extra keywords are ``GRPOTrainer`` arguments (reward_funcs, callbacks, tools, environment_factory, rollout_func,
    a preloaded model, peft_config...), merged with what the recipe builds (see ``grpo_trl.train.build_trainer``).
    """
    return _train(recipe, overrides, **kwargs)


def build_trainer(recipe, overrides=(), **trainer_kwargs):
    """The real ``trl.GRPOTrainer`` for a recipe, extra ``GRPOTrainer`` keywords merged in; see ``grpo_trl.train``."""
    from grpo_trl.train import build_trainer as _build

    return _build(recipe, overrides, **trainer_kwargs)


__all__ = [
    "Recipe",
    "RecipeError",
    "build_trainer",
    "get_reward",
    "list_rewards",
    "load_recipe",
    "register_reward",
    "train",
    "__version__",
]
