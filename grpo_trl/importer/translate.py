"""Translate a parsed peer config key by key: every key ends in exactly one place, a recipe value (with a comment
naming its source), a default written out because TRL's changed since, or ``unmapped`` with the reason.

    >>> translate({"model_name_or_path": "m", "dataset_name": "d", "reward_funcs": ["accuracy"]}).recipe["model"]
    {'name': 'm', 'dtype': 'float32'}
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from grpo_trl import tables as T
from grpo_trl.errors import Problem, RecipeError
from grpo_trl.importer.data_keys import DataKeys
from grpo_trl.importer.model_keys import ModelKeys
from grpo_trl.importer.reward_keys import RewardKeys
from grpo_trl.importer.state import Imported
from grpo_trl.importer.trainer_keys import TrainerKeys

__all__ = ["Imported", "detect_flavour", "translate"]

OPEN_R1_ONLY = frozenset(
    {"dataset_prompt_column", "dataset_mixture", "system_prompt", "chat_template", *T.REWARD_SETTINGS}
    | set(T.CODE_PROVIDER_KEYS)
    | {"benchmarks", "callbacks", "hub_model_revision", "wandb_entity", "wandb_project", "num_completions_to_print"}
)


def detect_flavour(data: dict) -> str:
    """``open-r1`` when the config uses open-r1's own keys or reward names, else ``trl``."""
    from trl import GRPOConfig

    from grpo_trl.importer.state import installed_fields

    trl_fields = installed_fields(GRPOConfig)  # num_completions_to_print: a TRL field too, in some versions
    if any(k in OPEN_R1_ONLY and k not in trl_fields for k in data):
        return "open-r1"
    funcs = data.get("reward_funcs")
    funcs = [funcs] if isinstance(funcs, str) else funcs if isinstance(funcs, list) else []
    peers = [f for f in funcs if isinstance(f, str) and f in T.REWARDS]
    if peers and all(not f.endswith("_reward") and not f.startswith("get_") for f in peers):
        return "open-r1"
    return "trl"


class _Translator(ModelKeys, DataKeys, RewardKeys, TrainerKeys):
    """Every section's translation over one ``Translation`` state."""


def translate(
    data: Any,
    *,
    file: str = "<config>",
    flavour: str | None = None,
    trl_version: str | None = None,
    out_dir: Path | None = None,
) -> Imported:
    """Translate a parsed peer config. Raises ``RecipeError`` listing every problem that stops a recipe."""
    if not isinstance(data, dict) or not data:
        raise RecipeError([Problem(file, "-", "a TRL/open-r1 config is a YAML mapping of settings")])
    bad = [k for k in data if not isinstance(k, str)]
    if bad:
        raise RecipeError([Problem(file, repr(k), "setting names must be strings") for k in bad])
    if flavour not in (None, "trl", "open-r1"):
        raise RecipeError([Problem(file, "--from", f"{flavour!r}: use trl or open-r1")])
    flavour = flavour or detect_flavour(data)
    baseline = trl_version or (T.BASELINE_OPEN_R1 if flavour == "open-r1" else T.BASELINE_TRL)
    try:
        T._vkey(baseline)
    except ValueError:
        raise RecipeError([Problem(file, "--trl-version", f"{baseline!r} is not a version like 0.18")]) from None
    t = _Translator(data, file, flavour, baseline, out_dir)
    t.model()
    t.dataset()
    t.rewards()
    t.old_defaults()
    t.rest()
    for key in t.silent_keys():  # every key is carried or named: none dropped without a word
        default, note = T.CARRIED_BY_DEFAULT.get(key, (t.model_defaults.get(key, t.grpo.get(key, t)), "the default"))
        if t.data[key] == default:
            t.out.changed_defaults.append(f"{key}: {t.data[key]!r} - nothing to write ({note})")
            continue
        t.unmapped(key, T.LEFT_OUT.get(key, "read, but no rule of grpo-trl import carries it (please report it)"))
    if t.problems:
        raise RecipeError(t.problems)
    recipe = t.out.recipe
    order = ("model", "data", "rewards", "generation", "trainer", "launch")
    t.out.recipe = {k: recipe[k] for k in order if k in recipe}
    return t.out
