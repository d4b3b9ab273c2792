"""Expected peak memory per GPU for a recipe, from the model's config alone (no weights are loaded).

The model states follow the ZeRO paper's accounting (Rajbhandari et al., 2020): with mixed-precision Adam a parameter
costs 2 bytes (16-bit weight) + 2 (16-bit gradient) + 12 (fp32 master weight, momentum, variance) = 16 bytes; ZeRO-1
divides the 12 by the number of GPUs N, ZeRO-2 the 2 + 12, ZeRO-3 (and FSDP full sharding) all 16. Without DeepSpeed
the Trainer keeps weights, gradients and Adam's two states in the model's dtype (2 + 2 + 4 bytes in bf16, 4 + 4 + 8
in fp32). On top: LoRA (only the adapters train, in fp32), QLoRA (4-bit base), TRL's reference model when
``beta > 0`` (none with LoRA: the adapters are switched off instead), activations with or without gradient
checkpointing, the log-prob workspace of TRL's fused LM head (the full batch x sequence x vocabulary logits are
never materialized in TRL 1.16; shown for reference), the KV cache of transformers generation, and vLLM's colocate
share (``vllm_gpu_memory_utilization`` of the GPU).

The activation and workspace terms are estimates (see ``activation_bytes_per_token``); the model states are exact
for the formulas above. Nothing here has yet been compared with a measured GPU peak (``bench/gpu.py`` does that).

Example (the ZeRO paper's worked example: 7.5B parameters, 64 GPUs):
    >>> [round(model_state_bytes(7.5e9, n_gpus=64, stage=s) / 1e9, 1) for s in (0, 1, 2, 3)]
    [120.0, 31.4, 16.6, 1.9]
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

GIB = 2**30
# bytes per parameter: (weights, gradients, optimizer states) for Adam
PRECISION = {"mixed": (2, 2, 12), "bf16": (2, 2, 4), "fp32": (4, 4, 8)}
QUANT_BYTES = {4: 0.5 + 4 / 64, 8: 1.0 + 4 / 4096}  # bitsandbytes: NF4 + fp32 absmax per 64 values; int8 + scales
LOGPROB_TILE = (4096, 32768)  # TRL 1.16 fused LM head: tokens x vocabulary columns per projection tile
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


def model_state_bytes(params: float, *, n_gpus: int = 1, stage: int = 0, precision: str = "mixed") -> float:
    """Weights + gradients + Adam states per GPU for ``params`` trainable parameters, ZeRO ``stage`` 0-3 over
    ``n_gpus`` (stage 3 also stands for FSDP full sharding)."""
    w, g, o = PRECISION[precision]
    n = max(1, n_gpus)
    if stage >= 1:
        o /= n
    if stage >= 2:
        g /= n
    if stage >= 3:
        w /= n
    return params * (w + g + o)


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

    from grpo_trl.testing import build_tiny_model

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

    def lines(self) -> list[str]:
        out = [f"  memory per GPU      {human(self.total)} expected peak (estimate; `grpo_trl.memory`)"]
        out += [f"    {name:<28s}{human(b):>10s}  {note}" for name, b, note in self.items]
        out += [f"    note: {n}" for n in self.notes]
        return out


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
    """The plan for one training process (GPU). ``dtype``: the model's (``model.dtype``; ``auto`` reads the
    config); ``batch``: ``per_device_train_batch_size``; ``generation_batch``: completions generated per process."""
    plan = MemoryPlan(gpu_bytes=gpu_bytes)
    engine, stage = sharding(accelerate_config)
    dtype = shape.dtype if dtype in (None, "auto") else dtype
    half = dtype in ("bfloat16", "float16")
    precision = "mixed" if engine == "zero" and half else ("bf16" if half else "fp32")
    wbytes = 2 if half else 4
    n = max(1, world_size)
    total_params, linear_params = shape.params()
    where = {"ddp": "replicated (DDP)", "zero": f"ZeRO-{stage} over {n}", "fsdp": f"FSDP over {n}"}[engine]
    if lora or quant_bits:
        trainable = shape.lora_params(int((lora or {}).get("r", 8)), (lora or {}).get("target_modules"))
        frozen = (total_params - linear_params) * wbytes
        base = linear_params * QUANT_BYTES[quant_bits] + frozen if quant_bits else total_params * wbytes
        base_div = n if stage >= 3 else 1
        plan.items.append(
            (
                "base weights",
                base / base_div,
                f"{total_params / 1e6:,.0f}M params, "
                + (f"{quant_bits}-bit linear layers (QLoRA)" if quant_bits else str(dtype))
                + f", frozen, {where}",
            )
        )
        states = model_state_bytes(trainable, n_gpus=n, stage=stage, precision="fp32")
        plan.items.append(
            ("LoRA adapters + grads + Adam", states, f"{trainable / 1e6:,.1f}M trainable, fp32, {where}")
        )
        if beta > 0:
            plan.notes.append("reference model: the base with adapters disabled, no extra copy")
    else:
        w, g, o = PRECISION[precision]
        weights = total_params * w / (n if stage >= 3 else 1)
        grads = total_params * g / (n if stage >= 2 else 1)
        optim = total_params * o / (n if stage >= 1 else 1)
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
    acts = batch * seq * shape.activation_bytes_per_token(gradient_checkpointing, act_b)
    plan.items.append(
        (
            "activations",
            acts,
            f"{batch} x {seq} tokens, gradient checkpointing {'on' if gradient_checkpointing else 'off'}",
        )
    )
    tokens = batch * completion_tokens
    tile = min(tokens, LOGPROB_TILE[0]) * min(shape.vocab, LOGPROB_TILE[1]) * act_b  # in the compute dtype
    full = tokens * shape.vocab * wbytes
    plan.items.append(
        (
            "log-prob workspace",
            2 * tile,
            f"TRL's fused LM head: 2 tiles; full logits {batch}x{completion_tokens}x{shape.vocab:,} "
            f"would be {human(full)}",
        )
    )
    if vllm_colocate_share:
        if gpu_bytes:
            plan.items.append(
                (
                    "vLLM colocate",
                    vllm_colocate_share * gpu_bytes,
                    f"vllm_gpu_memory_utilization={vllm_colocate_share}",
                )
            )
        else:
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


def _accelerate_config(recipe: Any) -> dict | None:
    import yaml

    name = recipe.launch.get("accelerate_config")
    if not name:
        return None
    here = Path(__file__).resolve().parents[1] / "recipes" / "accelerate"
    for path in (recipe.base_dir / str(name), Path(str(name)), here / f"{name}.yaml", here / str(name)):
        if path.is_file():
            return yaml.safe_load(path.read_text())
    return None


def detected_gpu_bytes() -> float | None:
    """Total memory of CUDA device 0, or None without CUDA."""
    try:
        import torch

        if torch.cuda.is_available():
            return float(torch.cuda.get_device_properties(0).total_memory)
    except Exception:  # noqa: BLE001 - a broken CUDA setup: no detection
        return None
    return None


def recipe_memory_plan(recipe: Any, config: Any, world_size: int, gpu_bytes: float | None = None) -> MemoryPlan:
    """The plan for ``recipe`` with its ``trl.GRPOConfig`` (batch sizes) and ``world_size`` training processes."""
    model = recipe.model
    quant = model.get("quantization") if isinstance(model.get("quantization"), dict) else {}
    bits = 4 if quant.get("load_in_4bit") else 8 if quant.get("load_in_8bit") else None
    shape = load_shape(model["name"], model.get("tiny"), revision=model.get("revision"))
    trainer = recipe.trainer
    gen_per_process = config.generation_batch_size // max(1, world_size)
    colocate = recipe.uses_vllm and getattr(config, "vllm_mode", "server") == "colocate"
    return plan_memory(
        shape,
        world_size=world_size,
        accelerate_config=_accelerate_config(recipe),
        dtype=model.get("dtype"),
        lora=model.get("lora"),
        quant_bits=bits,
        beta=float(config.beta),
        batch=config.per_device_train_batch_size,
        generation_batch=gen_per_process,
        prompt_tokens=recipe.dataset.get("max_prompt_tokens"),
        completion_tokens=int(config.max_completion_length or 256),
        gradient_checkpointing=bool(trainer.get("gradient_checkpointing", False)),
        vllm_colocate_share=float(config.vllm_gpu_memory_utilization) if colocate else None,
        gpu_bytes=gpu_bytes if gpu_bytes is not None else detected_gpu_bytes(),
    )


def parse_size(text: str) -> float:
    """``80GiB``, ``80GB``, ``24G``, ``16000MiB`` -> bytes (a unit is required).

    >>> parse_size("80GiB") == 80 * 2**30, parse_size("1.5GB")
    (True, 1500000000.0)
    """
    units = {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "KIB": 2**10, "MIB": 2**20}
    units |= {"GIB": 2**30, "TIB": 2**40, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
    s = str(text).strip().upper().replace(" ", "")
    num = s.rstrip("KMGTIB")
    unit = s[len(num) :]
    try:
        value = float(num)
    except ValueError:
        raise ValueError(f"{text!r} is not a memory size (write e.g. 80GiB, 24GB, 16000MiB)") from None
    if unit not in units or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{text!r} is not a memory size (write e.g. 80GiB, 24GB, 16000MiB)")
    return value * units[unit]


def check_lines(recipe: Any, config: Any, world_size: int, gpu_memory: float | None = None) -> list[str]:
    """What ``grpo-trl check`` prints: the plan, and a ``warning:`` line when it exceeds the GPU (``gpu_memory``
    bytes, else the detected GPU)."""
    gpu = gpu_memory
    try:
        plan = recipe_memory_plan(recipe, config, world_size, gpu)
    except (OSError, ValueError, KeyError) as exc:  # a Hub model not in the local cache while offline, odd config
        first = str(exc).strip().splitlines()[0][:240] if str(exc).strip() else type(exc).__name__
        return [f"  memory per GPU      unknown: {first}"]
    lines = plan.lines()
    accel = _accelerate_config(recipe) or {}
    if str(accel.get("distributed_type", "")).upper() == "FSDP" and recipe.trainer.get("use_cpu"):
        lines.append(
            "warning: accelerate applies FSDP only on GPUs: with trainer.use_cpu this launch runs unsharded "
            "(MULTI_CPU); rehearse sharding on CPU with recipes/accelerate/zero2_cpu.yaml or zero3_cpu.yaml"
        )
    if plan.gpu_bytes:
        src = "--gpu-memory" if gpu else "detected"
        lines.append(f"    {'GPU memory (' + src + ')':<28s}{human(plan.gpu_bytes):>10s}")
    if plan.exceeds:
        lines.append(
            f"warning: expected peak {human(plan.total)} per GPU exceeds the GPU's {human(plan.gpu_bytes)}: enable "
            "trainer.gradient_checkpointing, lower per_device_train_batch_size or max_completion_length, "
            "use LoRA, or shard (launch.accelerate_config: zero3 / fsdp)"
        )
    return lines
