"""QLoRA: ``model.quantization`` -> ``transformers.BitsAndBytesConfig`` (TRL loads the policy with it and casts the
adapters); this module maps and checks the section. bitsandbytes' kernels need a CUDA GPU.

    >>> quantization_problems({"load_in_4bit": True}, has_lora=False)[0].key
    'model.lora'
"""

from __future__ import annotations

import importlib.util
import inspect
from typing import Any

from grpo_trl.errors import Problem, suggest

QUANT_TYPES = ("nf4", "fp4")
COMPUTE_DTYPES = ("bfloat16", "float16", "float32")


def _fields() -> list[str]:
    from transformers import BitsAndBytesConfig

    return [p for p in inspect.signature(BitsAndBytesConfig.__init__).parameters if p not in ("self", "kwargs")]


def quantization_problems(section: Any, *, has_lora: bool) -> list[Problem]:
    """Problems of ``model.quantization``, found by building transformers' ``BitsAndBytesConfig`` (no GPU needed),
    plus the choices bitsandbytes refuses only when the model loads."""
    if section is None:
        return []
    key = "model.quantization"
    if not isinstance(section, dict):
        return [
            Problem("", key, "must be a mapping of transformers.BitsAndBytesConfig fields, e.g. {load_in_4bit: true}")
        ]
    fields = _fields()  # BitsAndBytesConfig keeps unknown keywords silently
    problems = [Problem("", f"{key}.{k}", f"not a BitsAndBytesConfig field{suggest(k, fields)}") for k in section]
    problems = [p for p in problems if p.key.rpartition(".")[2] not in fields]
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
    qt = section.get("bnb_4bit_quant_type")
    if qt is not None and qt not in QUANT_TYPES:
        message = f"{qt!r} is not one of nf4, fp4{suggest(str(qt), QUANT_TYPES)}"
        problems.append(Problem("", f"{key}.bnb_4bit_quant_type", message))
    v = section.get("bnb_4bit_compute_dtype")
    if v is not None and v not in COMPUTE_DTYPES:
        problems.append(
            Problem("", f"{key}.bnb_4bit_compute_dtype", f"{v!r} is not a dtype; use {', '.join(COMPUTE_DTYPES)}")
        )
    if not has_lora:
        problems.append(
            Problem(
                "",
                "model.lora",
                "model.quantization needs LoRA adapters (a quantized model's weights cannot be trained): add "
                "model.lora, e.g. {r: 16, lora_alpha: 32, target_modules: all-linear}",
            )
        )
    return problems


def hardware_problems(section: Any) -> list[Problem]:
    """What this machine lacks to load a quantized model: bitsandbytes, a CUDA GPU. Checked before anything loads."""
    if not section:
        return []
    problems = []
    if importlib.util.find_spec("bitsandbytes") is None:
        problems.append(
            Problem("", "model.quantization", "bitsandbytes is not installed: pip install 'grpo-trl[qlora]'")
        )
    import torch

    if not torch.cuda.is_available():
        problems.append(
            Problem(
                "",
                "model.quantization",
                "no CUDA GPU: bitsandbytes 4/8-bit training needs one; run on a GPU machine or remove "
                "model.quantization",
            )
        )
    return problems


def bnb_config(section: dict):
    """The ``transformers.BitsAndBytesConfig`` for a checked ``model.quantization`` section."""
    from transformers import BitsAndBytesConfig

    return BitsAndBytesConfig(**section)
