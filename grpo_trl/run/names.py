"""Names in an output directory: grpo-trl's state folder, what the trainer and grpo-trl write, and what kind each
is; only ``predictable`` names may be adopted by a live run's manifest."""

from __future__ import annotations

import fnmatch

from grpo_trl.trl_adapter import checkpoint_step

STATE = ".grpo-trl"
# what transformers/TRL write into output_dir (save_model, save_state, model card, tensorboard, TRL's parquet logs):
# exact file names where the trainer's are fixed, so a user's tokenizer_notes.txt or my_eval_results.json is never one
TRAINER_NAMES = (
    "*.safetensors", "*.safetensors.index.json", "pytorch_model*.bin", "adapter_config.json", "config.json",
    "generation_config.json", "tokenizer.json", "tokenizer_config.json", "tokenizer.model", "special_tokens_map.json",
    "added_tokens.json", "vocab.json", "vocab.txt", "merges.txt", "chat_template.jinja", "chat_template.json",
    "preprocessor_config.json", "processor_config.json", "training_args.bin", "trainer_state.json",
    "train_results.json", "eval_results.json", "all_results.json", "README.md", "runs", "completions",
)  # fmt: skip
CACHES = ("tiny-model", "tiny-tools", "tiny-countdown", "tiny-gsm8k", "tiny-reward", "tiny-vlm")  # built-in models
# what grpo-trl itself writes: logs, recipe copies, the built tiny models, `grpo-trl report`
OWN_NAMES = ("completions.jsonl", "alerts.jsonl", "recipe.yaml", "recipe.step-*.yaml", *CACHES, "report")


def kind_of(name: str) -> str:
    """What an entry is: checkpoint, log, recipe, cache, report or model (the trainer's final save).

    >>> [kind_of(n) for n in ("checkpoint-4", "alerts.jsonl", "recipe.step-4.yaml", "tiny-model", "config.json")]
    ['checkpoint', 'log', 'recipe', 'cache', 'model']
    """
    if checkpoint_step(name) is not None:
        return "checkpoint"
    if name.endswith(".jsonl") or name in ("runs", "completions"):
        return "log"
    if name.startswith("recipe"):
        return "recipe"
    return "cache" if name in CACHES else "report" if name == "report" else "model"


def predictable(name: str) -> bool:
    """A name the trainer or grpo-trl writes (``checkpoint-<N>`` as the trainer names them: ``checkpoint_step``)."""
    if checkpoint_step(name) is not None:
        return True
    return any(fnmatch.fnmatchcase(name, p) for p in TRAINER_NAMES + OWN_NAMES)
