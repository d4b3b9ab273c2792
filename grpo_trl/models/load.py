"""Loading what a ``model:`` section names: the path (a ``builtin:`` model built once, whole or not at all) and its
tokenizer or processor with the recipe's chat template."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

from grpo_trl.errors import Problem, RecipeError
from grpo_trl.models.builtin import builder, folder_name
from grpo_trl.models.chat_templates import resolve_template


def resolve_model(model: dict, output_dir: str | None = None, stage: Path | None = None) -> str:
    """The path to load for the ``model:`` section: a ``builtin:`` model built once into ``output_dir`` (staged under
    ``stage``), else into ``GRPO_TRL_CACHE`` (``~/.cache/grpo-trl``): ``data`` and ``eval`` write no run folder."""
    name = model["name"]
    if not str(name).startswith("builtin:"):
        return name
    tiny = model.get("tiny") or {}
    folder = folder_name(name)  # tiny-model, tiny-tools...: run.names.OWN_NAMES
    if output_dir is None:
        raw = os.environ.get("GRPO_TRL_CACHE")
        cache = Path(raw or Path.home() / ".cache" / "grpo-trl")
        key = hashlib.sha256(json.dumps([name, tiny], sort_keys=True).encode()).hexdigest()[:12]
        try:
            if cache.is_file():
                raise OSError("it is a file")
            return build_once(builder(name), cache / f"{folder}-{key}", cache, **tiny)
        except OSError as exc:  # one error line, not an internal error
            why = f"cannot build {name} in {str(cache)!r} ({exc.strerror or exc})"
            fix = "set GRPO_TRL_CACHE to a writable folder"
            raise RecipeError([Problem("environment", "GRPO_TRL_CACHE" if raw else "HOME", why, fix)]) from None
    return build_once(builder(name), Path(output_dir) / folder, stage or Path(output_dir), **tiny)


def build_once(builder: Any, path: Path, stage: Path, **options: Any) -> str:
    """``builder(path, **options)`` unless built: one at a time (a lock under ``stage``), into a folder renamed into
    place, so a builder killed midway leaves no half-written model."""
    from filelock import FileLock

    if not (path / "config.json").exists():
        stage.mkdir(parents=True, exist_ok=True)
        with FileLock(str(stage / f".{path.name}.lock")):
            if not (path / "config.json").exists():
                tmp = stage / f".{path.name}.build"
                shutil.rmtree(tmp, ignore_errors=True)  # a killed builder's
                builder(tmp, **options)
                shutil.rmtree(path, ignore_errors=True)  # half written by a grpo-trl that built in place
                tmp.rename(path)
    return str(path)


def load_tokenizer(model: dict, model_path: str, file: str = "", base_dir: Path | None = None):
    """The model's tokenizer with ``model.chat_template`` applied (``load_processing_class`` for a text model)."""
    return load_processing_class(model, model_path, file, base_dir, vision=False)


def apply_chat_template(tokenizer: Any, model: dict, base_dir: Path | None = None) -> Any:
    """``model.chat_template`` (``trl:<name>``, a file relative to ``base_dir``, or the text) set on ``tokenizer``."""
    template = model.get("chat_template")
    if template:
        tokenizer.chat_template = resolve_template(template, base_dir or Path.cwd())
    return tokenizer


def is_vision_model(name: str, base_dir: Path | None = None, **kwargs: Any) -> bool | None:
    """Whether model ``name``'s config, read offline, has a ``vision_config``; ``None`` when unknown offline."""
    from grpo_trl.errors import GrpoTrlError
    from grpo_trl.models.shape import model_config

    try:
        return "vision_config" in model_config(name, None, base_dir, **kwargs)
    except (OSError, ValueError, GrpoTrlError):
        return None


def load_processing_class(
    model: dict, model_path: str, file: str = "", base_dir: Path | None = None, vision: bool | None = None
):
    """``GRPOTrainer``'s ``processing_class`` with ``model.chat_template``: the tokenizer, or a vision-language
    model's processor, loaded as TRL does (left padding)."""
    from transformers import AutoConfig, AutoProcessor, AutoTokenizer, ProcessorMixin

    kwargs = {k: model[k] for k in ("revision", "trust_remote_code") if model.get(k) is not None}
    if vision is None:
        try:
            vision = getattr(AutoConfig.from_pretrained(model_path, **kwargs), "vision_config", None) is not None
        except Exception:  # noqa: BLE001 - no readable config: a text model's path (the tokenizer's error says why)
            vision = False
    what = "processor of vision-language model" if vision else "tokenizer of"
    try:
        if vision:
            loaded = AutoProcessor.from_pretrained(model_path, truncation_side="left", padding_side="left", **kwargs)
        else:
            loaded = AutoTokenizer.from_pretrained(model_path, **kwargs)
    except (OSError, ValueError, TypeError, ImportError, AttributeError, KeyError) as exc:  # e.g. no torchvision
        why = f"cannot load the {what} {str(model_path)!r} ({type(exc).__name__}: {str(exc)[:300]})"
        fix = "give a folder with its processor" if vision else "give a model folder or a Hub id"
        raise RecipeError([Problem(file, "model", why, fix)]) from exc
    if vision and not isinstance(loaded, ProcessorMixin):
        why = f"{str(model_path)!r} has a vision config, but AutoProcessor gives a {type(loaded).__name__}"
        raise RecipeError([Problem(file, "model", why, "give a folder with the model's processor files")])
    apply_chat_template(loaded, model, base_dir)
    tokenizer = loaded.tokenizer if vision else loaded
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return loaded
