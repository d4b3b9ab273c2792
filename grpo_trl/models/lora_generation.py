"""LoRA generation with the adapters folded into the weights (unmerged, they halve ``generate``'s speed on an H200):
merged copies swapped in and the base swapped back after, bit for bit (peft's ``unmerge_adapter`` drifts in bf16)."""

from __future__ import annotations

import functools
from contextlib import contextmanager
from typing import Any


@contextmanager
def merged_weights(model: Any):
    """Inside: ``model`` computes with base + adapters folded into plain weights; after: the original base tensors.
    Quantized bases (QLoRA) are left as they are: a 4-bit weight cannot be merged exactly."""
    from peft.tuners.lora import LoraLayer

    bases = [(m, m.get_base_layer()) for m in model.modules() if isinstance(m, LoraLayer)]
    layers = [m for m, base in bases if hasattr(base, "weight") and base.weight.dtype.is_floating_point]
    originals = []
    with model.disable_adapter():
        try:
            for layer in layers:
                base = layer.get_base_layer()
                delta = sum(layer.get_delta_weight(name) for name in layer.active_adapters if name in layer.lora_A)
                originals.append((base, base.weight.data))
                base.weight.data = base.weight.data + delta.to(base.weight.dtype)
            yield model
        finally:
            for base, data in originals:
                base.weight.data = data


def merge_for_generation(model: Any) -> Any:
    """Make ``model.generate`` (a peft model's) run with the adapters merged; returns ``model``."""
    generate = model.generate

    @functools.wraps(generate)
    def merged_generate(*args: Any, **kwargs: Any) -> Any:
        with merged_weights(model):
            return generate(*args, **kwargs)

    model.generate = merged_generate
    return model
