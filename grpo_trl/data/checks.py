"""Checks of a ``data:`` section: the schema's types and bounds, then the builder, its options, the system prompt,
the option mappings and mixture parts. ``check`` runs them on the recipe and ``build_dataset`` on what it builds,
so both refuse the same sections with the same messages."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from grpo_trl.data import options as opts
from grpo_trl.data.prompts import resolve_system_prompt
from grpo_trl.data.registry import get_builder, list_builders
from grpo_trl.errors import GrpoTrlError, Problem, suggest
from grpo_trl.fields import validate_value


def validate_data_config(cfg: Any, file: str = "", prefix: str = "data") -> list[Problem]:
    """Every problem of a raw ``data:`` mapping: coerced by the schema first, then checked by ``data_problems``.

    >>> [str(p) for p in validate_data_config({"builder": "countdown", "limit": 0, "sise": 8})]
    ['data.limit: must be a positive integer, got 0']
    """
    coerced, found = validate_value(opts.DataSection, cfg, file, prefix, opts.hints())
    return found or data_problems(coerced, file, prefix)


def _mixture_problems(cfg: dict, file: str, prefix: str) -> list[Problem]:
    out = [
        Problem(file, f"{prefix}.{key}", f"not a mixture option; mixture options: {', '.join(opts.MIXTURE_KEYS)}")
        for key in cfg
        if key not in opts.MIXTURE_KEYS
    ]
    out += validate_value(opts.MixtureOptions, cfg, file, prefix, opts.hints())[1]
    for i, entry in enumerate(cfg["mixture"]):
        where = f"{prefix}.mixture.{i}"
        coerced, found = validate_value(opts.DataSection, entry, file, where, opts.hints())
        if not found and "mixture" in coerced:
            found = [Problem(file, f"{where}.mixture", "mixtures do not nest")]
        out += found or data_problems(coerced, file, where, part=True)
    return out


def data_problems(cfg: dict, file: str, prefix: str, part: bool = False) -> list[Problem]:
    """Problems of a coerced ``data:`` mapping: builder, its options, prompt. ``part``: a mixture's part."""
    out = [replace(p, file=file, key=prefix + p.key[4:]) for p in opts.option_problems(cfg)]
    if cfg.get("mixture") is not None:
        return out + _mixture_problems(cfg, file, prefix)
    for key in opts.WHOLE_DATASET_KEYS if part else ():
        if key in cfg:
            where = "data.eval_size beside data.mixture (mixtures hold out rows that way)"
            fix = f"data.{key} beside data.mixture" if key in opts.MIXTURE_KEYS else where
            out.append(Problem(file, f"{prefix}.{key}", f"applies to the whole dataset, not one part; set {fix}"))
    if not cfg.get("builder"):
        names = ", ".join(b.name for b in list_builders())
        return [Problem(file, f"{prefix}.builder", f"missing; name a builder ({names}) or give data.mixture")]
    try:
        builder = get_builder(cfg["builder"])
    except GrpoTrlError as exc:  # and the keys no builder takes: a wrong builder hides no other typo
        known = sorted(
            {*opts.COMMON_DATA_KEYS, *(n for b in list_builders() for n in opts.builder_options_model(b).model_fields)}
        )
        why = "not an option of any builder"
        typos = [Problem(file, f"{prefix}.{k}", f"{why}{suggest(k, known)}") for k in cfg if k not in known]
        return exc.located(file, f"{prefix}.builder") + typos
    options_model = opts.builder_options_model(builder)
    params = options_model.model_fields
    allowed = [*opts.COMMON_DATA_KEYS, *params, *(["weight"] if part else [])]
    known = f"options: {', '.join(sorted(allowed))}"
    out += [
        Problem(file, f"{prefix}.{k}", f"unknown option for builder {builder.name!r}{suggest(k, allowed)}; {known}")
        for k in cfg
        if k not in allowed
    ]
    out += [
        Problem(file, f"{prefix}.{key}", f"required by builder {builder.name!r}")
        for key, info in params.items()
        if info.is_required() and key not in cfg
    ]
    if not out:
        options = {k: v for k, v in cfg.items() if k in params}
        out += validate_value(options_model, options, file, prefix, opts.hints())[1]
    try:
        resolve_system_prompt(cfg.get("system_prompt"))
    except GrpoTrlError as exc:
        out += exc.located(file, f"{prefix}.system_prompt")
    return out
