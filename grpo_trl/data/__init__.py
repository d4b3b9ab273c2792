"""Conversational dataset builders: GSM8K, Countdown (Hub or generated), MATH, the user's own files.

Example:
    >>> from grpo_trl.data import build_dataset
    >>> ds = build_dataset({"builder": "countdown", "source": "generate", "size": 4}).train
    >>> [turn["role"] for turn in ds[0]["prompt"]], sorted(c for c in ds.column_names if c != "prompt")
    (['system', 'user'], ['nums', 'reference_equation', 'target'])
"""

from grpo_trl.data.build import DataResult, build_dataset
from grpo_trl.data.checks import validate_data_config
from grpo_trl.data.prompts import SYSTEM_PROMPTS, resolve_system_prompt
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

# The built-in builders register themselves when imported; the package imports them (the registry never imports them).
from grpo_trl.data import code, countdown, environment_owned, files, gsm8k, hub, images, math, squares, verifiers_tasks  # noqa: E402, F401, I001
