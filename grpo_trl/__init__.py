"""grpo-trl: GRPO training on verifiable tasks, as a thin layer over TRL's ``GRPOTrainer``.

>>> import grpo_trl
>>> [r["name"] for r in grpo_trl.load_recipe("recipes/demo/tiny-cpu.yaml").rewards]
['xml_format', 'countdown', 'soft_overlong']
"""

import sys as _sys

if _sys.argv and _sys.argv[0].replace("\\", "/").rsplit("/", 1)[-1] in ("grpo-trl", "grpo-trl.exe"):
    # The console script: Ctrl-C while the libraries import is a quiet exit; grpo_trl.cli.main restores the handler.
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
from grpo_trl.train import build_trainer, train  # noqa: E402 - TRL loads on first use; the names win over the module

__version__ = "0.1.0"
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
