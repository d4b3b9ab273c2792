"""Reward models in a recipe: ``rewards: - {model: <Hub id or path>, weight, tokenizer}``, a one-label classifier
TRL loads; ``check`` reads only its config, offline; ``eval`` scores with :class:`RewardModel` as TRL does.

    >>> model_label({"model": "org/my-rm-7b"})
    'my-rm-7b'
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from grpo_trl.errors import Problem

BUILTIN_TINY_REWARD = "builtin:tiny-reward"
MODEL_ENTRY_KEYS = ("model", "weight", "tokenizer")
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+|[A-Za-z0-9][\w.-]*")  # org/name or name, not a path


def is_model_entry(spec: Any) -> bool:
    return isinstance(spec, dict) and "model" in spec and "name" not in spec


def model_label(spec: dict) -> str:
    """The name TRL logs the model under (the last part of its path or id)."""
    model = str(spec["model"])
    return "tiny-reward" if model == BUILTIN_TINY_REWARD else model.rstrip("/").split("/")[-1]


def _where(value: str, base_dir: Path) -> str:
    local = base_dir / value
    return str(local) if local.exists() else value


def model_entry_problems(spec: dict, key: str, base_dir: Path) -> list[Problem]:
    """Problems of a reward-model entry: its keys, and its config (read offline, never the weights)."""
    why = "unknown key; reward model keys: model, weight, tokenizer"
    problems = [Problem("", f"{key}.{k}", why) for k in spec if k not in MODEL_ENTRY_KEYS]
    model = spec.get("model")
    if not isinstance(model, str) or not model:
        return [*problems, Problem("", f"{key}.model", "must be a Hugging Face model id or a local path")]
    if model == BUILTIN_TINY_REWARD:
        return problems
    from transformers import AutoConfig

    where = _where(model, base_dir)
    try:  # a local folder or the local Hugging Face cache: check stays offline and instant
        config = AutoConfig.from_pretrained(where, local_files_only=True)
    except (OSError, ValueError) as exc:
        if not Path(where).exists() and _HUB_ID.fullmatch(model):
            return problems  # a Hub model not downloaded yet: TRL fetches it when training starts
        first = str(exc).strip().split("\n")[0][:200]
        return [*problems, Problem("", f"{key}.model", f"cannot read the config of {model!r}: {first}")]
    archs = list(getattr(config, "architectures", None) or [])
    if not any(a.endswith("ForSequenceClassification") for a in archs):
        why = f"{model!r} is a {', '.join(archs) or type(config).__name__}, not a reward model: a reward model is a "
        why += "sequence classifier (architectures: *ForSequenceClassification) with one label"
        problems.append(Problem("", f"{key}.model", why, "for a causal LM as a judge use a reward function instead"))
    elif getattr(config, "num_labels", 1) != 1:
        why = f"{model!r} has {config.num_labels} labels; a reward model outputs one score (num_labels 1)"
        problems.append(Problem("", f"{key}.model", why))
    return problems


def resolve_model(spec: dict, base_dir: Path, output_dir: str | Path) -> str:
    """The path or id TRL loads; ``builtin:tiny-reward`` is built once into ``<output_dir>/tiny-reward``."""
    from grpo_trl.models.load import resolve_model as resolve

    model = str(spec["model"])
    if model != BUILTIN_TINY_REWARD:
        return _where(model, base_dir)
    return resolve({"name": model}, str(output_dir), Path(output_dir) / ".grpo-trl")


def processing_class(spec: dict, base_dir: Path):
    """The tokenizer named by ``tokenizer:``, or None (TRL then loads the model's own)."""
    from grpo_trl.models.load import load_tokenizer

    return load_tokenizer({}, _where(str(spec["tokenizer"]), base_dir)) if spec.get("tokenizer") else None


class RewardModel:
    """A reward model as a reward callable for ``eval``, loaded and scoring as TRL's ``_calculate_rewards``: the
    policy's init kwargs, TRL's ``apply_chat_template``, right padding, no special tokens, ``logits[:, 0]``."""

    def __init__(
        self,
        spec: dict,
        path: str,
        base_dir: Path,
        *,
        batch_size: int = 32,
        chat_template_kwargs: dict | None = None,
        model_init_kwargs: dict | None = None,
    ):
        """The model of a recipe ``rewards:`` entry ``spec``, ``path`` being what ``resolve_model`` gave for it."""
        import torch
        from transformers import AutoModelForSequenceClassification

        from grpo_trl.models.load import load_tokenizer

        init = dict(model_init_kwargs or {})  # TRL loads a reward model with the policy's (dtype, revision...)
        self.__name__ = model_label(spec)
        self.model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=1, **init)
        own = {k: init.get(k) for k in ("revision", "trust_remote_code")}
        self.tokenizer = processing_class(spec, base_dir) or load_tokenizer(own, path)
        self.model.config.get_text_config().pad_token_id = self.tokenizer.pad_token_id
        self.model.to("cuda" if torch.cuda.is_available() else "cpu").eval()
        self.batch_size = batch_size
        self.chat_template_kwargs = dict(chat_template_kwargs or {})

    def __call__(self, *, prompts: list, completions: list, **_: Any) -> list[float]:
        import torch
        from trl.data_utils import apply_chat_template, is_conversational

        pairs = zip(prompts, completions, strict=True)
        if prompts and is_conversational({"prompt": prompts[0]}):
            kwargs = self.chat_template_kwargs
            texts = [apply_chat_template({"messages": p + c}, self.tokenizer, **kwargs)["text"] for p, c in pairs]
        else:
            texts = [p + c for p, c in pairs]
        out = []
        for start in range(0, len(texts), self.batch_size):
            inputs = self.tokenizer(
                text=texts[start : start + self.batch_size],
                return_tensors="pt",
                padding=True,
                padding_side="right",
                add_special_tokens=False,
            ).to(self.model.device)
            with torch.inference_mode():
                out += self.model(**inputs).logits[:, 0].float().tolist()
        return out

    def __repr__(self) -> str:
        return f"RewardModel({self.__name__!r})"
