"""What the importer knows about TRL's and open-r1's configs, as data: reward names, reward settings, renamed and
removed fields, and the GRPO defaults older TRL releases used. The renames are also the did-you-mean data of
``grpo_trl.errors.suggest`` (``suggest_renames``): one table for ``import`` and ``check``. Current defaults are never
written here: they are read from the installed ``trl.GRPOConfig`` / ``trl.ModelConfig``.

Example:
    >>> old_default("beta", "0.18"), old_default("beta", "0.19"), old_default("loss_type", "0.20")
    (0.04, 0.0, 'bnpo')
    >>> rename_hint("format")
    "did you mean 'think_format'? (open-r1's 'format')"
"""

from __future__ import annotations

from grpo_trl import errors
from grpo_trl.errors import Problem

# ------------------------------------------------------------------------------------------------------ rewards
# peer reward name -> (grpo-trl reward, args the peer's semantics need, note). Args whose reward does not take them in
# this grpo-trl version are dropped with a warning (see translate.py), so this table can name what is coming.
REWARDS: dict[str, tuple[str, dict, str]] = {
    # open-r1 (src/open_r1/rewards.py registry names)
    "accuracy": ("accuracy", {"require_answer_tag": False}, "open-r1's accuracy: math-verify on the whole completion"),
    "format": (
        "think_format",
        {"trailing_lines": True},
        "open-r1's format (lines may follow </answer>); grpo-trl's think_format is the stricter (no nested <think>)",
    ),
    "tag_count": ("tag_count", {}, "open-r1's tag_count"),
    "reasoning_steps": (
        "reasoning_steps",
        {"numbered_lines": False},
        "open-r1's reasoning_steps (a numbered '1.' counts only at the start of the text, as its regex does)",
    ),
    "cosine": ("cosine", {"require_answer_tag": False}, "open-r1's cosine"),
    "repetition_penalty": ("repetition_penalty", {}, "open-r1's repetition_penalty"),
    "length": ("length", {"require_answer_tag": False}, "open-r1's length (Kimi 1.5)"),
    "soft_overlong_punishment": ("soft_overlong", {}, "open-r1's soft_overlong_punishment (DAPO)"),
    "code": ("code_tests", {}, "open-r1's code (E2B/local/morph) -> grpo-trl's local sandbox"),
    "binary_code": ("code_tests", {"binary": True}, "open-r1's binary_code -> code_tests, pass/fail"),
    "code_format": ("code_format", {}, "open-r1's code_format"),
    # TRL (trl/scripts/grpo.py registry names)
    "accuracy_reward": ("accuracy", {"require_answer_tag": False}, "TRL's accuracy_reward"),
    "reasoning_accuracy_reward": ("reasoning_accuracy", {}, "TRL's reasoning_accuracy_reward"),
    "think_format_reward": (
        "think_format",
        {},
        "TRL's think_format_reward; grpo-trl's think_format also requires the <answer> block",
    ),
    "get_soft_overlong_punishment": ("soft_overlong", {}, "TRL's get_soft_overlong_punishment"),
}

# Rewards that need a service grpo-trl does not run: written out unchanged, with this reason.
NO_EQUIVALENT = {
    "ioi_code": "IOI scoring needs a Piston or Morph server; register your own 'ioi_code' in a plugin",
    "cf_code": "Codeforces scoring needs a Piston or Morph server; register your own 'cf_code' in a plugin",
}

# open-r1 top-level reward settings: key -> (reward it configures, argument name, open-r1's default when unset).
REWARD_SETTINGS: dict[str, tuple[str, str, object]] = {
    "cosine_min_value_wrong": ("cosine", "min_value_wrong", 0.0),
    "cosine_max_value_wrong": ("cosine", "max_value_wrong", -0.5),
    "cosine_min_value_correct": ("cosine", "min_value_correct", 0.5),
    "cosine_max_value_correct": ("cosine", "max_value_correct", 1.0),
    "cosine_max_len": ("cosine", "max_len", 1000),
    "repetition_n_grams": ("repetition_penalty", "ngram_size", 3),
    "repetition_max_penalty": ("repetition_penalty", "max_penalty", -1.0),
    "max_completion_len": ("soft_overlong_punishment", "max_completion_len", 16384),
    "soft_punish_cache": ("soft_overlong_punishment", "soft_punish_cache", 4096),
    "code_language": ("code_format", "language", "python"),
}
# Reward settings a grpo-trl reward does not take: setting -> why (named among the keys `import` does not map).
SETTINGS_NOT_CARRIED = {
    "code_language": "grpo-trl's code rewards read and run Python; a plugin reward can check another language",
}
# Peer keys whose value the recipe carries by grpo-trl's own default, so nothing is written: key -> (value, note).
CARRIED_BY_DEFAULT = {
    "dataset_train_split": ("train", "data.split defaults to train"),
    "datasets": ([], "no dataset mixture"),
    "dataset_streaming": (False, "data.streaming defaults to false"),
}
# Why a key read but not written is left out: key -> why (a key with no entry: "read, but no rule carries it").
LEFT_OUT = {
    "dataset_test_split": "evaluation is off (eval_strategy: no), so TRL never reads it; with evaluation on it "
    "becomes data.eval_split",
}
# TRL's script hard-codes these for get_soft_overlong_punishment.
TRL_FIXED_ARGS = {"get_soft_overlong_punishment": {"max_completion_len": 1280, "soft_punish_cache": 256}}
# open-r1's reward_funcs when the config names none.
OPEN_R1_DEFAULT_REWARDS = ["accuracy", "format", "tag_count"]
# Settings about remote code executors: grpo-trl runs code in a local sandbox instead.
CODE_PROVIDER_KEYS = (
    "code_provider",
    "e2b_router_url",
    "morph_router_url",
    "ioi_provider",
    "parallel_code_exec_per_proc",
    "code_eval_test_batch_size",
    "code_eval_scoring_mode",
    "enforce_same_language",
)
# Length units that differ from grpo-trl's (tokens): reward -> note.
LENGTH_UNITS = {
    "cosine": "open-r1 measures cosine_max_len in characters, grpo-trl in tokens (roughly 3-4 characters each): "
    "check args.max_len",
    "repetition_penalty": "open-r1 counts word n-grams, grpo-trl (TRL's implementation) token-id n-grams",
    "length": "open-r1 compares the batch's lengths in characters, grpo-trl in tokens, and scores a row whose gold "
    "cannot be parsed as correct where grpo-trl scores it None (skipped)",
}

# ------------------------------------------------------------------------------------------------- config keys
MODEL_KEYS = {  # trl.ModelConfig field -> model: key (lora_* go to model.lora)
    "model_name_or_path": "name",
    "model_revision": "revision",
    "torch_dtype": "dtype",
    "dtype": "dtype",
    "attn_implementation": "attn_implementation",
    "trust_remote_code": "trust_remote_code",
    "chat_template": "chat_template",
}
LORA_KEYS = {  # trl.ModelConfig -> peft.LoraConfig
    "lora_r": "r",
    "lora_alpha": "lora_alpha",
    "lora_dropout": "lora_dropout",
    "lora_target_modules": "target_modules",
    "lora_target_parameters": "target_parameters",
    "lora_modules_to_save": "modules_to_save",
    "lora_task_type": "task_type",
    "use_rslora": "use_rslora",
    "use_dora": "use_dora",
}
QUANT_KEYS = ("load_in_8bit", "load_in_4bit", "bnb_4bit_quant_type", "use_bnb_nested_quant", "bnb_4bit_quant_storage")
# accelerate launch keys the TRL CLI reads from the same file -> launch: key
LAUNCH_KEYS = {k: k for k in ("num_processes", "num_machines", "accelerate_config")}
ACCELERATE_PRESETS = {"multi_gpu": "ddp", "single_gpu": "single_gpu", "zero2": "zero2", "zero3": "zero3"}
ACCELERATE_PRESETS.update({"fsdp1": "fsdp", "fsdp2": "fsdp"})

# Fields that moved or were renamed (old -> new GRPOConfig field), applied only when the installed GRPOConfig has the
# new one and lacks the old one.
RENAMED_FIELDS = {
    "wandb_log_unique_prompts": "log_unique_prompts",
    "vllm_guided_decoding_regex": "vllm_structured_outputs_regex",
    "evaluation_strategy": "eval_strategy",
    "no_cuda": "use_cpu",
    "vllm_max_model_len": "vllm_max_model_length",
}
# Keys with no place in a recipe: key -> why / what to do instead.
NOT_MAPPED = {
    "overwrite_output_dir": "not a recipe setting: run `grpo-trl train RECIPE --overwrite` (without it grpo-trl "
    "refuses to restart over existing checkpoints; open-r1 resumed from them silently)",
    "vllm_device": "removed from TRL: vLLM runs colocated or on its own GPU(s) in server mode (`grpo-trl serve`)",
    "benchmarks": "open-r1 runs benchmarks after training; grpo-trl has `grpo-trl eval RECIPE --model OUTPUT_DIR`",
    "callbacks": "open-r1's callbacks (push_to_hub_revision...) have no grpo-trl equivalent",
    "hub_model_revision": "open-r1's Hub branch: push with trainer.hub_model_id / hub_revision instead",
    "overwrite_hub_revision": "open-r1-only Hub setting",
    "push_to_hub_revision": "open-r1-only Hub setting",
    "num_completions_to_print": "open-r1-only; grpo-trl writes completions.jsonl (logging.completions_every)",
    "wandb_entity": "set the WANDB_ENTITY environment variable instead",
    "wandb_project": "set the WANDB_PROJECT environment variable instead",
    "wandb_run_group": "set the WANDB_RUN_GROUP environment variable instead",
    "streaming": "TRL's dataset-mixture streaming: grpo-trl streams one dataset (data.streaming), not a mixture",
    "test_split_size": "TRL's dataset-mixture eval fraction: grpo-trl holds out a count, set data.eval_size",
    "ignore_bias_buffers": "DDP setting TRL's GRPO script ignores",
    "use_liger_loss": "Liger's GRPO loss was removed from TRL (0.28): TRL now always computes log-probs in chunks "
    "with its own fused LM head; use_liger_kernel (layer kernels) is a different setting and is not derived from it",
    "env": "environment variables: export them before running",
    "vllm_dtype": "removed from TRL: the vLLM server sets its dtype where it starts (`grpo-trl serve RECIPE -- "
    "--dtype bfloat16`); colocated vLLM follows model.dtype",
    "vllm_enable_prefix_caching": "removed from TRL: a vLLM server setting (`grpo-trl serve RECIPE -- "
    "--enable-prefix-caching`)",
}

# ------------------------------------------------------------------------------------------- defaults over time
# Defaults of older TRL releases that differ from today's, as (first TRL version with that default, value), read from
# TRL's release history of GRPOConfig / TrainingArguments. Today's value comes from the installed GRPOConfig.
DEFAULT_HISTORY: dict[str, list[tuple[str, object]]] = {
    "beta": [("0.14", 0.04), ("0.19", 0.0)],
    "loss_type": [("0.14", "grpo"), ("0.17", "bnpo"), ("0.22", "dapo")],
    "vllm_mode": [("0.14", "server"), ("1.0", "colocate")],
    "max_completion_length": [("0.14", 256)],
    "temperature": [("0.14", 0.9), ("0.18", 1.0)],
    "gradient_checkpointing": [("0.14", False), ("0.22", True)],
    "bf16": [("0.14", False), ("0.19", None)],
    "logging_steps": [("0.14", 500), ("0.19", 10)],
    "use_bias_correction_kl": [("0.14", False)],
}
# Why each matters (shown next to the value written).
DEFAULT_NOTES = {
    "beta": "KL penalty",
    "loss_type": "loss normalisation",
    "vllm_mode": "vLLM ran as a separate server",
    "max_completion_length": "completion budget",
    "temperature": "sampling temperature",
    "gradient_checkpointing": "memory vs speed only",
    "bf16": "mixed precision",
    "logging_steps": "log interval",
    "use_bias_correction_kl": "KL estimator",
}
MAX_PROMPT_LENGTH_HISTORY = [("0.14", 512), ("0.26", None)]
BASELINE_OPEN_R1 = "0.18"  # the TRL version open-r1 pins
BASELINE_TRL = "1.0"


def _vkey(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in str(version).split(".")[:2])


def old_default(field: str, version: str, history: list | None = None) -> object:
    """The default of ``field`` in TRL ``version`` per the history table (KeyError if the field has none)."""
    hist = history if history is not None else DEFAULT_HISTORY[field]
    value = hist[0][1]
    for since, v in hist:
        if _vkey(since) <= _vkey(version):
            value = v
    return value


# --------------------------------------------------------------------------------------------- did-you-mean data
# Peer names -> (where they live in a grpo-trl recipe: a reward name, a recipe key or a CLI flag; why). `check`/`train`
# answer a peer's top-level key with it (rename_hint); with the translation tables above it is also what
# errors.suggest knows (suggest_renames), so a peer's name anywhere in a recipe gets "did you mean <new>".
RENAMES: dict[str, tuple[str, str]] = {
    "format": ("think_format", "open-r1's 'format'"),
    "format_reward": ("think_format", "open-r1's 'format'"),
    "think_format_reward": ("think_format", "TRL's name"),
    "accuracy_reward": ("accuracy", "TRL's name"),
    "reasoning_accuracy_reward": ("reasoning_accuracy", "TRL's name"),
    "soft_overlong_punishment": ("soft_overlong", "open-r1's name"),
    "get_soft_overlong_punishment": ("soft_overlong", "TRL's name"),
    "tag_count_reward": ("tag_count", "open-r1's function name"),
    "len_reward": ("length", "open-r1's function name"),
    "reasoning_steps_reward": ("reasoning_steps", "open-r1's function name"),
    "get_cosine_scaled_reward": ("cosine", "TRL's and open-r1's function name"),
    "get_repetition_penalty_reward": ("repetition_penalty", "TRL's and open-r1's function name"),
    "get_code_format_reward": ("code_format", "open-r1's function name"),
    "binary_code_reward": ("code_tests", "open-r1's function name; args: {binary: true}"),
    "overwrite_output_dir": ("--overwrite", "a `grpo-trl train` flag, not a recipe key"),
    "model_name_or_path": ("model.name", "TRL's ModelConfig"),
    "model_revision": ("model.revision", "TRL's ModelConfig"),
    "torch_dtype": ("model.dtype", "TRL's ModelConfig"),
    "dataset": ("data", "the data section"),
    "dataset_name": ("data.name", "TRL's ScriptArguments; with data.builder: hub"),
    "dataset_prompt_column": ("data.prompt_column", "open-r1; with data.builder: hub"),
    "system_prompt": ("data.system_prompt", "open-r1"),
    "reward_funcs": ("rewards", "TRL / open-r1; rewards: [{name: ...}]"),
    "reward_weights": ("rewards", "TRL / open-r1; a weight: on each rewards: entry"),
    "use_peft": ("model.lora", "TRL's ModelConfig"),
}


def rename_hint(name: str) -> str | None:
    """``did you mean X? (why)`` for a peer's name, or None."""
    hit = RENAMES.get(str(name))
    return f"did you mean {hit[0]!r}? ({hit[1]})" if hit else None


def suggest_renames() -> dict[str, str]:
    """Peer or old name -> grpo-trl name or dotted recipe key, for ``errors.suggest``: read from the tables above
    (peer reward names, ``trl.ModelConfig`` keys, LoRA keys, renamed ``GRPOConfig`` fields, ``RENAMES``).

    >>> renames = suggest_renames()
    >>> renames["accuracy_reward"], renames["lora_r"], renames["evaluation_strategy"], renames["torch_dtype"]
    ('accuracy', 'model.lora.r', 'eval_strategy', 'model.dtype')
    """
    out = {peer: ours for peer, (ours, _args, _note) in REWARDS.items() if peer != ours}
    out.update({key: f"model.{ours}" for key, ours in MODEL_KEYS.items() if key != ours})
    out.update({key: f"model.lora.{ours}" for key, ours in LORA_KEYS.items()})
    out.update(RENAMED_FIELDS)  # GRPOConfig field names: suggested among the trainer: keys
    out.update({key: ours for key, (ours, _why) in RENAMES.items()})
    return out


# Keys only a flat TRL / open-r1 config has at its top level.
PEER_MARKERS = ("model_name_or_path", "reward_funcs", "dataset_name", "dataset_mixture", "dataset_prompt_column")


def peer_config_problems(data: dict, file: str) -> list[Problem]:
    """For ``check``/``train``: one problem when ``data`` is a flat TRL/open-r1 config rather than a recipe."""
    if not isinstance(data, dict):
        return []
    markers = [k for k in PEER_MARKERS if k in data]
    if markers and not ({"model", "rewards"} & set(data)):
        return [
            Problem(
                file,
                markers[0],
                f"this looks like a TRL/open-r1 config: run `grpo-trl import {file} -o recipe.yaml` and use "
                "the recipe it writes",
            )
        ]
    return []


def top_level_hint(key: str) -> str | None:
    """Why an unknown top-level recipe key is there: a GRPOConfig field (belongs under trainer:) or a peer's name."""
    hint = rename_hint(key)
    if hint:
        return hint
    import dataclasses

    from trl import GRPOConfig

    if key in {f.name for f in dataclasses.fields(GRPOConfig)}:
        return f"a trl.GRPOConfig field: it belongs under trainer: (trainer: {{{key}: ...}})"
    return None


errors.PEER_RENAMES.update(suggest_renames())  # what errors.suggest knows of TRL's and open-r1's names
