"""The built-in offline models a recipe names as ``model.name: builtin:<name>``: the one lookup that check and train
share (a misspelt name is the same error in both), each model's builder and the config.json it writes.

Example:
    >>> " ".join(sorted(BUILDERS))
    'builtin:tiny builtin:tiny-countdown builtin:tiny-gsm8k builtin:tiny-reward builtin:tiny-tools builtin:tiny-vlm'
    >>> folder_name("builtin:tiny"), builtin_config("builtin:tiny-tools")["hidden_size"]
    ('tiny-model', 128)
"""

from __future__ import annotations

import inspect
from typing import Any

from grpo_trl.errors import Problem, RecipeError, suggest
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
# (vocab, hidden, layers, heads, kv heads) of the Qwen2 each text builder makes (tiny: from model.tiny)
_SIZES = {
    "builtin:tiny-tools": (1024, 128, 2, 2, 1),
    "builtin:tiny-reward": (512, 64, 2, 4, 2),
    "builtin:tiny-countdown": (512, 128, 2, 4, 1),
    "builtin:tiny-gsm8k": (740, 128, 2, 4, 1),
}

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
    if name == BUILTIN_TINY:
        args = {k: p.default for k, p in inspect.signature(build_tiny_model).parameters.items() if k != "output_dir"}
        args.update(tiny or {})
        sizes = tuple(args[k] for k in ("vocab_size", "hidden_size", "num_layers", "num_heads", "num_kv_heads"))
    else:
        sizes = _SIZES[name]
    vocab, hidden, layers, heads, kv = (int(v) for v in sizes)
    config = {
        "model_type": "qwen2",
        "vocab_size": vocab,
        "hidden_size": hidden,
        "intermediate_size": 2 * hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "max_position_embeddings": 1024,
        "tie_word_embeddings": True,
        "dtype": "float32",
    }
    if name == "builtin:tiny-reward":
        config.update(architectures=["Qwen2ForSequenceClassification"], num_labels=1)
    return config


def folder_name(name: str) -> str:
    """The folder a built-in model is built into, inside a run's output_dir (``run.names.OWN_NAMES`` lists them)."""
    return "tiny-model" if name == BUILTIN_TINY else name.split(":", 1)[1]
