"""What a run writes into its output directory, each write safe to interrupt: ``ManifestCallback`` records each
checkpoint before the trainer writes it; the final save is staged whole, then placed (``trainer_state.json`` last, so
a run killed on the way is made again by ``--resume``); ``disk_full``: a write the full disk failed."""

from __future__ import annotations

import errno
import fnmatch
import os
import shutil
from pathlib import Path

from transformers import TrainerCallback

from grpo_trl.run.directory import STATE, Manifest

# what a checkpoint holds only to resume training (optimizer, scheduler, RNG, sharded optimizer state): not a model
RESUME_ONLY = ("optimizer*.pt", "scheduler*.pt", "scaler.pt", "rng_state*.pth", "global_step*", "*_fsdp_*")


def stage(folder: Path) -> Path:
    """The empty staging folder of the final save (a killed save's leftovers removed)."""
    path = Path(folder) / STATE / "final-save"
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)  # grpo-trl's own staging: a killed save's leftovers
    path.mkdir(parents=True)
    return path


def stage_from_checkpoint(ckpt: Path, folder: Path) -> Path:
    """Stage the final save from ``ckpt`` (the model, tokenizer, config and state it holds; not what only resuming
    needs): what ``save_model`` + ``save_state`` would write at that step."""
    path = stage(folder)
    for item in sorted(ckpt.iterdir()):
        if any(fnmatch.fnmatchcase(item.name, p) for p in RESUME_ONLY):
            continue
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
    """A write that failed for lack of disk space: anywhere in the exception's chain (an OSError, safetensors' words),
    or an ``OSError``/``RuntimeError`` while ``folder``'s disk has next to nothing left (torch's own words)."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            break
        if isinstance(seen, OSError) and seen.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if any(w in str(seen) for w in ("No space left on device", "StorageFull", "os error 28", "Disk quota")):
            return True
        seen = seen.__cause__ or seen.__context__
    try:
        return isinstance(exc, (OSError, RuntimeError)) and shutil.disk_usage(folder).free < 2**20
    except OSError:
        return False


def inside(folder: Path, exc: BaseException) -> bool:
    """An ``OSError`` on a path inside ``folder`` (a log that is now a folder, a read-only file)."""
    name = getattr(exc, "filename", None) if isinstance(exc, OSError) else None
    if not name:
        return False
    folder, path = folder.resolve(), Path(os.fsdecode(name)).resolve()
    return path == folder or folder in path.parents
