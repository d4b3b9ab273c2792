"""``model.init_kwargs``: more ``from_pretrained`` keywords (TRL's ``model_init_kwargs``), known from the installed
transformers; a key another ``model:`` field owns is refused, naming the field."""

from __future__ import annotations

import functools
import inspect
import re
import traceback
from pathlib import Path

from grpo_trl.errors import Problem, RecipeError, one_line, suggest

# keys the model: section sets itself (or, for the policy's path and config, grpo-trl does)
OWNED = {
    "dtype": "model.dtype",
    "torch_dtype": "model.dtype",
    "attn_implementation": "model.attn_implementation",
    "trust_remote_code": "model.trust_remote_code",
    "revision": "model.revision",
    "quantization_config": "model.quantization",
}
NOT_KEYWORDS = ("pretrained_model_name_or_path", "model_args", "kwargs", "config", "state_dict")
_FIELD = re.compile(r"^    ([a-z][a-z0-9_]*)\s*:\s*[^=\n]+=", re.M)  # a config class field with its default
_POPPED = re.compile(r"kwargs\.pop\(\s*[\"']([a-z]\w*)[\"']")


@functools.cache
def known_keys() -> frozenset[str]:
    """Every keyword ``from_pretrained`` takes for some model in the installed transformers."""
    import transformers
    from transformers import PretrainedConfig, PreTrainedModel

    method = PreTrainedModel.from_pretrained
    names = set(inspect.signature(method).parameters) | set(_POPPED.findall(inspect.getsource(method)))
    names |= set(PretrainedConfig().to_dict())
    for path in sorted((Path(transformers.__file__).parent / "models").glob("*/configuration_*.py")):
        names.update(_FIELD.findall(path.read_text(errors="replace")))
    return frozenset(n for n in names if not n.startswith("_") and n not in NOT_KEYWORDS)


def init_kwargs_problems(model: dict, file: str) -> list[Problem]:
    """Unknown keys (with a did-you-mean) and keys another ``model:`` field owns, one ``Problem`` each."""
    extra = model.get("init_kwargs") or {}
    out = []
    for key in extra:
        where = f"model.init_kwargs.{key}"
        if key in OWNED:
            field = OWNED[key]
            set_too = f"; model.{field.split('.')[1]} is set too" if model.get(field.split(".")[1]) is not None else ""
            out.append(Problem(file, where, f"is set by {field}{set_too}", f"set {field} instead, in one place"))
        elif key in NOT_KEYWORDS:
            out.append(Problem(file, where, "is chosen by grpo-trl (model.name)", "remove it"))
        elif key not in known_keys():
            why = f"is not a keyword transformers' from_pretrained takes{suggest(key, sorted(known_keys()))}"
            out.append(Problem(file, where, why))
    return out


def load_failure(exc: BaseException, model: dict, file: str) -> RecipeError | None:
    """``exc`` raised by transformers' ``from_pretrained`` with ``model.init_kwargs`` set, as one problem naming
    those keys; ``None`` for any other failure (running out of memory too)."""
    init = model.get("init_kwargs") or {}
    if not init or isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError":
        return None
    frames = traceback.extract_tb(exc.__traceback__)
    if not any(f.name == "from_pretrained" and "transformers" in Path(f.filename).parts for f in frames):
        return None
    keys = ", ".join(map(str, init))
    why = f"loading the model with {keys} failed ({type(exc).__name__}: {one_line(str(exc))[:200]})"
    return RecipeError(
        [Problem(file, "model.init_kwargs", why, "fix or remove them: from_pretrained gets them as given")]
    )
