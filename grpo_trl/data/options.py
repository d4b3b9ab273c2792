"""The ``data:`` section's options, owned by the data capability: the common options every builder shares, a
mixture's, and each builder's own (typed from its function's keyword-only parameters). ``recipe/schema.py``
registers ``DataSection`` as the recipe's ``data:``; ``data/checks.py`` checks a section against these.

Example:
    >>> DataSection.model_validate({"builder": "gsm8k", "limit": 8}).limit
    8
    >>> "mixture" in MIXTURE_KEYS and "weight" not in COMMON_DATA_KEYS
    True
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Literal

from pydantic import ConfigDict, Field

from grpo_trl.fields import Hints, Section, YamlFloat, signature_model

DATA_REQUIRED = "name a dataset builder, e.g. data: {builder: gsm8k}"


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
    pass_rate: dict[str, Any] | None = Field(None, description="keep a pass-rate band from `grpo-trl filter`")
    sampler: dict[str, Any] | None = Field(None, description="zero-variance-aware sampling (data/sampler.py)")
    dynamic_sampling: dict[str, Any] | None = Field(None, description="DAPO refill of zero-variance groups")
    mixture: list[dict[str, Any]] | None = Field(None, min_length=1, description="[{builder, weight, ...}]")
    weight: YamlFloat | None = Field(None, gt=0, description="share of a mixture part")


class MixtureOptions(Section):
    """The option of a mixture that is not a common data option (a part's ``size`` is its builder's)."""

    model_config = ConfigDict(extra="ignore")
    size: int | None = Field(None, gt=0, description="rows of the mixture (default: as many as the shares allow)")


MIXTURE_KEYS = ("mixture", "size", "seed", "shuffle", "eval_size", "system_prompt", "sampler", "dynamic_sampling")
# options of the whole dataset that would do nothing inside one mixture part (set beside data.mixture instead)
WHOLE_DATASET_KEYS = ("sampler", "eval_size", "eval_split", "dynamic_sampling")
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


def hints() -> Hints:
    """What a ``data:`` message adds (the same as the recipe's, for the keys under ``data``)."""
    return Hints(
        required={"data": DATA_REQUIRED}, sections={"data": (inspect.getdoc(DataSection) or "").split("\n")[0]}
    )
