"""A transformer's shape from its config.json alone (no weights loaded): what the memory plan
(grpo_trl/check/memory.py) counts parameters, LoRA adapters, activations and the KV cache from."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class Shape:
    """What the plan needs from a transformer's config."""

    vocab: int
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int
    head_dim: int
    tied: bool
    qkv_bias: bool = False
    dtype: str | None = None

    @classmethod
    def from_config(cls, cfg: dict) -> Shape:
        cfg = cfg.get("text_config") or cfg
        hidden, heads = int(cfg["hidden_size"]), int(cfg["num_attention_heads"])
        return cls(
            vocab=int(cfg["vocab_size"]),
            hidden=hidden,
            layers=int(cfg["num_hidden_layers"]),
            heads=heads,
            kv_heads=int(cfg.get("num_key_value_heads") or heads),
            intermediate=int(cfg.get("intermediate_size") or 4 * hidden),
            head_dim=int(cfg.get("head_dim") or hidden // heads),
            tied=bool(cfg.get("tie_word_embeddings", False)),
            qkv_bias=cfg.get("model_type") == "qwen2" or bool(cfg.get("attention_bias")),
            dtype=cfg.get("dtype") or cfg.get("torch_dtype"),
        )

    def linear_shapes(self) -> dict[str, tuple[int, int]]:
        """(in, out) of each linear layer of one decoder block, by module name."""
        h, q, kv = self.hidden, self.heads * self.head_dim, self.kv_heads * self.head_dim
        i = self.intermediate
        return {
            "q_proj": (h, q),
            "k_proj": (h, kv),
            "v_proj": (h, kv),
            "o_proj": (q, h),
            "gate_proj": (h, i),
            "up_proj": (h, i),
            "down_proj": (i, h),
        }

    def params(self) -> tuple[int, int]:
        """(all parameters, those in decoder linear layers): what QLoRA quantizes is the second."""
        linear = sum(a * b for a, b in self.linear_shapes().values())
        bias = (self.heads + 2 * self.kv_heads) * self.head_dim if self.qkv_bias else 0
        per_layer = linear + bias + 2 * self.hidden
        embed = self.vocab * self.hidden * (1 if self.tied else 2)
        return embed + self.layers * per_layer + self.hidden, self.layers * linear

    def lora_params(self, r: int, targets: Any) -> int:
        """Trainable LoRA parameters: ``r x (in + out)`` per targeted linear layer."""
        shapes = self.linear_shapes()
        if targets in (None, "all-linear"):
            names = list(shapes)
        else:
            targets = [targets] if isinstance(targets, str) else list(targets)
            names = [n for n in shapes if any(n == t or n.endswith(str(t)) for t in targets)]
        return self.layers * sum(r * (shapes[n][0] + shapes[n][1]) for n in names)

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
    from grpo_trl.recipe import BUILTIN_TINY

    if name == BUILTIN_TINY:
        return tiny_shape(**(tiny or {}))
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
