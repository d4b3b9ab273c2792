"""``builder: verifiers``: a verifiers taskset's prompts as rows (``grpo_trl.environments.verifiers_env``).

Each row is one task's prompt and ``vf_task``, its index, which the taskset's rewards read.
"""

from __future__ import annotations

from grpo_trl.data.registry import register_builder
from grpo_trl.environments.verifiers_env import COLUMN, rows


@register_builder("verifiers", system_prompt="none", columns=(COLUMN,))
def verifiers(split: str = "train", *, taskset: str, args: dict | None = None, size: int | None = None):
    """A verifiers taskset (module or Environments Hub package id; ``args``: its TasksetConfig fields)."""
    from datasets import Dataset

    return Dataset.from_dict(rows(taskset, args, size))
