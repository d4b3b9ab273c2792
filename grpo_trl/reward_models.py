"""Reward models in a recipe: ``rewards: - {model: <Hub id or local path>, weight: 1.0, tokenizer: optional}``.

TRL loads each one as ``AutoModelForSequenceClassification(num_labels=1)`` and logs it as ``rewards/<last path
part>/mean``. ``check`` reads only the config (no weights): it must be a sequence classifier with one label.
``builtin:tiny-reward`` is a tiny random classifier built offline (``grpo_trl.testing.build_tiny_reward_model``).

Example:
    >>> is_model_entry({"model": "builtin:tiny-reward"}), is_model_entry({"name": "countdown"})
    (True, False)
    >>> model_label({"model": "org/my-rm-7b"})
    'my-rm-7b'
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

BUILTIN_TINY_REWARD = "builtin:tiny-reward"
MODEL_ENTRY_KEYS = ("model", "weight", "tokenizer")


def is_model_entry(spec: Any) -> bool:
    return isinstance(spec, dict) and "model" in spec and "name" not in spec


def model_label(spec: dict) -> str:
    """The name TRL logs the model under (the last part of its path or id)."""
    model = str(spec["model"])
    return "tiny-reward" if model == BUILTIN_TINY_REWARD else model.rstrip("/").split("/")[-1]


def _where(value: str, base_dir: Path) -> str:
    local = base_dir / value
    return str(local) if local.exists() else value


def model_entry_problems(spec: dict, key: str, base_dir: Path) -> list[tuple[str, str]]:
    """``(key, message)`` for a reward-model entry: keys, and its config (read, never the weights)."""
    problems = []
    for k in spec:
        if k not in MODEL_ENTRY_KEYS:
            problems.append((f"{key}.{k}", "unknown key; reward model keys: model, weight, tokenizer"))
    model = spec.get("model")
    if not isinstance(model, str) or not model:
        return [*problems, (f"{key}.model", "must be a Hugging Face model id or a local path")]
    if model == BUILTIN_TINY_REWARD:
        return problems
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(_where(model, base_dir))
    except (OSError, ValueError) as exc:
        first = str(exc).strip().split("\n")[0][:200]
        return [*problems, (f"{key}.model", f"cannot read the config of {model!r}: {first}")]
    archs = list(getattr(config, "architectures", None) or [])
    if not any(a.endswith("ForSequenceClassification") for a in archs):
        problems.append(
            (
                f"{key}.model",
                f"{model!r} is a {', '.join(archs) or type(config).__name__}, not a reward model: a reward model is a "
                "sequence classifier (architectures: *ForSequenceClassification) with one label; for a causal LM as a "
                "judge use a reward function instead",
            )
        )
    elif getattr(config, "num_labels", 1) != 1:
        message = f"{model!r} has {config.num_labels} labels; a reward model outputs one score (num_labels 1)"
        problems.append((f"{key}.model", message))
    return problems


def resolve_model(spec: dict, base_dir: Path, output_dir: str | Path) -> str:
    """The path or id TRL loads: ``builtin:tiny-reward`` is built (once) into ``<output_dir>/tiny-reward``."""
    model = str(spec["model"])
    if model != BUILTIN_TINY_REWARD:
        return _where(model, base_dir)
    from grpo_trl.testing import build_tiny_reward_model

    path = Path(output_dir) / "tiny-reward"
    if not (path / "config.json").exists():
        build_tiny_reward_model(path)
    return str(path)


def processing_class(spec: dict, base_dir: Path):
    """The tokenizer named by ``tokenizer:``, or None (TRL then loads the model's own)."""
    if not spec.get("tokenizer"):
        return None
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(_where(str(spec["tokenizer"]), base_dir))
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok
