"""Expected peak memory per GPU for a recipe, from the model's config alone (no weights loaded): reads the recipe
(model, LoRA, quantization, launch config, batch sizes) for ``memory_plan.py``'s accounting and writes check's lines.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from grpo_trl.check.memory_plan import MemoryPlan, human, plan_memory
from grpo_trl.models.shape import load_shape

SIZE_UNITS = {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30}
SIZE_UNITS |= {"TIB": 2**40, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def _accelerate_file(recipe: Any) -> Path | None:
    """The file ``launch.accelerate_config`` names: a path (relative to the recipe), or a shipped config's name."""
    name = recipe.launch.get("accelerate_config")
    here = Path(__file__).resolve().parents[2] / "recipes" / "accelerate"
    paths = (recipe.base_dir / str(name), Path(str(name)), here / f"{name}.yaml", here / str(name)) if name else ()
    return next((path for path in paths if path.is_file()), None)


def accelerate_config(recipe: Any) -> tuple[dict | None, str | None]:
    """``(config, problem)`` for ``launch.accelerate_config``: the mapping, or why the file it names is not one."""
    import yaml

    from grpo_trl.errors import GrpoTrlError
    from grpo_trl.io import load_yaml, read_bytes

    if (path := _accelerate_file(recipe)) is None:
        return None, None
    try:  # the one bounded reader: the name may be a device, the YAML may expand its aliases without end
        data = load_yaml(read_bytes(path, 1_000_000, "accelerate config").decode("utf-8"), str(path))[0]
    except (OSError, ValueError, yaml.YAMLError) as exc:
        why = exc.problems[0].message if isinstance(exc, GrpoTrlError) else type(exc).__name__
        return None, f"{str(path)!r} is not a readable YAML file ({why})"
    if not isinstance(data, dict):
        return None, f"{str(path)!r} is not an accelerate config (a YAML mapping), got {type(data).__name__}"
    return data, None


def detected_gpu_bytes() -> float | None:
    """Total memory of CUDA device 0, or None without CUDA."""
    try:
        import torch

        return float(torch.cuda.get_device_properties(0).total_memory) if torch.cuda.is_available() else None
    except Exception:  # noqa: BLE001 - a broken CUDA setup: no detection
        return None


def recipe_memory_plan(recipe: Any, config: Any, world_size: int, gpu_bytes: float | None = None) -> MemoryPlan:
    """The plan for ``recipe`` with its ``trl.GRPOConfig`` (batch sizes) and ``world_size`` training processes."""
    model = recipe.model
    quant = model.get("quantization") if isinstance(model.get("quantization"), dict) else {}
    colocate = recipe.uses_vllm and getattr(config, "vllm_mode", "server") == "colocate"
    return plan_memory(
        load_shape(model["name"], model.get("tiny"), revision=model.get("revision")),
        world_size=world_size,
        accelerate_config=accelerate_config(recipe)[0],
        dtype=model.get("dtype"),
        lora=model.get("lora"),
        quant_bits=4 if quant.get("load_in_4bit") else 8 if quant.get("load_in_8bit") else None,
        beta=float(config.beta),
        batch=config.per_device_train_batch_size,
        generation_batch=config.generation_batch_size // max(1, world_size),
        prompt_tokens=recipe.dataset.get("max_prompt_tokens"),
        completion_tokens=int(config.max_completion_length or 256),
        gradient_checkpointing=bool(recipe.trainer.get("gradient_checkpointing", False)),
        vllm_colocate_share=float(config.vllm_gpu_memory_utilization) if colocate else None,
        gpu_bytes=gpu_bytes if gpu_bytes is not None else detected_gpu_bytes(),
    )


def parse_size(text: str) -> float:
    """``80GiB``, ``80GB``, ``24G``, ``16000MiB`` -> bytes (a unit is required).

    >>> parse_size("80GiB") == 80 * 2**30, parse_size("1.5GB")
    (True, 1500000000.0)
    """
    s = str(text).strip().upper().replace(" ", "")
    num = s.rstrip("KMGTIB")
    try:
        value = float(num)
    except ValueError:
        value = math.nan
    if s[len(num) :] not in SIZE_UNITS or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{text!r} is not a memory size (write e.g. 80GiB, 24GB, 16000MiB)")
    return value * SIZE_UNITS[s[len(num) :]]


def check_lines(recipe: Any, config: Any, world_size: int, gpu_memory: float | None = None) -> list[str]:
    """What ``grpo-trl check`` prints: the plan, and a ``warning:`` line when it exceeds the GPU (``gpu_memory``
    bytes, else the detected GPU)."""
    lines = []
    name = recipe.launch.get("accelerate_config")
    if name and _accelerate_file(recipe) is None:
        lines.append(
            f"warning: launch.accelerate_config {name!r} not found (a path relative to the recipe, or a config under "
            "recipes/accelerate/): memory planned without sharding (DDP)"
        )
    try:
        plan = recipe_memory_plan(recipe, config, world_size, gpu_memory)
    except (OSError, ValueError, KeyError) as exc:  # a Hub model not in the local cache while offline, odd config
        from grpo_trl.check.model import first_line

        return [*lines, f"  memory per GPU      unknown: {first_line(exc)[:240]}"]
    lines += plan.lines()
    accel = accelerate_config(recipe)[0] or {}
    if str(accel.get("distributed_type", "")).upper() == "FSDP" and recipe.trainer.get("use_cpu"):
        lines.append(
            "warning: accelerate applies FSDP only on GPUs: with trainer.use_cpu this launch runs unsharded "
            "(MULTI_CPU); rehearse sharding on CPU with recipes/accelerate/zero2_cpu.yaml or zero3_cpu.yaml"
        )
    if plan.gpu_bytes:
        src = "--gpu-memory" if gpu_memory else "detected"
        lines.append(f"    {'GPU memory (' + src + ')':<28s}{human(plan.gpu_bytes):>10s}")
    if plan.exceeds:
        lines.append(
            f"warning: expected peak {human(plan.total)} per GPU exceeds the GPU's {human(plan.gpu_bytes)}: enable "
            "trainer.gradient_checkpointing, lower per_device_train_batch_size or max_completion_length, "
            "use LoRA, or shard (launch.accelerate_config: zero3 / fsdp)"
        )
    return lines
