"""A transformer's shape from its config.json alone (no weights loaded): what the memory plan
(check/memory.py) counts parameters, LoRA adapters, activations and the KV cache from.

Parameter and LoRA counts come from the model transformers builds from the config on the ``meta`` device (no
memory, no weights; about 0.05 s for a 1.5B model): its ``num_parameters()`` and its ``nn.Linear`` modules, matched
against ``target_modules`` by peft's own rule. Activations and the KV cache are estimated from the config's sizes.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@functools.lru_cache(maxsize=4)
def _meta_model(config_json: str) -> Any:
    """The model transformers builds from this config, on the ``meta`` device (shapes only)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = json.loads(config_json)
    config = AutoConfig.for_model(**cfg)
    with torch.device("meta"):
        if "vision_config" in cfg:  # a vision-language model: its vision tower counts too
            from transformers import AutoModelForImageTextToText

            try:
                return AutoModelForImageTextToText.from_config(config)
            except ValueError:
                pass
        try:
            return AutoModelForCausalLM.from_config(config)
        except ValueError:  # a config with no causal-LM class (a multimodal one): its base model
            from transformers import AutoModel

            return AutoModel.from_config(config)


def _linears(model: Any) -> dict[str, Any]:
    """The model's ``nn.Linear`` modules by name, without the output layer (LM head): what LoRA's ``all-linear``
    and QLoRA's quantization take."""
    from torch import nn

    head = model.get_output_embeddings()
    return {n: m for n, m in model.named_modules() if isinstance(m, nn.Linear) and m is not head}


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

    def meta_model(self) -> Any:
        """The model transformers builds from this config, on the ``meta`` device (cached)."""
        return _meta_model(json.dumps(self.config, sort_keys=True, default=str))

    def params(self) -> tuple[int, int]:
        """(all parameters, those in linear layers but the LM head): what QLoRA quantizes is the second."""
        model = self.meta_model()
        return model.num_parameters(), sum(m.weight.numel() for m in _linears(model).values())

    def lora_params(self, r: int, targets: Any) -> int:
        """Trainable LoRA parameters: ``r x (in + out)`` per linear layer peft's LoRA would adapt."""
        from peft import LoraConfig
        from peft.tuners.tuners_utils import check_target_module_exists

        linears = _linears(self.meta_model())
        if targets not in (None, "all-linear"):
            config = LoraConfig(r=r, target_modules=targets)
            linears = {n: m for n, m in linears.items() if check_target_module_exists(config, n)}
        return sum(r * (m.in_features + m.out_features) for m in linears.values())

    def activation_bytes_per_token(self, checkpointing: bool, act_bytes: int = 2) -> float:
        """Activations kept for backward per token, all layers (after Korthikanti et al. 2022, SwiGLU MLP, fused
        attention: no seq x seq scores). With checkpointing, each layer keeps its input; one layer is recomputed."""
        h, i, kv = self.hidden, self.intermediate, self.kv_heads * self.head_dim
        per_layer = act_bytes * (7 * h + 2 * kv + 4 * i) + 4 * 2 * h  # + two RMSNorm inputs upcast to fp32
        if checkpointing:
            return self.layers * act_bytes * h + per_layer
        return self.layers * per_layer


def tiny_shape(**tiny: Any) -> Shape:
    """``builtin:tiny``'s shape from ``build_tiny_model``'s arguments (``model.tiny`` in a recipe)."""
    import inspect

    from grpo_trl.models.tiny import build_tiny_model

    args = {k: p.default for k, p in inspect.signature(build_tiny_model).parameters.items() if k != "output_dir"}
    args.update(tiny)
    h = int(args["hidden_size"])
    return Shape.from_config(
        {
            "model_type": "qwen2",
            "vocab_size": int(args["vocab_size"]),
            "hidden_size": h,
            "intermediate_size": 2 * h,
            "num_hidden_layers": int(args["num_layers"]),
            "num_attention_heads": int(args["num_heads"]),
            "num_key_value_heads": int(args["num_kv_heads"]),
            "tie_word_embeddings": True,
            "dtype": "float32",
        }
    )


def load_shape(name: str, tiny: dict | None = None, **kwargs: Any) -> Shape:
    """The shape of model ``name`` from its config.json only (a local folder, or the Hub / its local cache)."""
    from grpo_trl.models.builtin import BUILTIN_TINY

    if name == BUILTIN_TINY:
        return tiny_shape(**(tiny or {}))
    if name == "builtin:tiny-vlm":
        from grpo_trl.models.tiny_vlm import TOKENS, tiny_vlm_config

        return Shape.from_config(tiny_vlm_config(TOKENS, TOKENS - 1, 2, 0))
    local = Path(name).expanduser() / "config.json"
    if local.is_file():
        return Shape.from_config(json.loads(local.read_text()))
    from transformers import AutoConfig

    try:  # the local Hugging Face cache only: check stays offline and instant
        return Shape.from_config(AutoConfig.from_pretrained(name, local_files_only=True, **kwargs).to_dict())
    except OSError:
        raise OSError(
            f"{name}'s config.json is not in the local Hugging Face cache; fetch it (a few KB) with "
            f"`hf download {name} config.json` and check again"
        ) from None
