"""The recipe schema: one strict pydantic type per section (``SECTIONS``), defaults in one place; ``trainer``
and ``generation`` are typed from the installed ``trl.GRPOConfig`` (``trl_schema.py``), builder options and
``model.tiny`` from signatures. Coercion and ``check`` read it; ``grpo-trl schema`` writes it as a JSON Schema for
editors (pydantic's ``model_json_schema`` of the same classes)."""

from __future__ import annotations

import functools
import json
import warnings
from importlib.metadata import version
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, ConfigDict, Field, create_model

from grpo_trl.data.options import DATA_REQUIRED, DataSection, builder_options_model
from grpo_trl.fields import MAX_SECONDS, Section, YamlFloat, dataclass_model, signature_model
from grpo_trl.io import read_json_head, write
from grpo_trl.models.builtin import BUILTIN_TINY  # noqa: F401 (re-exported: the one name of the built-in model)
from grpo_trl.monitor.heldout import HeldoutSection
from grpo_trl.recipe.async_grpo import async_model
from grpo_trl.recipe.trl_schema import generation_model, trainer_model

DTYPES = ("auto", "bfloat16", "float16", "float32")


def tiny_model() -> type[Section]:
    from grpo_trl.models.tiny import build_tiny_model

    return signature_model("TinyModel", build_tiny_model, skip=("output_dir",))


class ModelSection(Section):
    """The policy: a Hugging Face id, a local path, or builtin:tiny."""

    name: str = Field(description="Hugging Face model id, local path, or builtin:tiny (built offline)")
    dtype: Literal[DTYPES] | None = Field(None, description="weights dtype (model_init_kwargs.dtype)")  # type: ignore
    attn_implementation: str | None = Field(None, description="e.g. sdpa, eager, flash_attention_2")
    chat_template: str | None = Field(
        None, description="trl:<name> (a template TRL ships), a .jinja file (relative to the recipe) or the template"
    )
    trust_remote_code: bool | None = None
    revision: str | None = None
    lora: dict[str, Any] | None = Field(
        None, description="peft.LoraConfig fields (r, lora_alpha, target_modules...); {} is peft's defaults"
    )
    lora_merged_generation: bool = Field(
        False,
        description="transformers generate with the LoRA adapters folded into the weights (2.2x tokens/s on an H200); "
        "the base is restored bit for bit; costs one copy of the adapted weights while generating",
    )
    tiny: dict[str, Any] | None = Field(None, description="build_tiny_model arguments, for builtin:tiny")
    quantization: dict[str, Any] | None = Field(
        None,
        description="transformers.BitsAndBytesConfig fields (QLoRA with model.lora), see grpo_trl.models.quantization",
    )
    init_kwargs: dict[str, Any] | None = Field(
        None,
        description="more from_pretrained keywords (use_kernels, device_map, output_router_logits...), "
        "passed as GRPOConfig.model_init_kwargs with the fields above",
    )


class RewardSpec(Section):
    """One reward: a registered name or module.path:function, its weight, args, alias and time limit."""

    name: str | None = Field(
        None, min_length=1, description="registered reward (grpo-trl rewards) or module.path:function"
    )
    weight: YamlFloat = Field(1.0, description="weight in TRL's reward_weights")
    args: dict[str, Any] = Field(default_factory=dict, description="keyword arguments bound to the reward")
    alias: str | None = Field(None, min_length=1, description="the name TRL logs it under (rewards/<alias>/mean)")
    timeout: YamlFloat | None = Field(
        None, gt=0, le=MAX_SECONDS, description="seconds per call before its rows score None"
    )
    # or a reward model instead of a name (grpo_trl.models.reward_models): a sequence classifier with one label
    model: str | None = Field(None, min_length=1, description="reward model: Hugging Face id or local path")
    tokenizer: str | None = Field(None, min_length=1, description="reward model: its tokenizer, if stored apart")


class ToolSpec(Section):
    """A tool with its own time bound per call."""

    name: str = Field(min_length=1, description="registered tool (calculator, python) or module.path:function")
    timeout: YamlFloat | None = Field(None, gt=0, le=MAX_SECONDS, description="seconds one call may take (default 15)")


def bare_names(value: Any) -> Any:
    """``- countdown`` in a reward list means ``{name: countdown}``."""
    return [{"name": v} if isinstance(v, str) else v for v in value] if isinstance(value, list) else value


def named_list(spec: type[Section]) -> Any:
    """A list of ``spec`` whose items may also be a bare name (``- countdown``), in the JSON Schema too."""
    name = Annotated[str, Field(min_length=1)]
    return Annotated[list[spec], BeforeValidator(bare_names, json_schema_input_type=list[name | spec])]


class LoggingSection(Section):
    """Completion samples and alerts written next to the checkpoints."""

    completions_every: int = Field(10, ge=1, description="write samples every N logged steps")
    completions_samples: int = Field(4, ge=0, description="rows written to completions.jsonl each time")
    alerts: bool = Field(True, description="write alerts.jsonl when a run shows signs of not learning")
    alert_patience: int = Field(10, ge=1, description="consecutive logged steps a sign lasts before an alert")


class LaunchSection(Section):
    """How many training processes the recipe is meant for (batch arithmetic is checked for them)."""

    num_processes: int = Field(1, ge=1, description="training processes per machine")
    num_machines: int = Field(1, ge=1)
    accelerate_config: str | None = None
    vllm_gpus: int = Field(1, ge=1, description="GPUs given to `grpo-trl serve` in vLLM server mode")


@functools.cache
def lora_model() -> type[Section]:
    """``model.lora``: every ``peft.LoraConfig`` field, typed and defaulted by the installed peft."""
    from peft import LoraConfig

    return dataclass_model("LoraSection", LoraConfig, "peft.LoraConfig fields")


class RolloutSpec(Section):
    """TRL's ``rollout_func`` with the extra fields it returns (TRL forwards them to rewards as keywords)."""

    func: str = Field(min_length=1, description="module.path:function, called as rollout_func(prompts, trainer)")
    fields: list[str] = Field(default_factory=list, description="extra fields it returns, which rewards may read")


SECTIONS: dict[str, Any] = {  # section name -> its pydantic type, or a function making it (typed from TRL)
    "model": ModelSection,
    "data": DataSection,
    "rewards": named_list(RewardSpec),
    "tools": named_list(ToolSpec),
    "environment": dict[str, Any],
    "rollout_func": str | RolloutSpec,
    "plugins": list[str],
    "trainer": trainer_model,
    "generation": generation_model,
    "logging": LoggingSection,
    "launch": LaunchSection,
    "heldout": HeldoutSection,  # the monitor capability's own section (monitor/heldout.py)
    "async_grpo": async_model,
}
_MADE = (trainer_model, generation_model, async_model)
SECTION_HINTS = {  # section name -> what it holds, for "must be a mapping ..." messages
    name: SECTIONS[name].__doc__.split("\n")[0] for name in ("model", "data", "logging", "launch", "heldout")
} | {
    "rewards": "a list of {name, weight, args} or reward models {model, weight}, e.g. - {name: accuracy, weight: 1.0}",
    "tools": "a list of tool names, e.g. tools: [calculator]",
    "environment": "{factory: NAME or module:Class, args: {...}}, or a mapping of names to such entries",
    "rollout_func": "module.path:function (TRL's rollout_func), or {func: module.path:function, fields: [...]}",
    "plugins": "a list of Python files (relative to the recipe) that register rewards",
    "trainer": "a mapping of trl.GRPOConfig fields",
    "generation": "a mapping: backend (transformers or vllm) and vLLM settings",
    "async_grpo": "AsyncGRPOConfig fields GRPOConfig lacks ({} for defaults)",
}
REQUIRED_SECTIONS = {
    "model": "a Hugging Face model id, a local path, or builtin:tiny, e.g. model: {name: builtin:tiny}",
    "data": DATA_REQUIRED,
}
# required unless an environment scores the rollouts (its get_reward(), as TRL allows): checked in reward_checks
REWARDS_HINT = "a list of {name, weight, args}, e.g. - {name: accuracy, weight: 1.0}"


def section_type(name: str) -> Any:
    """The pydantic type of section ``name`` (factories, used for TRL-typed sections, are called here)."""
    kind = SECTIONS[name]
    return kind() if kind in _MADE else kind


# The packages whose releases change the schema's text (recorded in it as "x-written-with").
WRITTEN_WITH = ("pydantic", "transformers", "trl")


def _data_model() -> Any:
    """``data:`` for editors: the common options and every registered builder's options (first definition wins)."""
    from grpo_trl.data.registry import list_builders

    fields: dict[str, Any] = {}
    for name, info in DataSection.model_fields.items():
        fields[name] = (info.annotation, info)
    for builder in list_builders():
        for name, info in builder_options_model(builder).model_fields.items():
            if name not in fields:
                fields[name] = (info.annotation | None, Field(None, description=f"option of builder {builder.name}"))
    return create_model("DataSection", __base__=Section, __doc__=DataSection.__doc__, **fields)


def recipe_json_schema() -> dict:
    """The JSON Schema (2020-12) of a recipe for the installed TRL and the registered builders."""
    import trl

    fields: dict[str, Any] = {
        "extends": (str | None, Field(None, description="a recipe this one builds on (path relative to this file)"))
    }
    for name in SECTIONS:
        kind = _data_model() if name == "data" else section_type(name)
        fields[name] = (kind | None, Field(None, description=SECTION_HINTS.get(name) or None))
    model = create_model("GrpoTrlRecipe", __base__=Section, __doc__="A grpo-trl recipe (YAML).", **fields)
    model.model_config = ConfigDict(**{**model.model_config, "title": "grpo-trl recipe"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # defaults that JSON cannot hold are left out
        out = model.model_json_schema()
    out["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    out.pop("required", None)  # a recipe that `extends` another is partial: required sections are checked merged
    out["x-trl-version"] = trl.__version__
    out["x-written-with"] = {name: version(name) for name in WRITTEN_WITH}
    return out


def write_schema(path: str | None = None) -> str:
    """Write the schema to ``path`` (the writer replaces only a schema this command wrote); returns the text."""
    text = json.dumps(recipe_json_schema(), indent=1, sort_keys=True) + "\n"
    if path is not None:  # the one writer: refuses a folder, a link, a user's file
        write(path, text, flag="--output", mine=_is_our_schema, parents=False)
    return text


def _is_our_schema(path: Path) -> bool:
    data = read_json_head(path, 10_000_000)
    return isinstance(data, dict) and "x-trl-version" in data
