"""The ``data:`` section as pydantic models (each builder's typed from its keyword-only parameters) and the checks a
schema cannot say; ``check`` and ``build_dataset`` both run them: the same refusals, the same messages."""

from __future__ import annotations

import functools
import inspect
from typing import Any, Literal

from pydantic import ConfigDict, Field, create_model, model_validator
from pydantic_core import PydanticCustomError

from grpo_trl.data.registry import builder_params, get_builder, list_builders
from grpo_trl.errors import DataError, GrpoTrlError, Problem, suggest
from grpo_trl.fields import Hints, Section, YamlFloat, signature_model, validate_value

DATA_REQUIRED = "name a dataset builder, e.g. data: {builder: gsm8k}"
# the system prompts shipped with grpo-trl, chosen by name in data.system_prompt
SYSTEM_PROMPTS: dict[str, str | None] = {
    # DeepSeek-R1 / open-r1: reasoning in <think>, answer in <answer> (the single-GPU GSM8K write-up).
    "r1": (
        "A conversation between User and Assistant. The user asks a question, and the Assistant solves it. "
        "The assistant first thinks about the reasoning process in the mind and then provides the user with the "
        "answer. The reasoning process and answer are enclosed within <think> </think> and <answer> </answer> tags, "
        "respectively, i.e., <think>\nreasoning process here\n</think>\n<answer>\nanswer here\n</answer>"
    ),
    # The from-scratch GSM8K tutorial (Qwen2.5-1.5B-Instruct): <reasoning>/<answer> XML.
    "xml": "Respond in the following format:\n<reasoning>\n...\n</reasoning>\n<answer>\n...\n</answer>",
    # The Countdown write-up's system prompt.
    "countdown": (
        "You are a helpful assistant. You first thinks about the reasoning process in the mind and then provides "
        "the user with the answer."
    ),
    "none": None,
}


def resolve_system_prompt(value: str | None) -> str | None:
    """A shipped prompt by name, or ``value`` itself when it is literal text (it holds a space); a single word that
    is not a shipped name is an error (a typo would otherwise become the prompt)."""
    if value is None or value in SYSTEM_PROMPTS:
        return SYSTEM_PROMPTS.get(value)
    if any(ch.isspace() for ch in value.strip()):
        return value
    hint = suggest(value, SYSTEM_PROMPTS, cutoff=0.5)
    raise DataError(
        f"unknown system prompt {value!r}{hint}; use one of {', '.join(SYSTEM_PROMPTS)} or write the literal text"
    )


class PassRateOptions(Section):
    """``data.pass_rate``: keep the rows whose pass rate lies strictly between ``above`` and ``below``."""

    file: str = Field(min_length=1, description="the file `grpo-trl filter` wrote (relative to the recipe)")
    above: float | None = Field(0.0, description="drop rows with p <= above (null: no bound)")
    below: float | None = Field(1.0, description="drop rows with p >= below (null: no bound)")
    unscored: Literal["keep", "drop"] = Field("keep", description="rows the file does not score")

    @model_validator(mode="after")
    def _band(self) -> PassRateOptions:
        if self.above is not None and self.below is not None and self.above >= self.below:
            why = "above ({above}) must be smaller than below ({below})"
            raise PydanticCustomError("band", why, self.model_dump(include={"above", "below"}))
        return self


class SamplerOptions(Section):
    """``data.sampler``: zero-variance-aware sampling (data/sampler.py)."""

    zero_variance_weight: float = Field(0.1, gt=0, le=1, description="weight of a prompt after a zero-variance group")
    cooldown_epochs: int = Field(2, ge=1, description="epochs that weight lasts")


class DynamicSamplingOptions(Section):
    """``data.dynamic_sampling``: DAPO refill of zero-variance groups (data/refill.py)."""

    max_resample: int = Field(2, ge=1, description="extra generation rounds per batch")


class DataSection(Section):
    """The dataset: a builder and its options (typed from the builder), or a weighted mixture of builders."""

    model_config = ConfigDict(extra="allow")  # builder options: typed by ``builder_options_model``

    builder: str | None = Field(None, description="dataset builder (grpo-trl data builders: gsm8k, countdown...)")
    split: str = "train"
    limit: int | None = Field(None, gt=0, description="keep the first N rows (after shuffle and filters)")
    shuffle: bool = False
    seed: int = Field(42, ge=0, le=2**32 - 1, description="shuffle and mixture seed (numpy's range)")
    system_prompt: str | None = Field(None, description="r1, xml, countdown, none, or the literal text")
    eval_split: str | None = None
    eval_size: int | None = Field(None, gt=0, description="hold out N rows for evaluation")
    max_prompt_tokens: int | None = Field(None, gt=0, description="drop rows whose prompt is longer")
    max_solution_tokens: int | None = Field(None, gt=0, description="drop rows whose solution is longer")
    solution_column: str = "solution"
    bad_rows: Literal["drop", "error"] = Field(
        "drop", description="a row without a value the prompt or a reward needs: drop it (counted) or stop"
    )
    streaming: bool = Field(False, description="read the data as training consumes it (needs trainer.max_steps)")
    pass_rate: PassRateOptions | None = Field(None, description="keep a pass-rate band from `grpo-trl filter`")
    sampler: SamplerOptions | None = Field(None, description="zero-variance-aware sampling (data/sampler.py)")
    dynamic_sampling: DynamicSamplingOptions | None = Field(None, description="DAPO refill of zero-variance groups")
    mixture: list[dict[str, Any]] | None = Field(None, min_length=1, description="[{builder, weight, ...}]")
    weight: YamlFloat | None = Field(None, gt=0, description="share of a mixture part")


MIXTURE_KEYS = ("mixture", "seed", "shuffle", "eval_size", "system_prompt", "sampler", "dynamic_sampling")
# a mixture: its parts, its size and the options above of the whole dataset (a part's own options go in the part)
MixtureOptions = create_model(
    "MixtureOptions",
    __base__=Section,
    size=(int | None, Field(None, gt=0, description="rows of the mixture (default: as many as the shares allow)")),
    **{k: (f.annotation, f) for k, f in DataSection.model_fields.items() if k in MIXTURE_KEYS},
)
# options of the whole dataset that would do nothing inside one mixture part (set beside data.mixture instead)
WHOLE_DATASET_KEYS = ("sampler", "eval_size", "eval_split", "dynamic_sampling")
COMMON_DATA_KEYS = tuple(k for k in DataSection.model_fields if k not in ("mixture", "weight"))


@functools.cache  # a Builder hashes by identity: a plugin's new one is typed anew
def builder_options_model(builder: Any) -> type[Section]:
    """The typed options of one dataset builder (keyword-only parameters of its function)."""
    skip = set(inspect.signature(builder.func).parameters) - set(builder_params(builder))
    return signature_model(f"{builder.func.__name__}_options", builder.func, skip=skip)


def hints() -> Hints:
    """What a ``data:`` message adds (the same as the recipe's, for the keys under ``data``; unknown: a mixture's)."""
    return Hints(
        required={"data": DATA_REQUIRED},
        sections={"data": (inspect.getdoc(DataSection) or "").split("\n")[0]},
        unknown={"data": lambda k, ks: f"not a mixture option{suggest(k, ks)}; mixture options: {', '.join(ks)}"},
    )


def validate_data_config(cfg: Any, file: str = "", prefix: str = "data") -> list[Problem]:
    """Every problem of a raw ``data:`` mapping: coerced by the schema first, then checked by ``data_problems``.

    >>> [str(p) for p in validate_data_config({"builder": "countdown", "limit": 0, "sise": 8})]
    ['data.limit: must be a positive integer, got 0']
    """
    coerced, found = validate_value(DataSection, cfg, file, prefix, hints())
    return found or data_problems(coerced, file, prefix)


def _mixture_problems(cfg: dict, file: str, prefix: str) -> list[Problem]:
    out = validate_value(MixtureOptions, cfg, file, prefix, hints())[1]
    for i, entry in enumerate(cfg["mixture"]):
        where = f"{prefix}.mixture.{i}"
        coerced, found = validate_value(DataSection, entry, file, where, hints())
        if not found and "mixture" in coerced:
            found = [Problem(file, f"{where}.mixture", "mixtures do not nest")]
        out += found or data_problems(coerced, file, where, part=True)
    return out


def data_problems(cfg: dict, file: str, prefix: str, part: bool = False) -> list[Problem]:
    """Problems of a coerced ``data:`` mapping: builder, its options, prompt. ``part``: a mixture's part."""
    if cfg.get("mixture") is not None:
        return _mixture_problems(cfg, file, prefix)
    out = []
    for key in WHOLE_DATASET_KEYS if part else ():
        if key in cfg:
            where = "data.eval_size beside data.mixture (mixtures hold out rows that way)"
            fix = f"data.{key} beside data.mixture" if key in MIXTURE_KEYS else where
            out.append(Problem(file, f"{prefix}.{key}", f"applies to the whole dataset, not one part; set {fix}"))
    if not cfg.get("builder"):
        names = ", ".join(b.name for b in list_builders())
        return [Problem(file, f"{prefix}.builder", f"missing; name a builder ({names}) or give data.mixture")]
    try:
        builder = get_builder(cfg["builder"])
    except GrpoTrlError as exc:  # and the keys no builder takes: a wrong builder hides no other typo
        known = sorted(
            {*COMMON_DATA_KEYS, *(n for b in list_builders() for n in builder_options_model(b).model_fields)}
        )
        why = "not an option of any builder"
        typos = [Problem(file, f"{prefix}.{k}", f"{why}{suggest(k, known)}") for k in cfg if k not in known]
        return exc.located(file, f"{prefix}.builder") + typos
    model, common = builder_options_model(builder), [*COMMON_DATA_KEYS, *(["weight"] if part else [])]

    def unknown(key: str, names: list[str]) -> str:
        known = sorted([*common, *names])
        return f"unknown option for builder {builder.name!r}{suggest(key, known)}; options: {', '.join(known)}"

    need = {f"{prefix}.{k}": f"required by builder {builder.name!r}" for k in model.model_fields}
    options = {k: v for k, v in cfg.items() if k not in common}
    out += validate_value(model, options, file, prefix, Hints(need, unknown={prefix: unknown}))[1]
    try:
        resolve_system_prompt(cfg.get("system_prompt"))
    except GrpoTrlError as exc:
        out += exc.located(file, f"{prefix}.system_prompt")
    return out
