"""Coerce a raw recipe into typed sections, once (pydantic's errors become ``Problem`` s); only what the user wrote is
kept, so ``GRPOConfig`` gets exactly the user's fields and TRL keeps its own defaults."""

from __future__ import annotations

from grpo_trl.errors import Problem, suggest, suggest_fix
from grpo_trl.fields import Hints, validate_value
from grpo_trl.recipe import schema
from grpo_trl.recipe.trl_schema import BOUND_REASONS, MANAGED_FIELDS
from grpo_trl.tables import REMOVED_FIELDS, peer_config_problems, top_level_hint


def coerce(data: dict, file: str) -> tuple[dict, list[Problem]]:
    """``(coerced mapping, every problem)``; a section with problems keeps its raw value (later checks skip it)."""
    peer = peer_config_problems(data, file)  # a flat TRL/open-r1 config: one line pointing at `grpo-trl import`
    if peer:
        return dict(data), peer
    out: dict = {}
    problems: list[Problem] = []
    for name, value in data.items():
        if name not in schema.SECTIONS:
            fix = top_level_hint(str(name)) or suggest_fix(name, schema.SECTIONS)
            why = "unknown section" + (f" ({fix})" if fix else "") + f"; sections: {', '.join(schema.SECTIONS)}"
            problems.append(Problem(file, str(name), why))
        elif value is not None or name in schema.REQUIRED_SECTIONS:  # an empty `logging:` is the defaults
            coerced, found = validate_value(schema.section_type(name), value, file, name, hints())
            problems += found
            out[name] = value if found else coerced
    for name, hint in schema.REQUIRED_SECTIONS.items():
        if data.get(name) is None and not any(p.key == name for p in problems):
            problems.append(Problem(file, name, f"missing: {hint}"))
    model = out.get("model")
    if isinstance(model, dict) and not any(p.key.startswith("model") for p in problems):
        for key, kind in (("tiny", schema.tiny_model), ("lora", schema.lora_model)):  # typed from their library
            if model.get(key) is not None:
                typed, found = validate_value(kind(), model[key], file, f"model.{key}", hints())
                problems += found
                model = model if found else {**model, key: typed}
        out["model"] = model
    return out, problems


def _unknown_trainer_key(last: str, choices: list[str]) -> str:
    if fix := MANAGED_FIELDS.get(last) or REMOVED_FIELDS.get(last):
        return fix
    return f"not a trl.GRPOConfig field{suggest(last, choices)} (checked against the installed TRL)"


def _unknown_lora_key(last: str, choices: list[str]) -> str:
    return f"not a peft.LoraConfig field{suggest(last, choices)}; e.g. r, lora_alpha, lora_dropout, target_modules"


def hints() -> Hints:
    """What the recipe's messages add: required sections, what each holds, TRL's field notes and bounds."""
    return Hints(
        required=schema.REQUIRED_SECTIONS,
        sections=schema.SECTION_HINTS,
        unknown={"trainer": _unknown_trainer_key, "model.lora": _unknown_lora_key},
        bounds=BOUND_REASONS,
    )
