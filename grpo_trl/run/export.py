"""``grpo-trl export OUTPUT_DIR [--to DIR]``: a LoRA run's adapter merged into its base (peft's
``merge_and_unload``) with the run's tokenizer, written whole into a new or empty folder (default
``<OUTPUT_DIR>-merged``). The base comes from the run's ``recipe.yaml`` or the adapter config."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import yaml

from grpo_trl.errors import GrpoTrlError, Problem, RecipeError, one_line
from grpo_trl.io import read_json, read_yaml
from grpo_trl.models.builtin import folder_name

WHERE = "grpo-trl export"
ADAPTER = "adapter_config.json"
PEFT_ERRORS = (OSError, ValueError, TypeError, KeyError, AttributeError, RuntimeError)  # what peft raises on bad input


def _error(key: str, message: str, fix: str = "") -> RecipeError:
    return RecipeError([Problem(WHERE, key, message, fix)])


def is_adapter(path: str | Path) -> bool:
    """A folder holding a peft adapter (a LoRA run's output_dir or one of its checkpoints)."""
    return (Path(path) / ADAPTER).is_file()


def _run_model(folder: Path) -> dict | None:
    """The ``model:`` section of the run's ``recipe.yaml`` (beside the adapter, or above a checkpoint)."""
    for place in (folder, folder.parent):
        try:
            data = read_yaml(place / "recipe.yaml")
        except (OSError, ValueError, yaml.YAMLError):
            continue
        if isinstance(data, dict) and isinstance(data.get("model"), dict):
            return data["model"] | {"_run": str(place)}
    return None


def adapter_config(adapter: str | Path):
    """The folder's ``adapter_config.json`` read by the bounded reader and built by peft as ``PeftModel`` builds it
    (``check_kwargs``, ``from_peft_type``): whatever either refuses is one error naming the file."""
    from peft.mapping import PEFT_TYPE_TO_CONFIG_MAPPING

    path, fix = Path(adapter) / ADAPTER, "give a run whose save finished (its output_dir or a checkpoint)"
    try:
        data = read_json(path, pipe=False)
        kind = data.get("peft_type") if isinstance(data, dict) else f"a JSON {type(data).__name__}"
        if kind not in PEFT_TYPE_TO_CONFIG_MAPPING:
            raise GrpoTrlError(f"has no peft_type peft knows (got {kind!r})")
        data.pop("runtime_config", None)  # as peft's from_json_file
        cls = PEFT_TYPE_TO_CONFIG_MAPPING[kind]
        return cls.from_peft_type(**cls.check_kwargs(**data))
    except GrpoTrlError as exc:  # too large, not a regular file, no peft_type
        raise RecipeError([Problem(str(path), "OUTPUT_DIR", p.message, p.fix or fix) for p in exc.problems]) from None
    except PEFT_ERRORS as exc:
        why = f"peft cannot read it ({type(exc).__name__}: {one_line(str(exc))[:200]})"
        raise RecipeError([Problem(str(path), "OUTPUT_DIR", why, fix)]) from None


def adapter_base(adapter: str | Path, config=None) -> tuple[str, dict]:
    """The base model an adapter folder was trained on, and the ``from_pretrained`` keywords to load it with."""
    folder = Path(adapter)
    model = _run_model(folder) or {}
    name = str(model.get("name") or "")
    kwargs = {k: model[k] for k in ("revision", "trust_remote_code") if model.get(k) is not None}
    kwargs["dtype"] = model.get("dtype") or "auto"
    if name.startswith("builtin:"):
        built = Path(model["_run"]) / folder_name(name)
        if not (built / "config.json").is_file():
            raise _error("OUTPUT_DIR", f"the base model {name} is not in {built}", "train the run again to rebuild it")
        return str(built), kwargs
    recorded = None if name else (config or adapter_config(folder)).base_model_name_or_path
    if not (name or recorded):
        raise _error("OUTPUT_DIR", f"{str(folder)!r}: cannot tell the base model (no recipe.yaml, none in {ADAPTER})")
    return name or str(recorded), kwargs


def load_adapter_model(adapter: str | Path):
    """The base model with the adapter applied (``peft.PeftModel``), in eval mode."""
    from peft import PeftModel
    from safetensors import SafetensorError
    from transformers import AutoModelForCausalLM

    if not any((Path(adapter) / f"adapter_model.{ext}").is_file() for ext in ("safetensors", "bin")):
        why = f"{str(adapter)!r} has {ADAPTER} but no adapter weights (adapter_model.safetensors)"
        raise _error("OUTPUT_DIR", why, "give a run whose save finished (its output_dir or a checkpoint)")
    config = adapter_config(adapter)
    base, kwargs = adapter_base(adapter, config)
    try:
        model = AutoModelForCausalLM.from_pretrained(base, **kwargs)
    except (OSError, ValueError) as exc:
        why = f"cannot load the base model {base!r} ({type(exc).__name__}: {str(exc)[:200]})"
        raise _error("OUTPUT_DIR", why, "make it reachable (a local folder, or the Hub)") from exc
    try:
        return PeftModel.from_pretrained(model, str(adapter), config=config).eval()
    except (*PEFT_ERRORS, SafetensorError) as exc:  # a half-written adapter, or a config value peft cannot use
        why = f"cannot load the adapter in {str(adapter)!r} ({type(exc).__name__}: {one_line(str(exc))[:200]})"
        raise _error("OUTPUT_DIR", why, "give a run whose save finished (its output_dir or a checkpoint)") from exc


def _target(folder: Path, to: str | Path | None) -> Path:
    """``--to``, checked; by default beside the run: ``<OUTPUT_DIR>-merged`` (``<OUTPUT_DIR>-checkpoint-N-merged``)."""
    from grpo_trl.run.names import STATE

    root = folder.parent if not (folder / STATE).is_dir() and (folder.parent / STATE).is_dir() else folder
    name = f"{root.name}-merged" if root == folder else f"{root.name}-{folder.name}-merged"
    target = Path(to) if to else root.with_name(name)
    resolved, run = target.resolve(), root.resolve()
    if resolved == run or run in resolved.parents:
        raise _error("--to", f"{str(target)!r} is inside the run's output_dir", "choose a folder outside it")
    if target.is_symlink() or (target.exists() and not target.is_dir()):
        raise _error("--to", f"{str(target)!r} exists and is not a folder", "choose a new or empty folder")
    nearest = next(p for p in (target, *target.parents) if p.exists() or p.is_symlink())
    if not nearest.is_dir() or not os.access(nearest, os.W_OK):  # checked before the model loads
        what = "is not a folder" if not nearest.is_dir() else "cannot be written"
        raise _error("--to", f"cannot write {str(target)!r}: {str(nearest)!r} {what}", "choose another folder")
    if target.is_dir() and any(target.iterdir()):
        raise _error("--to", f"{str(target)!r} is not empty: export never writes among other files",
                     "choose a new or empty folder")  # fmt: skip
    return target


def export_merged(output_dir: str | Path, to: str | Path | None = None) -> Path:
    """Merge the LoRA adapter in ``output_dir`` into its base and save it (with the tokenizer) to ``to``."""
    from transformers import AutoTokenizer

    folder = Path(output_dir)
    if not folder.is_dir():
        raise _error("OUTPUT_DIR", f"{str(folder)!r} is not a folder", "give a training run's output_dir")
    if not is_adapter(folder):
        raise _error(
            "OUTPUT_DIR",
            f"{str(folder)!r} is not a LoRA run (no {ADAPTER})",
            "a full fine-tune's output_dir is already a model folder: serve or load it as it is",
        )
    target = _target(folder, to)
    merged = load_adapter_model(folder).merge_and_unload()
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(folder))  # the run's, with the chat template it trained with
    except (OSError, ValueError) as exc:
        why = f"{str(folder)!r} has no usable tokenizer ({type(exc).__name__}: {one_line(str(exc))[:200]})"
        raise _error("OUTPUT_DIR", why, "give the run's output_dir or a checkpoint: both hold its tokenizer") from exc
    stage = target.with_name(f".{target.name}.export-{os.getpid()}")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        merged.save_pretrained(str(stage))
        tokenizer.save_pretrained(str(stage))
        if target.is_dir():
            target.rmdir()  # empty (checked): replaced by the whole export
        stage.rename(target)
    except OSError as exc:
        raise _error("--to", f"cannot write {str(target)!r} ({exc.strerror or exc})") from exc
    finally:
        if stage.exists():
            shutil.rmtree(stage, ignore_errors=True)
    return target
