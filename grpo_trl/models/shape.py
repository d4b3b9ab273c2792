"""A transformer's shape from its config.json alone, for the memory plan: parameter and LoRA counts from the model
built on the ``meta`` device, activations and KV cache from its sizes."""

from __future__ import annotations

import functools
import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@functools.lru_cache(maxsize=4)
def _meta_model(config_json: str) -> Any:
    """The model transformers builds from this config, on the ``meta`` device (shapes only)."""
    import torch
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM, AutoModelForImageTextToText

    cfg = json.loads(config_json)
    config = AutoConfig.for_model(**cfg)
    # a vision-language model's vision tower counts too; a config with no causal-LM class (multimodal): its base model
    with torch.device("meta"):
        for auto in [AutoModelForImageTextToText] * ("vision_config" in cfg) + [AutoModelForCausalLM]:
            try:
                return auto.from_config(config)
            except ValueError:
                pass
        return AutoModel.from_config(config)


@dataclass
class Shape:
    """What the plan needs from a transformer's config."""

    vocab: int
    hidden: int
    layers: int
    kv_heads: int
    intermediate: int
    head_dim: int
    dtype: str | None = None
    config: dict = field(default_factory=dict, repr=False, compare=False)  # the config.json it was read from

    @classmethod
    def from_config(cls, cfg: dict) -> Shape:
        full = cfg  # a vision-language model's: the language model's sizes, its whole config for the parameters
        cfg = cfg.get("text_config") or cfg
        hidden, heads = int(cfg["hidden_size"]), int(cfg["num_attention_heads"])
        return cls(
            vocab=int(cfg["vocab_size"]),
            hidden=hidden,
            layers=int(cfg["num_hidden_layers"]),
            kv_heads=int(cfg.get("num_key_value_heads") or heads),
            intermediate=int(cfg.get("intermediate_size") or 4 * hidden),
            head_dim=int(cfg.get("head_dim") or hidden // heads),
            dtype=cfg.get("dtype") or cfg.get("torch_dtype"),
            config=dict(full if "vision_config" in full else cfg),
        )

    def params(self) -> tuple[int, int]:
        """(all parameters, those in linear layers but the LM head): what QLoRA quantizes is the second."""
        from torch import nn

        model = _meta_model(json.dumps(self.config, sort_keys=True, default=str))
        head = model.get_output_embeddings()
        linear = [m for m in model.modules() if isinstance(m, nn.Linear) and m is not head]
        return model.num_parameters(), sum(m.weight.numel() for m in linear)

    def lora_params(self, r: int, targets: Any) -> int:
        """Trainable LoRA parameters: peft's own count, with the adapters it would add to this model (meta device)."""
        from peft import LoraConfig, get_peft_model

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            wrapped = get_peft_model(fresh_meta_model(self.config), LoraConfig(r=r, target_modules=targets))
        return wrapped.get_nb_trainable_parameters()[0]

    def activation_bytes_per_token(self, checkpointing: bool, act_bytes: int = 2) -> float:
        """Activations kept for backward per token, all layers (after Korthikanti et al. 2022, SwiGLU MLP, fused
        attention: no seq x seq scores). With checkpointing, each layer keeps its input; one layer is recomputed."""
        h, i, kv = self.hidden, self.intermediate, self.kv_heads * self.head_dim
        per_layer = act_bytes * (7 * h + 2 * kv + 4 * i) + 4 * 2 * h  # + two RMSNorm inputs upcast to fp32
        if checkpointing:
            return self.layers * act_bytes * h + per_layer
        return self.layers * per_layer


def model_config(name: str, tiny: dict | None = None, base_dir: Path | None = None, **kwargs: Any) -> dict:
    """Model ``name``'s config.json without a download: a built-in's, a local folder's (relative to ``base_dir`` too)
    or the Hugging Face cache's; ``OSError`` saying how to get it otherwise."""
    from grpo_trl.models.builtin import builtin_config

    if str(name).startswith("builtin:"):
        return builtin_config(name, tiny)
    for folder in (Path(name).expanduser(), (base_dir or Path.cwd()) / name):
        if (folder / "config.json").is_file():  # a stranger's folder: bounded, and bad JSON is one error
            from grpo_trl.errors import GrpoTrlError
            from grpo_trl.io import read_json

            try:
                return read_json(folder / "config.json")
            except json.JSONDecodeError as exc:
                raise GrpoTrlError(f"not JSON ({exc})", file=str(folder / "config.json")) from None
    from huggingface_hub import constants
    from transformers import AutoConfig

    try:  # the local Hugging Face cache only: check stays offline and instant
        return AutoConfig.from_pretrained(name, local_files_only=True, **kwargs).to_dict()
    except (OSError, ValueError):
        how = "" if constants.HF_HUB_OFFLINE else f" (`hf download {name} config.json` fetches it, a few KB)"
        raise OSError(f"{name}'s config.json is not in the local Hugging Face cache{how}") from None


def load_shape(name: str, tiny: dict | None = None, base_dir: Path | None = None, **kwargs: Any) -> Shape:
    """The shape of model ``name`` from its config.json only (``model_config``)."""
    return Shape.from_config(model_config(name, tiny, base_dir, **kwargs))


def fresh_meta_model(config: dict) -> Any:
    """A new model on the ``meta`` device from ``config`` (not the cached one: peft may wrap it)."""
    return _meta_model.__wrapped__(json.dumps(config, sort_keys=True, default=str))
