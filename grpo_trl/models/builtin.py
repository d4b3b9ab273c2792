"""The built-in offline models (``model.name: builtin:<name>``): the one lookup check and train share, each model's
builder (imported only when called) and the config.json it writes (check's meta model, nothing built)."""

from __future__ import annotations

import importlib
from typing import Any

from grpo_trl.errors import Problem, RecipeError, suggest
from grpo_trl.models.tiny import build_tiny_model, qwen2_config

BUILTIN_TINY = "builtin:tiny"
# name -> (module, builder, the Qwen2 it makes: vocab, hidden, layers, heads, kv heads; None: a vision model)
_BUILTINS = {
    BUILTIN_TINY: ("tiny", "build_tiny_model", (512, 64, 2, 4, 2)),
    "builtin:tiny-tools": ("tiny_tools", "build_tiny_tool_model", (1024, 128, 2, 2, 1)),
    "builtin:tiny-reward": ("tiny", "build_tiny_reward_model", (512, 64, 2, 4, 2)),
    "builtin:tiny-countdown": ("tiny_countdown", "build_tiny_countdown_model", (512, 128, 2, 4, 1)),
    "builtin:tiny-gsm8k": ("tiny_gsm8k", "build_tiny_gsm8k_model", (740, 128, 2, 4, 1)),
    "builtin:tiny-vlm": ("tiny_vlm", "build_tiny_vlm_model", None),
}
VISION_BUILTINS = tuple(n for n, (_, _, sizes) in _BUILTINS.items() if sizes is None)  # their processing: a processor


def _lazy(module: str, function: str) -> Any:
    """``grpo_trl.models.<module>.<function>``, imported when called: a tiny model's code loads only when built."""

    def build(output_dir: Any, **options: Any) -> str:
        return getattr(importlib.import_module(f"grpo_trl.models.{module}"), function)(output_dir, **options)

    build.__name__ = build.__qualname__ = function
    return build


BUILDERS = {n: build_tiny_model if n == BUILTIN_TINY else _lazy(m, f) for n, (m, f, _) in _BUILTINS.items()}


def builder(name: str) -> Any:
    """The function that builds ``builtin:<name>``; ``RecipeError`` naming the built-in models otherwise."""
    if name in BUILDERS:
        return BUILDERS[name]
    why = f"{name!r} is not a built-in model{suggest(name, list(BUILDERS))}"
    raise RecipeError([Problem("", "model.name", why, f"use one of {', '.join(BUILDERS)}, or a Hub id / a folder")])


def builtin_config(name: str, tiny: dict | None = None) -> dict:
    """The config.json ``builtin:<name>`` is built with (``tiny``: builtin:tiny's sizes): check's meta model."""
    builder(name)
    if name in VISION_BUILTINS:
        from grpo_trl.models.tiny_vlm import TOKENS, tiny_vlm_config

        return tiny_vlm_config(TOKENS, TOKENS - 1, 2, 0)
    sizes = _BUILTINS[name][2]
    if name == BUILTIN_TINY:
        keys = ("vocab_size", "hidden_size", "num_layers", "num_heads", "num_kv_heads")
        sizes = tuple((tiny or {}).get(k, v) for k, v in zip(keys, sizes, strict=True))
    config = {"model_type": "qwen2", **qwen2_config(*(int(v) for v in sizes)), "dtype": "float32"}
    if name == "builtin:tiny-reward":
        config.update(architectures=["Qwen2ForSequenceClassification"], num_labels=1)
    return config


def folder_name(name: str) -> str:
    """The folder a built-in model is built into, inside a run's output_dir (``run.names.OWN_NAMES`` lists them)."""
    return "tiny-model" if name == BUILTIN_TINY else name.split(":", 1)[1]
