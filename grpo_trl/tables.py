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

# every table of tables.yaml, a module attribute of its name there (REWARDS, RENAMES...); its lists read as tuples
_RAW = yaml.load((Path(__file__).parent / "tables.yaml").read_text(), getattr(yaml, "CSafeLoader", yaml.SafeLoader))
TABLES = {k: tuple(v) if isinstance(v, list) else v for k, v in _RAW.items()}
globals().update(TABLES)


def _vkey(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in str(version).split(".")[:2])


def old_default(field: str, version: str, history: list | tuple | None = None) -> object:
    """The default of ``field`` in TRL ``version`` per the history table (KeyError if the field has none)."""
    hist = history if history is not None else TABLES["DEFAULT_HISTORY"][field]
    value = hist[0][1]
    for since, v in hist:
        if _vkey(since) <= _vkey(version):
            value = v
    return value


def rename_hint(name: str) -> str | None:
    """``did you mean X? (why)`` for a peer's name, or None."""
    hit = TABLES["RENAMES"].get(str(name))
    return f"did you mean {hit[0]!r}? ({hit[1]})" if hit else None


def suggest_renames() -> dict[str, str]:
    """Peer or old name -> grpo-trl name or dotted recipe key, for ``errors.suggest``, read from the tables.

    >>> renames = suggest_renames()
    >>> renames["accuracy_reward"], renames["lora_r"], renames["evaluation_strategy"], renames["torch_dtype"]
    ('accuracy', 'model.lora.r', 'eval_strategy', 'model.dtype')
    """
    out = {peer: ours for peer, (ours, _args, _note) in TABLES["REWARDS"].items() if peer != ours}
    out.update({key: f"model.{ours}" for key, ours in TABLES["MODEL_KEYS"].items() if key != ours})
    out.update({key: f"model.lora.{ours}" for key, ours in TABLES["LORA_KEYS"].items()})
    out.update(TABLES["RENAMED_FIELDS"])  # GRPOConfig field names: suggested among the trainer: keys
    out.update({key: ours for key, (ours, _why) in TABLES["RENAMES"].items()})
    return out


def peer_config_problems(data: dict, file: str) -> list[Problem]:
    """For ``check``/``train``: one problem when ``data`` is a flat TRL/open-r1 config rather than a recipe."""
    markers = [k for k in TABLES["PEER_MARKERS"] if k in data] if isinstance(data, dict) else []
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
