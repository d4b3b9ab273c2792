"""Expected peak memory per GPU for a recipe from its model's config alone (no weights): model states as the ZeRO paper
counts them, LoRA/QLoRA, the reference model, and what a GRPO step holds at once (docs/scaling.md, "Memory plan")."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grpo_trl.check.model import first_line
from grpo_trl.errors import GrpoTrlError
from grpo_trl.io import load_yaml, read_bytes
from grpo_trl.models.shape import Shape, load_shape

GIB = 2**30
# bytes per parameter: (weights, gradients, optimizer states) for Adam
PRECISION = {"mixed": (2, 2, 12), "bf16": (2, 2, 4), "fp32": (4, 4, 8)}
QUANT_BYTES = {4: 0.5 + 4 / 64, 8: 1.0 + 4 / 4096}  # bitsandbytes: NF4 + fp32 absmax per 64 values; int8 + scales
LOGPROB_TILE = (4096, 32768)  # TRL 1.16 fused LM head (trl/kernels/chunked_logprob.py): tokens x vocab columns
DEFAULT_PROMPT_TOKENS = 512  # when data.max_prompt_tokens does not bound prompts
CUDA_OVERHEAD = 0.75 * GIB  # CUDA context, cuBLAS workspaces, allocator slack


def human(n: float) -> str:
    """Bytes in binary units.
    >>> human(3 * 2**30), human(1536 * 2**10), human(12)
    ('3.00 GiB', '1.5 MiB', '12 B')
    """
    for unit, size in (("GiB", GIB), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}" if unit == "GiB" else f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"


def parse_size(text: str) -> float:
    """``80GiB``, ``80GB``, ``24G``, ``16000MiB`` -> bytes (a unit is required)."""
    found = re.fullmatch(r"(\d+\.?\d*|\.\d+)\s*(?:([KMGT])(IB|B)?|B)", str(text).strip().upper())
    if not found or not 0 < float(found[1]) < math.inf:
        raise ValueError(f"{text!r} is not a memory size (write e.g. 80GiB, 24GB, 16000MiB)")
    return float(found[1]) * (1000 if found[3] == "B" else 1024) ** " KMGT".index(found[2] or " ")


def model_states(params: float, *, n_gpus: int = 1, stage: int = 0, precision: str = "mixed") -> list[float]:
    """Weights, gradients, Adam states per GPU: ZeRO ``stage`` 0-3 (3 also FSDP full sharding) over ``n_gpus``."""
    n = max(1, n_gpus)
    return [params * b / (n if stage >= s else 1) for b, s in zip(PRECISION[precision], (3, 2, 1))]


@dataclass
class MemoryPlan:
    """Expected peak bytes per GPU, item by item (``items``: (name, bytes, note))."""

    items: list[tuple[str, float, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    gpu_bytes: float | None = None

    @property
    def total(self) -> float:
        return sum(b for _, b, _ in self.items)

    @property
    def exceeds(self) -> bool:
        return self.gpu_bytes is not None and self.total > self.gpu_bytes


def sharding(accelerate_config: dict | None) -> tuple[str, int]:
    """``("ddp" | "zero" | "fsdp", stage)`` from an accelerate config (stage 3 for FSDP full sharding)."""
    cfg = accelerate_config or {}
    kind = str(cfg.get("distributed_type", "NO")).upper()
    if kind == "DEEPSPEED":
        return "zero", int((cfg.get("deepspeed_config") or {}).get("zero_stage", 0))
    if kind == "FSDP":
        fsdp = cfg.get("fsdp_config") or {}
        strategy = str(fsdp.get("fsdp_sharding_strategy", "FULL_SHARD")).upper()
        reshard = fsdp.get("fsdp_reshard_after_forward", True)
        full = "FULL" in strategy or reshard in (True, "FULL_SHARD", "true")
        return "fsdp", 3 if full else 2
    return "ddp", 0


def plan_memory(
    shape: Shape,
    *,
    world_size: int = 1,
    accelerate_config: dict | None = None,
    dtype: str | None = None,
    lora: dict | None = None,
    quant_bits: int | None = None,
    beta: float = 0.0,
    batch: int = 8,
    generation_batch: int | None = None,
    prompt_tokens: int | None = None,
    completion_tokens: int = 256,
    gradient_checkpointing: bool = False,
    vllm_colocate_share: float | None = None,
    gpu_bytes: float | None = None,
) -> MemoryPlan:
    """The plan for one training process (GPU); ``generation_batch``: completions generated per process."""
    plan = MemoryPlan(gpu_bytes=gpu_bytes)
    engine, stage = sharding(accelerate_config)
    dtype = shape.dtype if dtype in (None, "auto") else dtype
    half = dtype in ("bfloat16", "float16")
    precision = "mixed" if engine == "zero" and half else ("bf16" if half else "fp32")
    wbytes = 2 if half else 4
    n = max(1, world_size)
    total_params, linear_params = shape.params()
    where = {"ddp": "replicated (DDP)", "zero": f"ZeRO-{stage} over {n}", "fsdp": f"FSDP over {n}"}[engine]
    if lora is not None or quant_bits:  # lora: {} is peft's defaults
        trainable = shape.lora_params(int((lora or {}).get("r", 8)), (lora or {}).get("target_modules"))
        frozen = (total_params - linear_params) * wbytes
        base = linear_params * QUANT_BYTES[quant_bits] + frozen if quant_bits else total_params * wbytes
        held = f"{quant_bits}-bit linear layers (QLoRA)" if quant_bits else str(dtype)
        note = f"{total_params / 1e6:,.0f}M params, {held}, frozen, {where}"
        plan.items.append(("base weights", base / (n if stage >= 3 else 1), note))
        # peft keeps adapters in fp32; TRL casts them to bf16 under quantization, and keeps the base dtype under ZeRO-3
        kept = "bf16" if half and (quant_bits or (engine == "zero" and stage >= 3)) else "fp32"
        states = sum(model_states(trainable, n_gpus=n, stage=stage, precision=kept))
        note = f"{trainable / 1e6:,.1f}M trainable, {kept}, {where}"
        plan.items.append(("LoRA adapters + grads + Adam", states, note))
        if beta > 0:
            plan.notes.append("reference model: the base with adapters disabled, no extra copy")
    else:
        w, g, o = PRECISION[precision]
        weights, grads, optim = model_states(total_params, n_gpus=n, stage=stage, precision=precision)
        plan.items.append(("weights", weights, f"{total_params / 1e6:,.2f}M params x {w} B ({precision}), {where}"))
        plan.items.append(("gradients", grads, f"x {g} B"))
        plan.items.append(("optimizer (Adam)", optim, f"x {o} B" + (" (fp32 master + 2 states)" if o == 12 else "")))
        if beta > 0:
            ref = total_params * wbytes / (n if stage >= 3 else 1)
            plan.items.append(("reference model", ref, f"beta={beta:g} > 0: a frozen copy in {dtype}"))
    prompt = prompt_tokens or DEFAULT_PROMPT_TOKENS
    if not prompt_tokens:
        plan.notes.append(f"prompts assumed {DEFAULT_PROMPT_TOKENS} tokens (set data.max_prompt_tokens to bound them)")
    seq = prompt + completion_tokens
    act_b = 2 if (half or precision == "mixed") else 4
    tokens = batch * seq
    every_layer = shape.activation_bytes_per_token(False, act_b)
    layer = every_layer / shape.layers  # one layer's activations: what checkpointing recomputes at a time
    stored = shape.activation_bytes_per_token(True, act_b) - layer if gradient_checkpointing else every_layer
    what = "each layer's input (gradient checkpointing)" if gradient_checkpointing else "every layer's activations"
    plan.items.append(("activations", tokens * stored, f"{batch} x {seq} tokens, {what}"))
    # TRL's fused LM head: one projection tile at a time (forward's buffer is freed before backward's), plus the
    # fp32 gradient of the hidden states in backward. With checkpointing the recomputed layer is only live after
    # the head's backward, so the larger of the two counts; without it the head runs on top of every activation.
    scored = batch * completion_tokens
    head = min(scored, LOGPROB_TILE[0]) * min(shape.vocab, LOGPROB_TILE[1]) * act_b + scored * shape.hidden * 4
    work = max(head, tokens * layer) if gradient_checkpointing else head
    full = scored * shape.vocab * wbytes
    note = "max(recomputed layer, LM-head tile)" if gradient_checkpointing else "TRL's fused LM head: one tile"
    note += f"; full logits {batch}x{completion_tokens}x{shape.vocab:,} = {human(full)}"
    plan.items.append(("backward workspace", work, note))
    if vllm_colocate_share and gpu_bytes:
        plan.items.append(
            ("vLLM colocate", vllm_colocate_share * gpu_bytes, f"vllm_gpu_memory_utilization={vllm_colocate_share}")
        )
    elif vllm_colocate_share:
        plan.notes.append(
            f"vLLM colocate takes vllm_gpu_memory_utilization={vllm_colocate_share} of the GPU on top "
            "(pass --gpu-memory to count it)"
        )
    else:
        gen = generation_batch or batch
        kv = gen * seq * shape.layers * 2 * shape.kv_heads * shape.head_dim * act_b
        plan.items.append(("generation KV cache", kv, f"{gen} completions x {seq} tokens (transformers generate)"))
    plan.items.append(("CUDA context, workspaces", CUDA_OVERHEAD, "fixed estimate"))
    return plan


def _accelerate_file(recipe: Any) -> Path | None:
    """The file ``launch.accelerate_config`` names: a path (relative to the recipe), or a shipped config's name."""
    name = recipe.launch.get("accelerate_config")
    here = Path(__file__).resolve().parents[2] / "recipes" / "accelerate"
    paths = (recipe.base_dir / str(name), Path(str(name)), here / f"{name}.yaml", here / str(name)) if name else ()
    return next((path for path in paths if path.is_file()), None)


def accelerate_config(recipe: Any) -> tuple[dict | None, str | None]:
    """``(config, problem)`` for ``launch.accelerate_config``: the mapping, or why the file it names is not one."""
    import yaml

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


def check_lines(recipe: Any, config: Any, world_size: int, gpu_memory: float | None = None) -> list[str]:
    """What ``grpo-trl check`` prints: the plan for ``config`` (a ``trl.GRPOConfig``), and a ``warning:`` line when
    it exceeds the GPU (``gpu_memory`` bytes, else the detected GPU)."""
    import torch

    lines, model, accel = [], recipe.model, accelerate_config(recipe)[0] or {}
    if (name := recipe.launch.get("accelerate_config")) and _accelerate_file(recipe) is None:
        lines.append(
            f"warning: launch.accelerate_config {name!r} not found (a path relative to the recipe, or a config under "
            "recipes/accelerate/): memory planned without sharding (DDP)"
        )
    quant = model.get("quantization") if isinstance(model.get("quantization"), dict) else {}
    colocate = recipe.uses_vllm and getattr(config, "vllm_mode", "server") == "colocate"
    gpu = gpu_memory or (
        float(torch.cuda.get_device_properties(0).total_memory) if torch.cuda.is_available() else None
    )
    try:
        plan = plan_memory(
            load_shape(model["name"], model.get("tiny"), revision=model.get("revision")),
            world_size=world_size,
            accelerate_config=accel,
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
            gpu_bytes=gpu,
        )
    except (OSError, ValueError, KeyError) as exc:  # a Hub model not in the local cache while offline, odd config
        return [*lines, f"  memory per GPU      unknown: {first_line(exc)[:240]}"]
    lines.append(f"  memory per GPU      {human(plan.total)} expected peak (estimate; `grpo_trl.check.memory`)")
    lines += [f"    {name:<28s}{human(b):>10s}  {note}" for name, b, note in plan.items]
    lines += [f"    note: {n}" for n in plan.notes]
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
