"""Conversational dataset builders (GSM8K, Countdown, MATH, code, images, the user's own files and Hub datasets) and
``build_dataset``, which turns a recipe's ``data:`` section into the train (and held-out) sets."""

from grpo_trl.data.build import DataResult, build_dataset
from grpo_trl.data.options import SYSTEM_PROMPTS, resolve_system_prompt, validate_data_config
from grpo_trl.data.registry import DataError, get_builder, list_builders, register_builder
from grpo_trl.data.shape import expected_size

__all__ = [
    "SYSTEM_PROMPTS",
    "DataError",
    "DataResult",
    "build_dataset",
    "expected_size",
    "get_builder",
    "list_builders",
    "register_builder",
    "resolve_system_prompt",
    "validate_data_config",
]

# The built-in builders register themselves when imported (the registry never imports them).
from grpo_trl.data import code, countdown, gsm8k, hub, images  # noqa: E402, F401, I001
