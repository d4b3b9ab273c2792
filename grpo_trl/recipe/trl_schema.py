"""The ``trainer`` and ``generation`` sections, typed from the installed ``trl.GRPOConfig`` (never copied); written
here is only what grpo-trl knows beyond TRL's types: bounds TRL accepts then crashes on mid-run, fields other
sections set, fields TRL removed or renamed."""

from __future__ import annotations

import functools
import re
import typing
from typing import Any

from pydantic import Field, create_model

from grpo_trl.fields import MAX_SECONDS, Section, YamlFloat, dataclass_model

BACKENDS = ("transformers", "vllm")

TRAINER_BOUNDS: dict[str, dict[str, float]] = {
    "temperature": {"gt": 0},
    "top_p": {"gt": 0, "le": 1},  # generate() and vLLM refuse others at the first generation
    "min_p": {"ge": 0, "le": 1},
    "repetition_penalty": {"gt": 0},
    "beta": {"ge": 0},  # a KL coefficient: negative rewards drifting away from the reference
    "epsilon": {"ge": 0},
    "epsilon_high": {"ge": 0},
    "vllm_gpu_memory_utilization": {"gt": 0, "le": 1},
    "learning_rate": {"ge": 0},
    "max_completion_length": {"ge": 1},
    "per_device_train_batch_size": {"ge": 1},
    "per_device_eval_batch_size": {"ge": 1},
    "gradient_accumulation_steps": {"ge": 1},
    "num_iterations": {"ge": 1},
    "num_generations": {"ge": 1},  # 1 gets TRL's own message (at least 2); 0 divides by zero first
    "num_train_epochs": {"gt": 0},
    "logging_steps": {"gt": 0},
    "top_k": {"ge": -1},  # 0 disables it; -1 too in vLLM only (generation_problems), below both refuse it
    "seed": {"ge": 0, "le": 2**32 - 1},  # numpy's seed range (transformers.set_seed); -1 passed TRL, failed in train
    "data_seed": {"ge": 0, "le": 2**32 - 1},
    # bounds TRL's docstrings state and its dataclass does not enforce (train crashes or trains something else):
    "steps_per_generation": {"ge": 1},  # steps per generation: 0 makes a batch of size 0
    "ref_model_sync_steps": {"ge": 1},  # TR-DPO's tau, a step period: 0 divides by zero in TRL's callback
    "ref_model_mixup_alpha": {"ge": 0, "le": 1},  # TR-DPO's alpha, a mix weight of the two policies
    "delta": {"gt": 0},  # the ratio's upper clip (two-sided GRPO, "greater than 1 + eps"): <= 0 flips the loss
    "top_entropy_quantile": {"ge": 0, "le": 1},  # rho, a quantile: "Range: [0.0-1.0]"
    "vllm_importance_sampling_clip_max": {"gt": 0},  # C_max, an upper bound on a ratio (always positive)
    "vllm_importance_sampling_clip_min": {"ge": 0},  # C_min, a lower bound on a ratio
    "vllm_importance_sampling_cap": {"gt": 0},  # deprecated name of vllm_importance_sampling_clip_max
    "off_policy_mask_threshold": {"gt": 0},  # "It expects a positive value"
    "weight_decay": {"ge": 0},  # torch's AdamW refuses < 0; the Trainer sets it per parameter group, unchecked there
}
BOUND_REASONS = {  # the fix printed with a bound error, by dotted key
    "trainer.temperature": "sampling divides the logits by it; use 1.0 for GRPO (0.6-1.0 are common)",
    "trainer.max_completion_length": "the number of tokens each completion may have",
    "trainer.num_generations": "GRPO compares at least 2 completions per prompt",
    "trainer.num_iterations": "1 is one update per generation batch",
    "trainer.per_device_train_batch_size": "completions per device per step",
    "trainer.seed": "numpy takes seeds from 0 to 4294967295",
    "trainer.data_seed": "numpy takes seeds from 0 to 4294967295",
    "trainer.delta": "TRL clamps the policy ratio at delta; TRL recommends more than 1 + epsilon (e.g. 1.5)",
    "trainer.top_entropy_quantile": "a quantile: 0.2 keeps the top 20% tokens by entropy, 1.0 keeps all",
}


# TRL fields whose choices live only in their help text.
HELP_CHOICE_FIELDS = ("loss_type", "scale_rewards", "vllm_mode", "importance_sampling_level")
HELP_CHOICE_FIELDS += ("multi_objective_aggregation", "vllm_importance_sampling_mode")
# GRPOConfig fields the recipe's other sections set: one place for each value.
MANAGED_FIELDS = {
    "reward_weights": "set `weight:` on each entry of rewards: instead",
    "model_init_kwargs": "set through the model: section (dtype, attn_implementation, trust_remote_code, revision)",
}


def help_choices(help_text: str, default: Any) -> tuple[Any, ...]:
    """The quoted values a TRL help text lists (``Supported values are 'a', 'b'``), the default first if missing.
    >>> help_choices("Must be one of `'server'` or `'colocate'`. `'server'`: ...", "colocate")
    ('server', 'colocate')
    """
    sentence = re.search(r"(?:[Ss]upported (?:values|options) are|[Mm]ust be one of)[^.]*\.", help_text)
    found = re.findall(r"'([a-z][a-z0-9_]*)'", sentence.group(0)) if sentence else []
    if len(found) < 2:
        found = re.findall(r"'([a-z][a-z0-9_]*)'", help_text)
    out = list(dict.fromkeys(found))
    if isinstance(default, str) and default not in out:
        out.insert(0, default)
    return tuple(out)


def _choices(f: Any, hint: Any, default: Any) -> tuple | None:
    """A field's choices: TRL's ``choices`` metadata or its help text's values, with ``True``/``False`` if offered."""
    help_text = f.metadata.get("help", "")
    choices = help_choices(help_text, default) if f.name in HELP_CHOICE_FIELDS else f.metadata.get("choices")
    if choices and (bool in typing.get_args(hint) or ("`True`" in help_text and "`False`" in help_text)):
        return (*choices, True, False)
    return tuple(choices) if choices else None


@functools.lru_cache(maxsize=1)
def trainer_model() -> type[Section]:
    """The ``trainer`` section: every ``trl.GRPOConfig`` init field, typed and defaulted by the installed TRL."""
    from trl import GRPOConfig

    return dataclass_model(
        "TrainerSection", GRPOConfig, "trl.GRPOConfig fields", MANAGED_FIELDS, _choices, TRAINER_BOUNDS
    )


GENERATION_FIELDS = {"vllm_mode": "vllm_mode"} | {  # generation: key -> its GRPOConfig field
    key: f"vllm_{key}"
    for key in ("server_host", "server_port", "server_base_url", "server_timeout", "gpu_memory_utilization")
    + ("tensor_parallel_size", "enable_sleep_mode", "max_model_length")
}


@functools.lru_cache(maxsize=1)
def generation_model() -> type[Section]:
    """``generation:``: the backend, a health-check timeout, and vLLM settings typed as their GRPOConfig fields."""
    trainer = trainer_model().model_fields
    fields: dict[str, Any] = {
        "backend": (  # choices checked in validate.py (its message names both); the enum is for editors
            str | None,
            Field(None, description="transformers or vllm", json_schema_extra={"enum": list(BACKENDS)}),
        ),
        "health_timeout": (
            YamlFloat,
            Field(5.0, gt=0, le=MAX_SECONDS, description="seconds to wait for a vLLM server"),
        ),
    }
    for key, trl_name in GENERATION_FIELDS.items():
        info = trainer[trl_name]
        kind = typing.Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation
        fields[key] = (typing.Optional[kind], Field(None, description=info.description))  # noqa: UP045
    return create_model("GenerationSection", __base__=Section, __doc__=generation_model.__doc__, **fields)
