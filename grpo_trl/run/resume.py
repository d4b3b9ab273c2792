"""``--resume`` rules: which checkpoint is complete, when a run is finished, which recipe changes a resume survives,
and how the logs continue from its step."""

from __future__ import annotations

import json
import logging
import zipfile
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field, ValidationError

from grpo_trl.errors import Problem, RecipeError, redact
from grpo_trl.io import read_json, read_jsonl, read_yaml, write
from grpo_trl.trl_adapter import checkpoint_step

logger = logging.getLogger("grpo_trl")

# changing these makes a resume meaningless: another model, or other groups/batches than the optimizer state saw
BLOCKING = {
    "model.name": "a different model cannot continue this run's weights and optimizer state",
    "model.revision": "a different model revision",
    "model.tiny": "a different tiny model",
    "model.lora": "different LoRA adapters do not fit the saved ones",
    "trainer.num_generations": "groups of another size change every advantage",
    "trainer.per_device_train_batch_size": "batch arithmetic",
    "trainer.gradient_accumulation_steps": "batch arithmetic",
    "trainer.steps_per_generation": "batch arithmetic",
    "trainer.generation_batch_size": "batch arithmetic",
}


def _whole_zip(path: Path) -> str | None:
    try:
        with zipfile.ZipFile(path):
            return None
    except (OSError, zipfile.BadZipFile) as exc:
        return f"{path.name} is truncated or unreadable ({exc})"


def _weights_problem(ckpt: Path) -> str | None:
    from safetensors import SafetensorError, safe_open

    files = sorted(ckpt.glob("*.safetensors"))
    index = next(iter(ckpt.glob("*.safetensors.index.json")), None)
    if index is not None:
        try:
            shards = set(read_json(index)["weight_map"].values())
        except (OSError, ValueError, KeyError, AttributeError) as exc:
            return f"{index.name} is unreadable ({exc})"
        if missing := sorted(s for s in shards if not (ckpt / s).is_file()):
            return f"weight shard {missing[0]} is missing"
    for f in files:
        try:
            with safe_open(str(f), "pt"):
                pass
        except (OSError, SafetensorError) as exc:
            return f"{f.name} does not load ({exc})"
    bins = sorted(ckpt.glob("pytorch_model*.bin")) + sorted(ckpt.glob("adapter_model.bin"))
    for f in bins:
        if problem := _whole_zip(f):
            return problem
    sharded = any(ckpt.glob("global_step*")) or any(ckpt.glob("*_fsdp_*"))
    if not files and not bins and not sharded:
        return "no model weights (model.safetensors or adapter_model.safetensors)"
    return None


class _State(BaseModel, strict=True):
    """The fields of ``trainer_state.json`` the trainer computes with on resume, in the JSON types it needs."""

    global_step: int = Field(ge=0)
    max_steps: int = Field(0, ge=0)
    epoch: float | None = Field(0, ge=0)
    best_global_step: int | None = Field(None, ge=0)
    log_history: list = []


def read_state(path: Path) -> tuple[dict | None, str | None]:
    """``(state, None)`` from a ``trainer_state.json`` fit to resume from, else ``(None, why not)``."""
    try:
        state = read_json(path)
    except FileNotFoundError:
        return None, "no trainer_state.json (killed while saving)"
    except (OSError, ValueError) as exc:
        return None, f"trainer_state.json is unreadable ({type(exc).__name__}: {exc})"
    if not isinstance(state, dict):
        return None, f"trainer_state.json is unreadable (a JSON {type(state).__name__}, not an object)"
    try:
        _State.model_validate(state)  # a hand edit, another tool's file
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(map(str, error["loc"]))
        why = f"has no {where}" if error["type"] == "missing" else f"{where} is {error['input']!r}: {error['msg']}"
        return None, f"trainer_state.json is unreadable ({why})"
    return state, None


def saved_by(ckpt: Path) -> int:
    """How many processes saved ``ckpt``: transformers writes one RNG state file per process (0: none written)."""
    return len(list(ckpt.glob("rng_state*.pth")))


def checkpoint_problem(ckpt: str | Path, world_size: int = 1) -> str | None:
    """Why ``ckpt`` cannot be resumed from, or ``None`` when it is complete."""
    ckpt = Path(ckpt)
    state, problem = read_state(ckpt / "trainer_state.json")
    if problem:
        return problem
    if problem := _weights_problem(ckpt):
        return problem
    if any(ckpt.glob("global_step*")) or any(ckpt.glob("*_fsdp_*")):
        return None  # DeepSpeed / FSDP keep optimizer and RNG state in their own layout
    needed = ["optimizer.pt", "scheduler.pt"]
    needed += ["rng_state.pth"] if world_size <= 1 else [f"rng_state_{i}.pth" for i in range(world_size)]
    for name in needed:
        if not (ckpt / name).is_file():
            if name.startswith("rng") and (n := saved_by(ckpt)):
                return f"saved by {n} process(es), this launch has {world_size} (no {name}): launch {n}"
            what = "RNG" if name.startswith("rng") else name.split(".")[0]
            return f"no {what} state ({name}; saved with save_only_model, or killed while saving)"
        if problem := _whole_zip(ckpt / name):
            return problem
    return None


def checkpoints(folder: str | Path) -> list[Path]:
    """The ``checkpoint-<N>`` folders, newest (highest N) first."""
    folder = Path(folder)
    found = [p for p in folder.glob("checkpoint-*") if p.is_dir() and checkpoint_step(p.name) is not None]
    return sorted(found, key=lambda p: checkpoint_step(p.name), reverse=True)


def newest_complete(folder: str | Path, world_size: int = 1) -> tuple[Path | None, list[tuple[Path, str]]]:
    """The newest complete checkpoint and the newer ones skipped, each with the reason."""
    skipped = []
    for ckpt in checkpoints(folder):
        problem = checkpoint_problem(ckpt, world_size)
        if problem is None:
            return ckpt, skipped
        skipped.append((ckpt, problem))
    return None, skipped


def _flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(data, dict) and data:
        return {k: v for key, value in data.items() for k, v in _flatten(value, f"{prefix}{key}.").items()}
    return {prefix[:-1]: data} if prefix else {}


def recipe_differences(old: dict, new: dict) -> list[tuple[str, Any, Any]]:
    """``(dotted key, saved value, new value)`` for every leaf that differs (``None``: absent), but ``output_dir``
    (the folder resumed, wherever it was)."""
    a, b = _flatten(old), _flatten(new)
    keys = sorted((set(a) | set(b)) - {"trainer.output_dir"})
    return [(k, a.get(k), b.get(k)) for k in keys if a.get(k) != b.get(k)]


def _step(row: dict) -> float:
    return row["step"] if isinstance(row.get("step"), int) else float("inf")


def keep_until(path: Path, step: int) -> list[dict]:
    """Drop the rows logged after ``step`` (the resumed steps log them again); returns the rows kept."""
    if not path.is_file():
        return []
    rows = read_jsonl(path)
    kept = [r for r in rows if _step(r) <= step]
    if len(kept) != len(rows) or not path.read_bytes().endswith(b"\n") and path.stat().st_size:
        write(path, "".join(json.dumps(r) + "\n" for r in kept), mine=True)  # the run's own log
        logger.info("%s: dropped %d rows logged after step %d", path.name, len(rows) - len(kept), step)
    return kept


def continue_callbacks(trainer: Any, output_dir: Path, ckpt: Path, write: bool = True) -> None:
    """Resuming from ``ckpt``: its logs keep the rows up to its step, alerts fired stay fired (never again), streaks
    and the sample cadence carry on from its ``log_history``."""
    from grpo_trl.monitor.callbacks import Alerts, CompletionSamples

    state = read_json(ckpt / "trainer_state.json")
    step, history = int(state["global_step"]), state.get("log_history") or []
    if write:  # the main process; the others only need the state
        keep_until(output_dir / "completions.jsonl", step)
        keep_until(output_dir / "alerts.jsonl", step)
    fired = [r for r in read_jsonl(output_dir / "alerts.jsonl") if _step(r) <= step]
    for cb in trainer.callback_handler.callbacks:
        if isinstance(cb, Alerts):
            cb.restore(history, fired)
        elif isinstance(cb, CompletionSamples):
            cb.restore(history)


def compare_recipe(recipe: Any, folder: Path, m: Any, ckpt: Path, world_size: int) -> None:
    """Resuming from ``ckpt``: refuse a recipe change that makes it meaningless (``BLOCKING``), warn of any other
    and keep the earlier recipe as ``recipe.step-<N>.yaml``."""
    saved = folder / "recipe.yaml"
    try:
        old = read_yaml(saved) if "recipe.yaml" in m.entries else None
    except (OSError, ValueError, yaml.YAMLError):
        old = None
    diffs = recipe_differences(old, redact(recipe.data)) if isinstance(old, dict) else []
    problems = [
        Problem(recipe.file, key, f"{a!r} -> {b!r} since {ckpt.name}: {why}")
        for key, a, b in diffs
        for prefix, why in BLOCKING.items()
        if key == prefix or key.startswith(prefix + ".")
    ]
    if (n := saved_by(ckpt)) and n != world_size:
        problems.append(Problem(recipe.file, "launch", f"{n} -> {world_size} processes: batch"))
    if problems:
        fix = (
            f"; resuming would be meaningless: restore the saved value, or train into a new output_dir with "
            f"model.name: {ckpt} to start from these weights"
        )
        raise RecipeError([Problem(p.file, p.key, p.message + fix) for p in problems])
    if diffs:
        listed = "; ".join(f"{k}: {a!r} -> {b!r}" for k, a, b in diffs)
        logger.warning("the recipe differs from the saved recipe.yaml (resuming anyway): %s", listed)
        keep = folder / f"recipe.step-{checkpoint_step(ckpt.name)}.yaml"
        if not keep.exists():
            m.record(keep.name)
            m.save()
            saved.replace(keep)
            logger.info("kept the earlier recipe as %s", keep.name)
