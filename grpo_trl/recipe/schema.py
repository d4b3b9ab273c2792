"""The recipe schema: one pydantic class per section, each field typed, with its default in one place.

- ``trainer`` is typed from ``dataclasses.fields(trl.GRPOConfig)``: names, types, defaults, help texts and choices
  are read from the installed TRL (and transformers' enums), never copied.
- ``data`` builder options and ``model.tiny`` are typed from the signatures of the builder / ``build_tiny_model``.
- Adding a section is one class here: ``@section("name")`` on a ``Section`` subclass (or
  ``register_section("name", type)`` for a list). Loading, coercion, ``check`` and ``grpo-trl schema`` pick it up.

Every model is strict (``"8"`` is not an int, ``1`` is not a bool), refuses unknown keys and NaN/inf. Two YAML
quirks are coerced once, when the recipe is loaded: ``1e-6`` (read by PyYAML as a string) for float fields, and an
unquoted ``no`` (read as ``False``) for string fields.

Example:
    >>> ModelSection.model_validate({"name": "Qwen/Qwen2.5-0.5B", "dtype": "bfloat16"}).dtype
    'bfloat16'
    >>> {"model", "data", "rewards", "trainer"} <= set(SECTIONS)
    True
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import inspect
import math
import re
import typing
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, create_model

BUILTIN_TINY = "builtin:tiny"
DTYPES = ("auto", "bfloat16", "float16", "float32")
BACKENDS = ("transformers", "vllm")


# ------------------------------------------------------------------------------------------------ YAML coercions
def _yaml_float(value: Any) -> Any:
    """PyYAML reads ``1e-6`` (no dot) as a string: accept it where a float is expected."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def _yaml_no(value: Any) -> Any:
    """YAML 1.1 reads an unquoted ``no`` as ``False``: for string fields (``save_strategy: no``) it meant ``"no"``."""
    return "no" if value is False else value


YamlFloat = Annotated[int | float, BeforeValidator(_yaml_float)]  # an int stays an int (save_steps)


class Section(BaseModel):
    """Base of every section: strict types, unknown keys refused, no NaN/inf, immutable once loaded."""

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False, frozen=True)


class _Lazy:
    def __init__(self, factory: typing.Callable[[], Any]):
        self.factory = factory


SECTIONS: dict[str, Any] = {}  # section name -> pydantic model class or type (or a zero-argument factory)
SECTION_HINTS: dict[str, str] = {}  # section name -> what it holds, for "must be a mapping ..." messages


def register_section(name: str, kind: Any, hint: str = "", *, lazy: bool = False) -> None:
    """Declare a top-level recipe section ``name`` validated as ``kind`` (a ``Section`` class or a type).

    ``lazy``: ``kind`` is a function returning the type, called on first use (for sections typed from TRL).
    """
    SECTIONS[name] = _Lazy(kind) if lazy else kind
    SECTION_HINTS[name] = hint or (inspect.getdoc(kind) or "").split("\n")[0]


def section(name: str, hint: str = "") -> typing.Callable[[type], type]:
    """Class decorator: ``@section("tools")`` makes a ``Section`` subclass the recipe's ``tools:`` section."""

    def decorator(cls: type) -> type:
        register_section(name, cls, hint)
        return cls

    return decorator


# ------------------------------------------------------------------------------------------------ fixed sections
def signature_model(name: str, func: Any, skip: typing.Container[str] = ()) -> type[Section]:
    """A ``Section`` whose fields are the keyword parameters of ``func`` (types and defaults from its signature)."""
    hints = typing.get_type_hints(func)
    fields: dict[str, Any] = {}
    for pname, p in inspect.signature(func).parameters.items():
        if pname in skip or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or pname == "self":
            continue
        default = ... if p.default is p.empty else p.default
        fields[pname] = (_field_type(hints.get(pname, Any)), Field(default=default))
    return create_model(name, __base__=Section, **fields)


def _tiny_model() -> type[Section]:
    from grpo_trl.testing import build_tiny_model

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
    lora: dict[str, Any] | None = Field(None, description="peft.LoraConfig fields (r, lora_alpha, target_modules)")
    tiny: dict[str, Any] | None = Field(None, description="build_tiny_model arguments, for builtin:tiny")
    quantization: dict[str, Any] | None = Field(
        None, description="transformers.BitsAndBytesConfig fields (QLoRA with model.lora), see grpo_trl.quantization"
    )


class RewardSpec(Section):
    """One reward: a registered name or module.path:function, its weight, args, alias and time limit."""

    name: str | None = Field(
        None, min_length=1, description="registered reward (grpo-trl rewards) or module.path:function"
    )
    weight: YamlFloat = Field(1.0, description="weight in TRL's reward_weights")
    args: dict[str, Any] = Field(default_factory=dict, description="keyword arguments bound to the reward")
    alias: str | None = Field(None, min_length=1, description="the name TRL logs it under (rewards/<alias>/mean)")
    timeout: YamlFloat | None = Field(None, gt=0, description="seconds per call before its rows score None")
    # or a reward model instead of a name (grpo_trl.reward_models): a sequence classifier with one label
    model: str | None = Field(None, min_length=1, description="reward model: Hugging Face id or local path")
    tokenizer: str | None = Field(None, min_length=1, description="reward model: its tokenizer, if stored apart")


class ToolSpec(Section):
    """A tool with its own time bound per call."""

    name: str = Field(min_length=1, description="registered tool (calculator, python) or module.path:function")
    timeout: YamlFloat | None = Field(None, gt=0, description="seconds one call may take (default 15)")


def _bare_names(value: Any) -> Any:
    """``- countdown`` in a reward list means ``{name: countdown}``."""
    if isinstance(value, list):
        return [{"name": v} if isinstance(v, str) else v for v in value]
    return value


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


class DataSection(Section):
    """The dataset: a builder and its options (typed from the builder), or a weighted mixture of builders."""

    model_config = ConfigDict(extra="allow")  # builder options: typed by ``builder_options_model``

    builder: str | None = Field(None, description="dataset builder (grpo-trl data builders: gsm8k, countdown...)")
    split: str = "train"
    limit: int | None = Field(None, gt=0, description="keep the first N rows (after shuffle and filters)")
    shuffle: bool = False
    seed: int = 42
    system_prompt: str | None = Field(None, description="r1, xml, countdown, none, or the literal text")
    eval_split: str | None = None
    eval_size: int | None = Field(None, gt=0, description="hold out N rows for evaluation")
    max_prompt_tokens: int | None = Field(None, gt=0, description="drop rows whose prompt is longer")
    max_solution_tokens: int | None = Field(None, gt=0, description="drop rows whose solution is longer")
    solution_column: str = "solution"
    pass_rate: dict[str, Any] | None = Field(None, description="keep a pass-rate band from `grpo-trl filter`")
    sampler: dict[str, Any] | None = Field(None, description="zero-variance-aware sampling (data/sampler.py)")
    mixture: list[dict[str, Any]] | None = Field(None, min_length=1, description="[{builder, weight, ...}]")
    weight: YamlFloat | None = Field(None, gt=0, description="share of a mixture part")


MIXTURE_KEYS = ("mixture", "size", "seed", "shuffle", "eval_size", "system_prompt", "sampler")
COMMON_DATA_KEYS = tuple(k for k in DataSection.model_fields if k not in ("mixture", "weight"))


def builder_options_model(builder: Any) -> type[Section]:
    """The typed options of one dataset builder (keyword-only parameters of its function)."""
    return _builder_model(builder.func)


@functools.cache
def _builder_model(func: Any) -> type[Section]:
    skip = ("split", "base_dir")
    sig = inspect.signature(func)
    keep = [n for n, p in sig.parameters.items() if p.kind is p.KEYWORD_ONLY and n not in skip]
    return signature_model(f"{func.__name__}_options", func, skip=[n for n in sig.parameters if n not in keep])


# ------------------------------------------------------------------------------------------------ TRL's GRPOConfig
# What grpo-trl knows beyond TRL's types: values TRL accepts at construction and then crashes on mid-run.
TRAINER_BOUNDS: dict[str, dict[str, float]] = {
    "temperature": {"gt": 0},
    "learning_rate": {"ge": 0},
    "max_completion_length": {"ge": 1},
    "per_device_train_batch_size": {"ge": 1},
    "per_device_eval_batch_size": {"ge": 1},
    "gradient_accumulation_steps": {"ge": 1},
    "num_iterations": {"ge": 1},
    "num_generations": {"ge": 1},  # 1 gets TRL's own message (at least 2); 0 divides by zero first
    "num_train_epochs": {"gt": 0},
    "logging_steps": {"gt": 0},
}
BOUND_REASONS = {  # the fix printed with a bound error, by dotted key
    "trainer.temperature": "sampling divides the logits by it; use 1.0 for GRPO (0.6-1.0 are common)",
    "trainer.max_completion_length": "the number of tokens each completion may have",
    "trainer.num_generations": "GRPO compares at least 2 completions per prompt",
    "trainer.num_iterations": "1 is one update per generation batch",
    "trainer.per_device_train_batch_size": "completions per device per step",
}


# TRL fields whose choices live only in their help text (TRL checks them the first time a step reaches them).
HELP_CHOICE_FIELDS = (
    "loss_type",
    "scale_rewards",
    "vllm_mode",
    "importance_sampling_level",
    "multi_objective_aggregation",
    "vllm_importance_sampling_mode",
)
# GRPOConfig fields the recipe's other sections set: one place for each value.
MANAGED_FIELDS = {
    "reward_weights": "set `weight:` on each entry of rewards: instead",
    "model_init_kwargs": "set through the model: section (dtype, attn_implementation, trust_remote_code, revision)",
}
# Fields TRL removed or renamed: old name -> the fix. Only reported when the installed GRPOConfig lacks the old name.
REMOVED_FIELDS = {
    "max_prompt_length": "removed in TRL 1.x (prompts are no longer truncated); bound prompts with "
    "data.max_prompt_tokens, which drops longer rows before training",
    "use_liger_loss": "removed in TRL 0.28 with Liger's GRPO loss (TRL computes log-probs with its own fused LM "
    "head); "
    "trainer.use_liger_kernel is a different switch (layer kernels)",
    "overwrite_output_dir": "not a recipe setting: pass --overwrite to `grpo-trl train`",
    "vllm_device": "removed: run vLLM colocated (generation.vllm_mode: colocate) or on its own GPU in server mode "
    "(generation.vllm_mode: server, started with `grpo-trl serve`)",
    "torch_dtype": "moved: set model.dtype (bfloat16, float16, float32 or auto)",
    "wandb_log_unique_prompts": "renamed: use trainer.log_unique_prompts",
    "vllm_guided_decoding_regex": "renamed: use trainer.vllm_structured_outputs_regex",
    "warmup_ratio": "removed in transformers 5: trainer.warmup_steps takes a float in [0, 1) as a ratio",
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


def _field_type(hint: Any, choices: tuple | None = None) -> Any:
    """A strict pydantic type for a dataclass / signature annotation (``Any`` where it cannot be expressed)."""
    origin = typing.get_origin(hint)
    if hint is Any or hint is inspect.Parameter.empty:
        return Any
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        args = typing.get_args(hint)
        enums = [a for a in args if isinstance(a, type) and issubclass(a, enum.Enum)]
        if enums:  # transformers' `IntervalStrategy | str`: the enum's values are the choices
            values = tuple(dict.fromkeys(m.value for e in enums for m in e))
            rest = [a for a in args if a not in enums and a is not str]
            lit = Annotated[Literal[values], BeforeValidator(_yaml_no)]  # type: ignore[valid-type]
            return typing.Union[tuple([lit, *[_field_type(a) for a in rest]])] if rest else lit  # noqa: UP007
        mapped = tuple(_field_type(a, choices) for a in args)
        return Any if Any in mapped else typing.Union[mapped]  # noqa: UP007
    if choices:
        if hint is str:
            return Annotated[Literal[choices], BeforeValidator(_yaml_no)]  # type: ignore[valid-type]
        return Literal[choices]  # type: ignore[valid-type]
    if hint is float:
        return YamlFloat
    if hint is str:
        return Annotated[str, BeforeValidator(_yaml_no)]
    if hint in (int, bool, type(None)):
        return hint
    if origin in (list, dict, tuple) or hint in (list, dict):
        args = typing.get_args(hint)
        if not args:
            return hint
        try:
            return origin[tuple(_field_type(a) for a in args)] if origin is not list else list[_field_type(args[0])]
        except TypeError:
            return origin
    if origin is Literal:
        return hint
    return Any


def _jsonable(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value if isinstance(value, (str, int, float, bool, type(None), list, dict)) else None


@functools.lru_cache(maxsize=1)
def trainer_model() -> type[Section]:
    """The ``trainer`` section: every ``trl.GRPOConfig`` init field, typed and defaulted by the installed TRL."""
    from trl import GRPOConfig

    hints = typing.get_type_hints(GRPOConfig)
    fields: dict[str, Any] = {}
    for f in dataclasses.fields(GRPOConfig):
        if not f.init or f.name in MANAGED_FIELDS:
            continue
        help_text = f.metadata.get("help", "")
        default = f.default if f.default is not dataclasses.MISSING else None
        if f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        choices = f.metadata.get("choices")
        if f.name in HELP_CHOICE_FIELDS:
            choices = help_choices(help_text, default)
        hint = hints.get(f.name, Any)
        if choices and bool in typing.get_args(hint):
            choices = (*choices, True, False)
        kind = _field_type(hint, tuple(choices) if choices else None)
        if kind is Any or not (isinstance(default, (str, int, float, bool, list, dict)) or default is None):
            default = _jsonable(default)
        bounds = TRAINER_BOUNDS.get(f.name, {})
        fields[f.name] = (kind, Field(default=_jsonable(default), description=help_text[:300] or None, **bounds))
    return create_model("TrainerSection", __base__=Section, __doc__="trl.GRPOConfig fields", **fields)


def generation_fields() -> dict[str, str]:
    """``generation:`` key -> the ``GRPOConfig`` field it sets (types come from the trainer section)."""
    return dict(GENERATION_FIELDS)


GENERATION_FIELDS = {
    "vllm_mode": "vllm_mode",
    "server_host": "vllm_server_host",
    "server_port": "vllm_server_port",
    "server_base_url": "vllm_server_base_url",
    "server_timeout": "vllm_server_timeout",
    "gpu_memory_utilization": "vllm_gpu_memory_utilization",
    "tensor_parallel_size": "vllm_tensor_parallel_size",
    "enable_sleep_mode": "vllm_enable_sleep_mode",
    "max_model_length": "vllm_max_model_length",
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
        "health_timeout": (YamlFloat, Field(5.0, gt=0, description="seconds to wait for a vLLM server")),
    }
    for key, trl_name in GENERATION_FIELDS.items():
        info = trainer[trl_name]
        fields[key] = (info.annotation | None, Field(None, description=info.description))
    return create_model("GenerationSection", __base__=Section, __doc__=generation_model.__doc__, **fields)


def tiny_model() -> type[Section]:
    return _tiny_model()


register_section("model", ModelSection)
register_section("data", DataSection)
register_section(
    "rewards",
    Annotated[list[RewardSpec], Field(min_length=1), BeforeValidator(_bare_names)],
    "a list of {name, weight, args} or reward models {model, weight}, e.g. - {name: accuracy, weight: 1.0}",
)
register_section(
    "tools", Annotated[list[ToolSpec], BeforeValidator(_bare_names)], "a list of tool names, e.g. tools: [calculator]"
)
register_section(
    "environment",
    dict[str, Any],
    "{factory: NAME or module:Class, args: {...}}, or a mapping of names to such entries",
)
register_section("plugins", list[str], "a list of Python files (relative to the recipe) that register rewards")
register_section("trainer", trainer_model, "a mapping of trl.GRPOConfig fields", lazy=True)
register_section(
    "generation", generation_model, "a mapping: backend (transformers or vllm) and vLLM settings", lazy=True
)
register_section("logging", LoggingSection)
register_section("launch", LaunchSection)
REQUIRED_SECTIONS = {
    "model": "a Hugging Face model id, a local path, or builtin:tiny, e.g. model: {name: builtin:tiny}",
    "data": "name a dataset builder, e.g. data: {builder: gsm8k}",
    "rewards": "a list of {name, weight, args}, e.g. - {name: accuracy, weight: 1.0}",
}


def section_type(name: str) -> Any:
    """The pydantic type of section ``name`` (factories, used for TRL-typed sections, are called here)."""
    kind = SECTIONS[name]
    return kind.factory() if isinstance(kind, _Lazy) else kind
