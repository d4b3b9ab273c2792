"""What ``grpo-trl import`` and ``check`` know of TRL's and open-r1's names, as data (``tables.yaml``): rewards, their
settings, renamed/removed fields, old TRL defaults. The renames are also ``errors.suggest``'s did-you-mean data.

    >>> old_default("beta", "0.18"), old_default("beta", "0.19"), rename_hint("format")
    (0.04, 0.0, "did you mean 'think_format'? (open-r1's 'format')")
"""

from __future__ import annotations

from pathlib import Path

import yaml

from grpo_trl import errors
from grpo_trl.errors import Problem

_DATA = yaml.load(
    (Path(__file__).parent / "tables.yaml").read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)
)
_DATA = {k: tuple(v) if isinstance(v, list) else v for k, v in _DATA.items()}
REWARDS: dict[str, list] = _DATA["REWARDS"]  # peer reward -> [grpo-trl reward, args, note]
NO_EQUIVALENT: dict[str, str] = _DATA["NO_EQUIVALENT"]
REWARD_SETTINGS: dict[str, list] = _DATA["REWARD_SETTINGS"]
SETTINGS_NOT_CARRIED: dict[str, str] = _DATA["SETTINGS_NOT_CARRIED"]
CARRIED_BY_DEFAULT: dict[str, list] = _DATA["CARRIED_BY_DEFAULT"]
LEFT_OUT: dict[str, str] = _DATA["LEFT_OUT"]
TRL_FIXED_ARGS: dict[str, dict] = _DATA["TRL_FIXED_ARGS"]
OPEN_R1_DEFAULT_REWARDS: tuple[str, ...] = _DATA["OPEN_R1_DEFAULT_REWARDS"]
CODE_PROVIDER_KEYS: tuple[str, ...] = _DATA["CODE_PROVIDER_KEYS"]
LENGTH_UNITS: dict[str, str] = _DATA["LENGTH_UNITS"]
MODEL_KEYS: dict[str, str] = _DATA["MODEL_KEYS"]
LORA_KEYS: dict[str, str] = _DATA["LORA_KEYS"]
QUANT_KEYS: tuple[str, ...] = _DATA["QUANT_KEYS"]
ACCELERATE_PRESETS: dict[str, str] = _DATA["ACCELERATE_PRESETS"]
RENAMED_FIELDS: dict[str, str] = _DATA["RENAMED_FIELDS"]
NOT_MAPPED: dict[str, str] = _DATA["NOT_MAPPED"]
DEFAULT_HISTORY: dict[str, list] = _DATA["DEFAULT_HISTORY"]
DEFAULT_NOTES: dict[str, str] = _DATA["DEFAULT_NOTES"]
MAX_PROMPT_LENGTH_HISTORY: tuple = _DATA["MAX_PROMPT_LENGTH_HISTORY"]
BASELINE_OPEN_R1: str = _DATA["BASELINE_OPEN_R1"]
BASELINE_TRL: str = _DATA["BASELINE_TRL"]
RENAMES: dict[str, list] = _DATA["RENAMES"]  # peer name -> [where it lives in a recipe, why]
PEER_MARKERS: tuple[str, ...] = _DATA["PEER_MARKERS"]
REMOVED_FIELDS: dict[str, str] = _DATA["REMOVED_FIELDS"]  # old GRPOConfig field -> the fix


def _vkey(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in str(version).split(".")[:2])


def old_default(field: str, version: str, history: list | tuple | None = None) -> object:
    """The default of ``field`` in TRL ``version`` per the history table (KeyError if the field has none)."""
    hist = history if history is not None else DEFAULT_HISTORY[field]
    value = hist[0][1]
    for since, v in hist:
        if _vkey(since) <= _vkey(version):
            value = v
    return value


def rename_hint(name: str) -> str | None:
    """``did you mean X? (why)`` for a peer's name, or None."""
    hit = RENAMES.get(str(name))
    return f"did you mean {hit[0]!r}? ({hit[1]})" if hit else None


def suggest_renames() -> dict[str, str]:
    """Peer or old name -> grpo-trl name or dotted recipe key, for ``errors.suggest``, read from the tables.

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


def peer_config_problems(data: dict, file: str) -> list[Problem]:
    """For ``check``/``train``: one problem when ``data`` is a flat TRL/open-r1 config rather than a recipe."""
    markers = [k for k in PEER_MARKERS if k in data] if isinstance(data, dict) else []
    if not markers or {"model", "rewards"} & set(data):
        return []
    why = f"this looks like a TRL/open-r1 config: run `grpo-trl import {file} -o recipe.yaml` and use the recipe it"
    return [Problem(file, markers[0], why + " writes")]


def top_level_hint(key: str) -> str | None:
    """Why an unknown top-level recipe key is there: a GRPOConfig field (belongs under trainer:) or a peer's name."""
    import dataclasses

    from trl import GRPOConfig

    if hint := rename_hint(key):
        return hint
    if key in {f.name for f in dataclasses.fields(GRPOConfig)}:
        return f"a trl.GRPOConfig field: it belongs under trainer: (trainer: {{{key}: ...}})"
    return None


errors.RENAMES.update(suggest_renames())  # what errors.suggest knows of TRL's and open-r1's names
