"""Recipe -> ``trl.GRPOConfig`` (and ``peft.LoraConfig``): the user's trainer fields, plus what the other sections
set (generation backend and vLLM settings, ``model_init_kwargs`` from ``model:``, ``reward_weights`` from rewards)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from grpo_trl.recipe.trl_schema import GENERATION_FIELDS

if TYPE_CHECKING:
    from grpo_trl.recipe.core import Recipe


def model_init_kwargs(recipe: Recipe) -> dict:
    """``GRPOConfig.model_init_kwargs`` from the model section."""
    model = recipe.model
    kwargs: dict[str, Any] = {}
    if model.get("dtype"):
        kwargs["dtype"] = model["dtype"]
    for key in ("attn_implementation", "trust_remote_code", "revision"):
        if model.get(key) is not None:
            kwargs[key] = model[key]
    return kwargs


def grpo_kwargs(recipe: Recipe) -> dict:
    """Keyword arguments for ``trl.GRPOConfig``: trainer fields, generation mapping, model kwargs, weights."""
    kwargs = dict(recipe.trainer)
    gen = recipe.generation
    if gen.get("backend") == "vllm":
        kwargs["use_vllm"] = True
    elif gen.get("backend") == "transformers":
        kwargs["use_vllm"] = False
    for key, trl_name in GENERATION_FIELDS.items():
        if gen.get(key) is not None:
            kwargs[trl_name] = gen[key]
    init = model_init_kwargs(recipe)
    if init:
        kwargs["model_init_kwargs"] = init
    kwargs["reward_weights"] = [float(s.get("weight", 1.0)) for s in recipe.rewards] or None  # none: env-owned
    kwargs.setdefault("output_dir", "outputs/" + (recipe.path.stem if recipe.path else "run"))
    return kwargs


def to_grpo_config(
    recipe: Recipe, *, world_size: int | None = None, planning: bool = False, device_fallback: bool = True
) -> Any:
    """A real ``trl.GRPOConfig`` (see ``Recipe.to_grpo_config``)."""
    import torch
    from trl import GRPOConfig

    kwargs = grpo_kwargs(recipe)
    no_gpu = not torch.cuda.is_available()
    if planning and no_gpu:
        kwargs.update(use_cpu=True, bf16=False, fp16=False)
    elif device_fallback and no_gpu and "use_cpu" not in kwargs:
        kwargs["use_cpu"] = True
        kwargs.setdefault("bf16", False)
    cls = GRPOConfig
    if world_size is not None:
        cls = type("PlannedGRPOConfig", (GRPOConfig,), {"world_size": property(lambda self: world_size)})
    return cls(**kwargs)


def lora_config(recipe: Recipe) -> Any:
    """``peft.LoraConfig`` from ``model.lora`` (task CAUSAL_LM), or None."""
    lora = recipe.model.get("lora")
    if not lora:
        return None
    from peft import LoraConfig

    return LoraConfig(**{"task_type": "CAUSAL_LM", **lora})
