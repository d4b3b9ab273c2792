"""``--resume`` rules: which checkpoint is complete, when a run is finished, which recipe changes a resume survives,
and how the logs continue from its step."""

from __future__ import annotations

import json
import logging
import re
import zipfile
from itertools import chain
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field, ValidationError
from safetensors import SafetensorError, safe_open

from grpo_trl.errors import Problem, RecipeError, redact
from grpo_trl.io import open_regular, read_json, read_jsonl, read_yaml, write
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


def _opens(path: Path, load: Any = None) -> str | None:
    """Why ``load`` (else reading a torch.save zip) fails on the regular file ``path`` (a FIFO: never a wait)."""
    try:
        with open_regular(path, path.name) as fh:
            load(str(path)) if load else zipfile.ZipFile(fh).close()
    except (OSError, ValueError, zipfile.BadZipFile, SafetensorError) as exc:
        return f"{path.name} {'does not load' if load else 'is truncated or unreadable'} ({exc})"
    return None


def _weights_problem(ckpt: Path) -> str | None:
    files = sorted(ckpt.glob("*.safetensors"))
    index = next(iter(ckpt.glob("*.safetensors.index.json")), None)
    if index is not None:
        try:
            shards = set(read_json(index, pipe=False)["weight_map"].values())
        except (OSError, ValueError, KeyError, AttributeError, TypeError) as exc:
            return f"{index.name} is unreadable ({exc})"
        if missing := sorted(str(s) for s in shards if not (ckpt / str(s)).is_file()):
            return f"weight shard {missing[0]} is missing"
    for f in files:  # the header and sizes, without importing torch
        if problem := _opens(f, lambda name: safe_open(name, "np").keys()):
            return problem
    bins = sorted(ckpt.glob("pytorch_model*.bin")) + sorted(ckpt.glob("adapter_model.bin"))
    if problem := next(filter(None, map(_opens, bins)), None):
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
    log_history: list[dict] = []


def read_state(path: Path) -> tuple[dict | None, str | None]:
    """``(state, None)`` from a ``trainer_state.json`` fit to resume from, else ``(None, why not)``."""
    try:
        state = read_json(path, pipe=False)
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


def _rng(rank: int, processes: int) -> str:
    return "rng_state.pth" if processes <= 1 else f"rng_state_{rank}.pth"


def saved_by(ckpt: Path) -> tuple[int, str | None]:
    """``(processes that saved ckpt, None)``, or ``(0, why it cannot be resumed)``. Transformers writes the RNG state
    of each process unless ``save_only_model`` (``rng_state.pth`` alone, else ``rng_state_<rank>.pth``); DeepSpeed
    names each rank's shards: every rank either names must have all its files, else the save was cut."""
    rng = {p.name for p in ckpt.glob("rng_state*.pth")}
    if not rng:
        return 0, (
            "no RNG state (rng_state*.pth): saved with trainer.save_only_model: true, which transformers cannot "
            "resume (no optimizer, scheduler or RNG state; set it to false to save resumable checkpoints), or killed "
            "while saving"
        )
    ranks = {int(m[1]) for name in rng if (m := re.fullmatch(r"rng_state_(\d+)\.pth", name))}
    shards: dict[tuple[str, str], set[int]] = {}  # a DeepSpeed shard's path around its rank -> the ranks written
    for path in ckpt.glob("global_step*/*"):
        if m := re.search(r"zero_pp_rank_(\d+)_", name := str(path.relative_to(ckpt))):
            shards.setdefault((name[: m.start(1)], name[m.end(1) :]), set()).add(int(m[1]))
    seen = ranks.union(*shards.values())
    n = max(max(seen, default=0) + 1, 2 if ranks else 1)  # indexed names: transformers under 2 or more processes
    files = chain((_rng(i, n) for i in range(n)), (f"{head}{i}{tail}" for head, tail in shards for i in range(n)))
    if missing := next((name for name in files if not (ckpt / name).is_file()), None):  # lazy: a rank of 10**9
        return 0, f"saved by {n} process(es), but {missing} is missing (killed while saving)"
    if problem := next(filter(None, (_opens(ckpt / _rng(i, n)) for i in range(n))), None):
        return 0, problem
    return n, None


def checkpoint_problem(ckpt: str | Path, world_size: int = 1) -> str | None:
    """Why ``ckpt`` cannot be resumed from by ``world_size`` processes, or ``None`` when it is complete."""
    ckpt = Path(ckpt)
    state, why = read_state(ckpt / "trainer_state.json")
    if state and (step := checkpoint_step(ckpt.name)) is not None and state["global_step"] != step:
        why = f"trainer_state.json is of step {state['global_step']}, not {step}"  # copied from another checkpoint
    n, problem = saved_by(ckpt)
    if problem := why or _weights_problem(ckpt) or problem:
        return problem
    needed = (_rng(i, world_size) for i in range(world_size))
    if missing := next((name for name in needed if not (ckpt / name).is_file()), None):  # more: compare_recipe refuses
        return f"saved by {n} process(es), this launch has {world_size} (no {missing}): launch {n}"
    if any(ckpt.glob("global_step*")):  # DeepSpeed keeps optimizer and scheduler state in its own layout
        return None if (ckpt / "latest").is_file() else "no DeepSpeed 'latest' file (killed while saving)"
    for name in [] if any(ckpt.glob("*_fsdp_*")) else ["optimizer.pt", "scheduler.pt"]:
        if not (ckpt / name).is_file():
            return f"no {name.split('.')[0]} state ({name}; saved with save_only_model, or killed while saving)"
        if problem := _opens(ckpt / name):
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
    write(path, "".join(json.dumps(r) + "\n" for r in kept), mine=True)  # the run's own log, a cut last row gone
    if len(kept) != len(rows):
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
    if (n := saved_by(ckpt)[0]) != world_size:
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
