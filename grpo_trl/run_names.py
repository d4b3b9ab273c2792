"""Names in an output directory: grpo-trl's state folder, what the trainer and grpo-trl write, and what kind each is.

``predictable`` names are the only ones a killed run's manifest may adopt (see grpo_trl/run_dir.py).
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
from pathlib import Path

STATE = ".grpo-trl"
CHECKPOINT = re.compile(r"checkpoint-(\d+)$")
# what transformers/TRL write into output_dir (save_model, save_state, model card, tensorboard, TRL's parquet logs)
TRAINER_NAMES = (
    "checkpoint-[0-9]*", "*.safetensors", "*.safetensors.index.json", "pytorch_model*.bin", "adapter_config.json",
    "config.json", "generation_config.json", "tokenizer*", "special_tokens_map.json", "added_tokens.json",
    "vocab.json", "merges.txt", "chat_template.jinja", "chat_template.json", "preprocessor_config.json",
    "processor_config.json", "training_args.bin", "trainer_state.json", "*_results.json", "README.md", "runs",
    "completions",
)  # fmt: skip
# what grpo-trl itself writes: logs, recipe copies, the built tiny model, `grpo-trl report`
OWN_NAMES = (
    "completions.jsonl",
    "alerts.jsonl",
    "recipe.yaml",
    "recipe.step-*.yaml",
    "tiny-model",
    "tiny-tools",
    "tiny-countdown",
    "tiny-reward",
    "report",
)


def kind_of(name: str) -> str:
    """What an entry is: checkpoint, log, recipe, cache, report or model (the trainer's final save).

    >>> [kind_of(n) for n in ("checkpoint-4", "alerts.jsonl", "recipe.step-4.yaml", "tiny-model", "config.json")]
    ['checkpoint', 'log', 'recipe', 'cache', 'model']
    """
    if CHECKPOINT.match(name):
        return "checkpoint"
    if name.endswith(".jsonl") or name in ("runs", "completions"):
        return "log"
    if name.startswith("recipe"):
        return "recipe"
    caches = ("tiny-model", "tiny-tools", "tiny-countdown", "tiny-reward")
    return "cache" if name in caches else "report" if name == "report" else "model"


def predictable(name: str) -> bool:
    """A name the trainer or grpo-trl writes (``checkpoint-<N>`` with digits only)."""
    if name.startswith("checkpoint-"):
        return bool(CHECKPOINT.match(name))
    return any(fnmatch.fnmatchcase(name, p) for p in TRAINER_NAMES + OWN_NAMES)


def write_json(path: Path, data: dict) -> None:
    """Replace ``path`` with ``data`` atomically (a reader sees the old file or the new one, never half of it)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, default=str))
    os.replace(tmp, path)
