"""The built-in offline models (``model.name: builtin:<name>``): the one lookup check and train share, each model's
builder (imported only when called) and the config.json it writes (check's meta model, nothing built)."""

from __future__ import annotations

import importlib
from typing import Any

from grpo_trl.errors import Problem, RecipeError, suggest
from grpo_trl.models.tiny import build_tiny_model, qwen2_config


def _lazy(module: str, function: str) -> Any:
    """``grpo_trl.models.<module>.<function>``, imported when called: a tiny model's code loads only when built."""

    def build(output_dir: Any, **options: Any) -> str:
        return getattr(importlib.import_module(f"grpo_trl.models.{module}"), function)(output_dir, **options)

    build.__name__ = build.__qualname__ = function
    return build


BUILTIN_TINY = "builtin:tiny"
BUILDERS = {
    BUILTIN_TINY: build_tiny_model,
    "builtin:tiny-tools": _lazy("tiny_tools", "build_tiny_tool_model"),
    "builtin:tiny-reward": _lazy("tiny", "build_tiny_reward_model"),
    "builtin:tiny-countdown": _lazy("tiny_countdown", "build_tiny_countdown_model"),
    "builtin:tiny-gsm8k": _lazy("tiny_gsm8k", "build_tiny_gsm8k_model"),
    "builtin:tiny-vlm": _lazy("tiny_vlm", "build_tiny_vlm_model"),
}
# (vocab, hidden, layers, heads, kv heads) of the Qwen2 each text builder makes (tiny: from model.tiny)
_SIZES = {
    BUILTIN_TINY: (512, 64, 2, 4, 2),
    "builtin:tiny-tools": (1024, 128, 2, 2, 1),
    "builtin:tiny-reward": (512, 64, 2, 4, 2),
    "builtin:tiny-countdown": (512, 128, 2, 4, 1),
    "builtin:tiny-gsm8k": (740, 128, 2, 4, 1),
}
_TINY_KEYS = ("vocab_size", "hidden_size", "num_layers", "num_heads", "num_kv_heads")

VISION_BUILTINS = ("builtin:tiny-vlm",)  # vision-language models: their processing class is a processor


def builder(name: str) -> Any:
    """The function that builds ``builtin:<name>``; ``RecipeError`` naming the built-in models otherwise."""
    if name in BUILDERS:
        return BUILDERS[name]
    why = f"{name!r} is not a built-in model{suggest(name, list(BUILDERS))}"
    raise RecipeError([Problem("", "model.name", why, f"use one of {', '.join(BUILDERS)}, or a Hub id / a folder")])


def builtin_config(name: str, tiny: dict | None = None) -> dict:
    """The config.json ``builtin:<name>`` is built with (nothing is built): what check's meta model is made of."""
    builder(name)
    if name in VISION_BUILTINS:
        from grpo_trl.models.tiny_vlm import TOKENS, tiny_vlm_config

        return tiny_vlm_config(TOKENS, TOKENS - 1, 2, 0)
    sizes = _SIZES[name]
    if name == BUILTIN_TINY:
        sizes = tuple((tiny or {}).get(k, v) for k, v in zip(_TINY_KEYS, sizes, strict=True))
    config = {"model_type": "qwen2", **qwen2_config(*(int(v) for v in sizes)), "dtype": "float32"}
    if name == "builtin:tiny-reward":
        config.update(architectures=["Qwen2ForSequenceClassification"], num_labels=1)
    return config


def folder_name(name: str) -> str:
    """The folder a built-in model is built into, inside a run's output_dir (``run.names.OWN_NAMES`` lists them)."""
    return "tiny-model" if name == BUILTIN_TINY else name.split(":", 1)[1]
