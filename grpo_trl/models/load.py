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
    """The path to load for the ``model:`` section. A ``builtin:`` model is built once: into a training run's
    output_dir (staged under ``stage``), else (``data``, ``eval``) into ``GRPO_TRL_CACHE`` (``~/.cache/grpo-trl``),
    so those commands write nothing into a run's output_dir."""
    name = model["name"]
    if not str(name).startswith("builtin:"):
        return name
    tiny = model.get("tiny") or {}
    folder = folder_name(name)  # tiny-model, tiny-tools...: run.names.OWN_NAMES
    if output_dir is None:
        raw = os.environ.get("GRPO_TRL_CACHE")
        cache = Path(raw or Path.home() / ".cache" / "grpo-trl")
        if cache.is_file():  # one error line, not an internal error
            raise RecipeError(
                [Problem("environment", "GRPO_TRL_CACHE", f"cannot use {cache} as a folder: it is a file")]
            )
        key = hashlib.sha256(json.dumps([name, tiny], sort_keys=True).encode()).hexdigest()[:12]
        try:
            return build_once(builder(name), cache / f"{folder}-{key}", cache, **tiny)
        except OSError as exc:
            where = ("environment", "GRPO_TRL_CACHE") if raw else ("environment", "HOME")
            why = f"cannot build {name} in {str(cache)!r} ({exc.strerror or exc})"
            raise RecipeError([Problem(*where, why, "set GRPO_TRL_CACHE to a writable folder")]) from None
    return build_once(builder(name), Path(output_dir) / folder, stage or Path(output_dir), **tiny)


def build_once(builder: Any, path: Path, stage: Path, **options: Any) -> str:
    """``builder(path, **options)`` unless ``path`` is already built, written whole or not at all: into a folder of
    this process under ``stage`` (on the same disk), then renamed into place, so a run killed while building leaves
    no half-written model for the next one to load. A concurrent builder's copy wins; a dead builder's is removed."""
    if not (path / "config.json").exists():
        stage.mkdir(parents=True, exist_ok=True)
        for old in stage.glob(f".{path.name}.build-*"):
            if not _alive(old.name.rsplit("-", 1)[-1]):
                shutil.rmtree(old, ignore_errors=True)
        tmp = stage / f".{path.name}.build-{os.getpid()}"
        builder(tmp, **options)
        if path.is_dir() and not (path / "config.json").exists():
            shutil.rmtree(path)  # half written by a grpo-trl that built in place
        try:
            tmp.rename(path)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
            if not (path / "config.json").exists():
                raise
    return str(path)


def _alive(pid: str) -> bool:
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (ValueError, OSError):
        return True  # not ours to judge (another user's process): leave it
    return True


def load_tokenizer(model: dict, model_path: str, file: str = "", base_dir: Path | None = None):
    """The model's tokenizer, with ``model.chat_template`` (``trl:<name>``, a file relative to ``base_dir``, or the
    text) applied when given; the one place a recipe's template is resolved onto a tokenizer."""
    from transformers import AutoTokenizer

    kwargs = {k: model[k] for k in ("revision", "trust_remote_code") if model.get(k) is not None}
    try:
        tokenizer = AutoTokenizer.from_pretrained(model_path, **kwargs)
    except (OSError, ValueError) as exc:  # not a model folder, no such Hub id, offline, no tokenizer files
        why = f"cannot load the tokenizer of {str(model_path)!r} ({type(exc).__name__}: {str(exc)[:300]})"
        raise RecipeError([Problem(file, "model", why, "give a model folder or a Hub id")]) from exc
    apply_chat_template(tokenizer, model, base_dir)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def apply_chat_template(tokenizer: Any, model: dict, base_dir: Path | None = None) -> Any:
    """``model.chat_template`` (``trl:<name>``, a file relative to ``base_dir``, or the text) set on ``tokenizer``."""
    template = model.get("chat_template")
    if template:
        tokenizer.chat_template = resolve_template(template, base_dir or Path.cwd())
    return tokenizer


def is_vision_model(name: str, base_dir: Path | None = None, **kwargs: Any) -> bool | None:
    """Whether model ``name`` is a vision-language model (its config has a ``vision_config``), read without a
    download (``shape.model_config``: built-in, local folder or local cache); ``None`` when unknown offline."""
    from grpo_trl.errors import GrpoTrlError
    from grpo_trl.models.shape import model_config

    try:
        return "vision_config" in model_config(name, None, base_dir, **kwargs)
    except (OSError, ValueError, GrpoTrlError):
        return None


def load_processing_class(model: dict, model_path: str, file: str = "", base_dir: Path | None = None):
    """What ``GRPOTrainer`` takes as ``processing_class``: the tokenizer (``load_tokenizer``) for a text model; for a
    vision-language model (a ``vision_config`` in its config) its processor, loaded as TRL loads it
    (``AutoProcessor``, left padding and truncation), with ``model.chat_template`` applied to the processor."""
    from transformers import AutoConfig, ProcessorMixin

    kwargs = {k: model[k] for k in ("revision", "trust_remote_code") if model.get(k) is not None}
    try:
        vision = getattr(AutoConfig.from_pretrained(model_path, **kwargs), "vision_config", None) is not None
    except Exception:  # noqa: BLE001 - no readable config: a text model's path, as before (load_tokenizer says why)
        vision = False
    if not vision:
        return load_tokenizer(model, model_path, file, base_dir)
    from transformers import AutoProcessor

    try:
        processor = AutoProcessor.from_pretrained(model_path, truncation_side="left", padding_side="left", **kwargs)
    except (OSError, ValueError, TypeError, ImportError, AttributeError, KeyError) as exc:  # e.g. no torchvision
        why = f"cannot load the processor of vision-language model {str(model_path)!r} ({type(exc).__name__}: "
        raise RecipeError(
            [Problem(file, "model", why + f"{str(exc)[:300]})", "give a folder with its processor")]
        ) from exc
    if not isinstance(processor, ProcessorMixin):
        why = f"{str(model_path)!r} has a vision config, but AutoProcessor gives a {type(processor).__name__}"
        raise RecipeError([Problem(file, "model", why, "give a folder with the model's processor files")])
    apply_chat_template(processor, model, base_dir)
    if processor.tokenizer.pad_token is None:
        processor.tokenizer.pad_token = processor.tokenizer.eos_token
    return processor
