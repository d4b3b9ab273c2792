"""``model:``, checked by building what train builds minus the weights: the built-in registry, the model on the meta
device, peft's ``LoraConfig`` wrapped around it (targets matched by peft) and ``BitsAndBytesConfig``."""

from __future__ import annotations

import logging
import re
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

from grpo_trl.errors import GrpoTrlError, Problem, located
from grpo_trl.models.builtin import BUILTIN_TINY
from grpo_trl.recipe.core import Recipe

logger = logging.getLogger("grpo_trl.check")


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__


def model_problems(recipe: Recipe) -> list[Problem]:
    """Every problem of ``model:``, found by constructing it (config, meta model, LoRA, quantization config)."""
    model, file, out = recipe.model, recipe.file, []
    name = str(model.get("name", ""))
    fix = "a Hugging Face id (org/name), a local model folder, or builtin:tiny"
    if not name.strip():
        return [Problem(file, "model.name", "is empty", fix)]
    if name.startswith(("/", "./", "../", "~")) and not Path(name).expanduser().exists():
        return [Problem(file, "model.name", f"{name!r} is a path that does not exist", fix)]  # never a Hub id
    from grpo_trl.check.plan import hub_model

    if hub_model(name, recipe.base_dir):
        from huggingface_hub.utils import HFValidationError, validate_repo_id

        try:  # what from_pretrained asks of a name that is not a folder
            validate_repo_id(name)
        except HFValidationError as exc:
            return [Problem(file, "model.name", f"{name!r} is neither a folder nor a Hub id: {first_line(exc)}", fix)]
    template = model.get("chat_template")
    if template is not None and "{" not in template:  # a file, or trl:<name> (a template TRL ships)
        from grpo_trl.models.chat_templates import resolve_template

        try:
            resolve_template(template, recipe.base_dir)
        except (OSError, ValueError) as exc:
            fix = "give trl:<name>, a path to a .jinja file (relative to the recipe) or the template text"
            out.append(Problem(file, "model.chat_template", first_line(exc), fix))
    if model.get("init_kwargs"):  # from_pretrained keywords: known to transformers, not owned by another field
        from grpo_trl.models.init_kwargs import init_kwargs_problems

        out += init_kwargs_problems(model, file)
    if model.get("tiny") and name != BUILTIN_TINY:
        out.append(Problem(file, "model.tiny", f"only used with name: {BUILTIN_TINY}", "remove it"))
    from grpo_trl.models.quantization import quantization_problems

    meta, found = meta_model(recipe)
    quant = located(quantization_problems(model.get("quantization"), has_lora=model.get("lora") is not None), file)
    return out + found + lora_problems(recipe, meta) + quant + merged_generation_problems(recipe)


def meta_model(recipe: Recipe, name: str | None = None, where: tuple[str, str] | None = None) -> tuple[Any, list]:
    """``(model on the meta device or None when its config is not here offline, problems)``; ``name``: another model
    than the recipe's (eval's ``--model``, a run's output_dir), its problems at ``where`` (file, key)."""
    from grpo_trl.models.shape import fresh_meta_model, model_config

    model, own = recipe.model, name is None
    name, tiny, kwargs = (
        (model["name"], model.get("tiny"), {"revision": model.get("revision")}) if own else (name, None, {})
    )
    file, key = where or (recipe.file, "model.name")
    try:
        config = model_config(name, tiny, recipe.base_dir, **kwargs)
    except GrpoTrlError as exc:  # a misspelt builtin: name, a config.json too large or not JSON
        fix = "give a model folder whose config.json transformers wrote"
        return None, [replace(p, fix=p.fix or fix) for p in exc.located(file, key)]
    except OSError as exc:  # a Hub id not cached here: built at train (check says so in its machine warnings)
        logger.info("model %s: %s", name, exc)
        return None, []
    if own and (attn := model.get("attn_implementation")):  # transformers checks it (and its package) on build
        config = {**config, "attn_implementation": attn}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fresh_meta_model(config), []
    except Exception as exc:  # noqa: BLE001 - whatever transformers raises building it, train would raise too
        if own and attn and (isinstance(exc, ImportError) or re.search("attn|attention", str(exc), re.I)):
            fix = (
                "install its package (flash_attention_2: pip install flash-attn, on a CUDA GPU), or use sdpa or eager"
            )
            return None, [Problem(recipe.file, "model.attn_implementation", first_line(exc), fix)]
        why = f"transformers cannot build this model from its config: {first_line(exc)}"
        fix = "fix the model's sizes" if own else "give a model folder transformers saved, or a Hub id"
        return None, [Problem(file, "model.tiny" if tiny else key, why, fix)]


def lora_problems(recipe: Recipe, meta: Any) -> list[Problem]:
    """``get_peft_model`` of the recipe's ``LoraConfig`` around the meta model, as TRL wraps the policy (without the
    config here, around one stand-in layer: the values are tried, the targets at train)."""
    import dataclasses

    file = recipe.file
    try:
        config = recipe.lora_config()
    except Exception as exc:  # noqa: BLE001 - whatever peft raises making it (loftq without scipy...), train would too
        return [Problem(file, "model.lora", f"peft.LoraConfig refuses it: {first_line(exc)}")]
    if config is None:
        return []
    from peft import get_peft_model
    from torch import nn

    if meta is None:  # a stand-in: one linear layer
        meta = nn.ModuleDict({"probe": nn.Linear(4, 4, device="meta")})
        config = dataclasses.replace(config, target_modules=["probe"], task_type=None)
        config.layers_to_transform = config.layers_pattern = config.exclude_modules = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            get_peft_model(meta, config)
    except (ValueError, TypeError, KeyError) as exc:
        message = first_line(exc)
        if "target" in message.lower():
            linear = {n.rpartition(".")[2] for n, m in meta.named_modules() if isinstance(m, nn.Linear)}
            names = ", ".join(["all-linear", *sorted(linear)])
            fix = f"name modules {recipe.model['name']} has: {names}"
            return [Problem(file, "model.lora.target_modules", f"peft cannot place LoRA: {message}", fix)]
        named = re.findall(r"`(\w+)`", message) + ["lora_dropout" for _ in re.findall(r"\bdropout\b", message)]
        key = next((f"model.lora.{n}" for n in named if hasattr(config, n)), "model.lora")
        return [Problem(file, key, f"peft cannot wrap the model with it: {message}")]
    except Exception as exc:  # noqa: BLE001 - an init that needs real weights (pissa, eva...): tried at train
        logger.info("model.lora: not tried on the meta device (%s)", first_line(exc))
    return []


def merged_generation_problems(recipe: Recipe) -> list[Problem]:
    """``model.lora_merged_generation`` needs LoRA adapters in 16/32-bit weights generated by transformers."""
    model = recipe.model
    if not model.get("lora_merged_generation"):
        return []
    why = (
        "there are no LoRA adapters (model.lora)"
        if model.get("lora") is None
        else "a quantized base cannot be merged exactly (model.quantization)"
        if model.get("quantization")
        else "vLLM generates (trainer.use_vllm), and TRL merges the adapters for it itself"
        if recipe.trainer.get("use_vllm")
        else None
    )
    fix = "remove model.lora_merged_generation"
    return [] if why is None else [Problem(recipe.file, "model.lora_merged_generation", f"has no effect: {why}", fix)]
