"""What a run writes into its output directory, each write safe to interrupt (the final save staged whole, then placed,
``trainer_state.json`` last), and what a fresh run and ``--overwrite`` refuse."""

from __future__ import annotations

import errno
import fnmatch
import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from grpo_trl.recipe import RecipeError
from grpo_trl.run.directory import STATE, Manifest, aside_folder, describe, predictable
from grpo_trl.run.resume import checkpoints
from grpo_trl.trl_adapter import rotation_candidates

logger = logging.getLogger("grpo_trl")
Error = Callable[[str], RecipeError]

# what a checkpoint holds only to resume training (optimizer, scheduler, RNG, sharded optimizer state): not a model
RESUME_ONLY = ("optimizer*.pt", "scheduler*.pt", "scaler.pt", "rng_state*.pth", "global_step*", "*_fsdp_*")


def stage(folder: Path, ckpt: Path | None = None) -> Path:
    """The staging folder of the final save: empty (a killed save's leftovers removed), or with ``ckpt``'s model,
    tokenizer, config and state (what ``save_model`` + ``save_state`` would write at its step)."""
    path = Path(folder) / STATE / "final-save"
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)  # grpo-trl's own staging (a link there is removed, never followed)
    path.unlink(missing_ok=True)
    path.mkdir(parents=True)  # its own mode, not the checkpoint's (a read-only one must still be emptied by place)
    for item in sorted(ckpt.iterdir()) if ckpt else ():  # its own entries only: a subfolder is copied whole
        if not any(fnmatch.fnmatchcase(item.name, pattern) for pattern in RESUME_ONLY):
            (shutil.copytree if item.is_dir() else shutil.copy2)(item, path / item.name)
    return path


def place(folder: Path, manifest: Manifest, staged: Path) -> list[str]:
    """Move ``staged``'s entries into ``folder``, each recorded first, ``trainer_state.json`` last. Returns the names
    it would not replace (not written by grpo-trl), having moved nothing; else ``[]``."""
    names = sorted(p.name for p in staged.iterdir() if p.name != "trainer_state.json")
    names += ["trainer_state.json"] if (staged / "trainer_state.json").exists() else []
    foreign = [n for n in names if os.path.lexists(folder / n) and n not in manifest.entries]
    if foreign:
        return foreign
    manifest.record(*names)
    manifest.save()
    (folder / "trainer_state.json").unlink(missing_ok=True)  # the previous final save is no longer whole
    for name in names:
        target = folder / name
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        os.replace(staged / name, target)
    staged.rmdir()
    return []


class ManifestCallback(TrainerCallback):
    """Records each ``checkpoint-<N>`` (and TRL's ``README.md`` model card, written with it) before the trainer saves
    it, and syncs the manifest after: a run killed mid-save has recorded what it was writing. At the start it adopts
    the logs the trainer made unannounced (TRL's ``completions/``, tensorboard's ``runs/``)."""

    def __init__(self, manifest: Manifest):
        self.manifest = manifest

    def on_train_begin(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            self.manifest.sync(live=True, training=True)

    def on_step_end(self, args, state, control, **kwargs):
        if state.is_world_process_zero and control.should_save:
            self.manifest.record(f"checkpoint-{state.global_step}", "README.md")
            self.manifest.save()

    on_epoch_end = on_step_end

    def on_save(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            self.manifest.record(f"checkpoint-{state.global_step}")
            self.manifest.sync(live=True, training=True)


def disk_full(folder: Path, exc: BaseException) -> bool:
    """A write that failed for lack of disk space: anywhere in the exception's chain (an OSError, safetensors' or
    torch's words), or an ``OSError``/``RuntimeError`` while ``folder``'s disk has next to nothing left."""
    seen = exc
    for _ in range(8):  # bounded: a chain may loop
        if isinstance(seen, OSError) and seen.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if any(w in str(seen) for w in ("No space left on device", "StorageFull", "os error 28", "Disk quota")):
            return True
        seen = seen and (seen.__cause__ or seen.__context__)
    try:
        return isinstance(exc, (OSError, RuntimeError)) and shutil.disk_usage(folder).free < 2**20
    except OSError:
        return False


def inside(folder: Path, exc: BaseException) -> bool:
    """An ``OSError`` on a path inside ``folder`` (a log that is now a folder, a read-only file)."""
    if not (name := getattr(exc, "filename", None) if isinstance(exc, OSError) else None):
        return False
    folder, path = folder.resolve(), Path(os.fsdecode(name)).resolve()
    return path == folder or folder in path.parents


def rotated_away(folder: Path, m: Manifest, cfg: Any) -> list[str]:
    """Foreign folders the trainer's checkpoint rotation would delete (``save_total_limit`` with saving on)."""
    strategy = getattr(cfg.save_strategy, "value", cfg.save_strategy)
    if not cfg.save_total_limit or cfg.save_total_limit <= 0 or strategy == "no":
        return []
    foreign = set(m.foreign())
    return [n for n in rotation_candidates(folder) if n in foreign and not predictable(n)]


def refuse_collisions(folder: Path, m: Manifest, cfg: Any, action: str, error: Error) -> None:
    """Stop when an entry grpo-trl did not write has a name the trainer would overwrite or rotate away."""
    if clash := [n for n in m.foreign() if predictable(n)]:
        raise error(
            f"holds entries grpo-trl did not write, with names the trainer would overwrite or rotate: "
            f"{describe(clash, folder)}; {action} only touches what .grpo-trl/manifest.json records: move "
            "them away or choose another output_dir"
        )
    if rotated := rotated_away(folder, m, cfg):
        raise error(
            f"holds {describe(rotated, folder)}, not written by grpo-trl, which the trainer's checkpoint "
            f"rotation would delete (trainer.save_total_limit: {cfg.save_total_limit}; transformers "
            "rotates every checkpoint-* folder): move them out of the output_dir, or unset "
            "trainer.save_total_limit"
        )


def prepare_fresh(folder: Path, m: Manifest, cfg: Any, overwrite: bool, error: Error) -> None:
    """A run from step 0: with ``overwrite`` remove grpo-trl's entries (keeping the user's); else stop on any
    entry grpo-trl did not write and on a previous run's results."""
    if overwrite:
        refuse_collisions(folder, m, cfg, "--overwrite", error)
        if removed := m.remove_own(aside := aside_folder(folder)):
            where = f"{STATE}/{aside.name}/"
            logger.warning("--overwrite: moved the previous run's %s into %s", ", ".join(removed), where)
        if kept := m.foreign():
            logger.warning("--overwrite: kept (not written by grpo-trl): %s", describe(kept, folder))
        return
    if foreign := m.foreign():
        beside = not any(predictable(n) for n in foreign) and not rotated_away(folder, m, cfg)
        raise error(
            f"holds entries grpo-trl did not write: {describe(foreign, folder)}; move them away, choose "
            "another output_dir (--set trainer.output_dir=DIR)"
            + (", or pass --overwrite to train beside them (they are kept)" if beside else "")
        )
    if trained := m.trained():
        found = checkpoints(folder)
        what = f"{found[0].name} of a previous run" if found else f"a previous run's {describe(trained, folder, 4)}"
        raise error(
            f"already holds {what}; pass --resume to continue it, --overwrite to start "
            "again (moves only what grpo-trl wrote aside), or --set trainer.output_dir=NEW_DIR"
        )
