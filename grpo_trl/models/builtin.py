"""The built-in offline models a recipe names as ``model.name: builtin:<name>``, and where each is built.

Example:
    >>> " ".join(sorted(BUILDERS))
    'builtin:tiny builtin:tiny-countdown builtin:tiny-gsm8k builtin:tiny-reward builtin:tiny-tools builtin:tiny-vlm'
    >>> folder_name("builtin:tiny"), folder_name("builtin:tiny-tools")
    ('tiny-model', 'tiny-tools')
"""

from __future__ import annotations

from grpo_trl.models.tiny import build_tiny_model, build_tiny_reward_model, build_tiny_tool_model
from grpo_trl.models.tiny_countdown import build_tiny_countdown_model
from grpo_trl.models.tiny_gsm8k import build_tiny_gsm8k_model
from grpo_trl.models.tiny_vlm import build_tiny_vlm_model

BUILTIN_TINY = "builtin:tiny"

BUILDERS = {
    BUILTIN_TINY: build_tiny_model,
    "builtin:tiny-tools": build_tiny_tool_model,
    "builtin:tiny-reward": build_tiny_reward_model,
    "builtin:tiny-countdown": build_tiny_countdown_model,
    "builtin:tiny-gsm8k": build_tiny_gsm8k_model,
    "builtin:tiny-vlm": build_tiny_vlm_model,
}


VISION_BUILTINS = ("builtin:tiny-vlm",)  # vision-language models: their processing class is a processor


def folder_name(name: str) -> str:
    """The folder a built-in model is built into, inside a run's output_dir (``run.names.OWN_NAMES`` lists them)."""
    return "tiny-model" if name == BUILTIN_TINY else name.split(":", 1)[1]
