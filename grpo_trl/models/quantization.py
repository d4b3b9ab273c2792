"""QLoRA: ``model.quantization`` -> ``transformers.BitsAndBytesConfig`` (TRL loads the policy with it and casts the
adapters); this module maps and checks the section. bitsandbytes' kernels need a CUDA GPU."""

from __future__ import annotations

import importlib.util
import inspect
from typing import Any

from grpo_trl.errors import Problem, suggest

CHOICES = {"bnb_4bit_quant_type": ("nf4", "fp4"), "bnb_4bit_compute_dtype": ("bfloat16", "float16", "float32")}


def quantization_problems(section: Any, *, has_lora: bool) -> list[Problem]:
    """Problems of a ``model.quantization`` mapping: what ``BitsAndBytesConfig`` refuses (no GPU needed), and what
    bitsandbytes would refuse only when the model loads."""
    from transformers import BitsAndBytesConfig

    if section is None:
        return []
    key = "model.quantization"  # a mapping: the recipe schema says so
    fields = [p for p in inspect.signature(BitsAndBytesConfig.__init__).parameters if p not in ("self", "kwargs")]
    unknown = [k for k in section if k not in fields]  # BitsAndBytesConfig keeps unknown keywords silently
    problems = [Problem("", f"{key}.{k}", f"not a BitsAndBytesConfig field{suggest(k, fields)}") for k in unknown]
    try:
        bnb_config(section)
    except (TypeError, ValueError) as exc:
        message = str(exc).strip()[:300]
        field = message.split(" ", 1)[0].strip("`")
        where = f"{key}.{field}" if field in section and " and " not in message else key
        problems.append(Problem("", where, f"BitsAndBytesConfig refuses it: {message}"))
    except AttributeError:  # getattr(torch, compute dtype): said below with the dtypes to use
        pass
    if not section.get("load_in_4bit") and not section.get("load_in_8bit"):
        problems.append(Problem("", key, "set load_in_4bit: true (QLoRA) or load_in_8bit: true"))
    for field, allowed in CHOICES.items():
        if (value := section.get(field)) is not None and value not in allowed:
            why = f"{value!r} is not one of {', '.join(allowed)}{suggest(str(value), allowed)}"
            problems.append(Problem("", f"{key}.{field}", why))
    if not has_lora:
        why = "model.quantization needs LoRA adapters (a quantized model's weights cannot be trained)"
        fix = "add model.lora, e.g. {r: 16, lora_alpha: 32, target_modules: all-linear}"
        problems.append(Problem("", "model.lora", why, fix))
    return problems


def hardware_problems(section: Any) -> list[Problem]:
    """What this machine lacks to load a quantized model: bitsandbytes, a CUDA GPU. Checked before anything loads."""
    if not section:
        return []
    import torch

    key, problems = "model.quantization", []
    if importlib.util.find_spec("bitsandbytes") is None:
        problems.append(Problem("", key, "bitsandbytes is not installed", "pip install 'grpo-trl[qlora]'"))
    if not torch.cuda.is_available():
        why = "no CUDA GPU: bitsandbytes 4/8-bit training needs one"
        problems.append(Problem("", key, why, "run on a GPU machine or remove model.quantization"))
    return problems


def bnb_config(section: dict):
    """The ``transformers.BitsAndBytesConfig`` for a checked ``model.quantization`` section."""
    from transformers import BitsAndBytesConfig

    return BitsAndBytesConfig(**section)
