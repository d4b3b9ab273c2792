"""What ``grpo-trl train`` decides about its output directory before it loads a model, and records while it trains.

``RunSession`` (a context manager, opened by ``grpo_trl.train.run``): take the directory's lock (main process only),
record what a killed run left, then per mode:

- fresh: stop when the directory holds entries grpo-trl did not write, or a previous run's results;
- ``--overwrite``: remove only grpo-trl's entries, list the ones kept; stop when a kept one has a name the trainer
  would overwrite or rotate (``checkpoint-<N>``, ``config.json``...);
- ``--resume``: the newest complete checkpoint (the others skipped with the reason); a finished run trains nothing;
  recipe changes are listed (an error for those that make the resume meaningless) and the earlier recipe is kept
  as ``recipe.step-<N>.yaml``.

While training, a ``TrainerCallback`` records each checkpoint in the manifest; on exit the run's window closes and
the lock is released.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import yaml
from transformers import TrainerCallback

from grpo_trl.recipe import BUILTIN_TINY, Problem, Recipe, RecipeError
from grpo_trl.resume import blocking, checkpoints, continue_callbacks, newest_complete, recipe_differences, saved_step
from grpo_trl.run_dir import Manifest, RunLock, describe, predictable

logger = logging.getLogger("grpo_trl")
BATCH_FIELDS = ("num_generations", "per_device_train_batch_size", "gradient_accumulation_steps", "world_size")


def is_main_process() -> bool:
    """Rank 0 of ``accelerate launch`` (``RANK``), or a single process; a ``RANK`` that is not a number is an error."""
    raw = os.environ.get("RANK", "0")
    try:
        return int(raw) == 0
    except ValueError:
        raise RecipeError(
            [Problem("environment", "RANK", f"must be a process rank (0, 1, ...), got {raw!r}")]
        ) from None


class RunSession:
    """The output directory's side of one ``train`` call: see the module docstring."""

    def __init__(self, recipe: Recipe, config: Any, *, resume: bool = False, overwrite: bool = False):
        self.recipe, self.config, self.resume, self.overwrite = recipe, config, resume, overwrite
        self.folder = Path(config.output_dir)
        self.main = is_main_process()  # under accelerate launch, only rank 0 owns the directory
        if resume and overwrite:
            raise RecipeError([Problem(recipe.file, "", "--resume and --overwrite together: one would be ignored")])
        self.resume_from: Path | None = None
        self.finished: dict | None = None  # the saved trainer state of a run already at max_steps
        self.manifest: Manifest | None = None
        self._lock: RunLock | None = None
        self._run: dict | None = None

    def _error(self, message: str) -> RecipeError:
        return RecipeError([Problem(self.recipe.file, "trainer.output_dir", f"{str(self.folder)!r} {message}")])

    def __enter__(self) -> RunSession:
        if self.main:
            try:
                self._lock = RunLock(self.folder)
            except OSError as exc:  # .grpo-trl is a file, or cannot be made
                raise self._error(
                    f"cannot hold its lock in .grpo-trl/ ({exc.strerror or exc}); move it away"
                ) from None
            held = self._lock.acquire()
            if held:
                raise self._error(f"{held}; wait for it to end, stop it, or use --set trainer.output_dir=DIR")
        try:
            self._prepare()
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            if self._run is not None and self.manifest is not None:
                self.manifest.end_run(self._run)
        finally:
            if self._lock is not None:
                self._lock.release()

    # ------------------------------------------------------------------------------------------------ before
    def _prepare(self) -> None:
        m = self.manifest = Manifest.load(self.folder)
        if self.main:
            adopted = m.recover()
            if adopted:
                logger.info("recorded what the interrupted run wrote: %s", describe(adopted, self.folder))
        if self.resume:
            self._prepare_resume(m)
        elif self.main:
            self._prepare_fresh(m)
        if self.finished is not None or not self.main:
            return
        cfg = self.config
        batch = {k: getattr(cfg, k) for k in BATCH_FIELDS}
        resumed = self.resume_from.name if self.resume_from else None
        self._run = m.start_run(resumed_from=resumed, model=self.recipe.model.get("name"), batch=batch)
        m.record("recipe.yaml", "completions.jsonl", "alerts.jsonl")  # recorded before they are written
        if str(self.recipe.model.get("name")).startswith("builtin:"):  # built into the output_dir by resolve_model
            name = str(self.recipe.model.get("name"))
            m.record("tiny-model" if name == BUILTIN_TINY else name.split(":", 1)[1])
        if any(spec.get("model") == "builtin:tiny-reward" for spec in self.recipe.rewards):
            m.record("tiny-reward")
        m.save()
        path, text = self.folder / "recipe.yaml", self.recipe.to_yaml()
        if not path.is_file() or path.read_text(errors="replace") != text:
            path.write_text(text)

    def _collisions(self, m: Manifest, action: str) -> None:
        clash = [n for n in m.foreign() if predictable(n)]
        if clash:
            raise self._error(
                f"holds entries grpo-trl did not write, with names the trainer would overwrite or rotate: "
                f"{describe(clash, self.folder)}; {action} only touches what .grpo-trl/manifest.json records: move "
                "them away or choose another output_dir"
            )

    def _prepare_fresh(self, m: Manifest) -> None:
        if self.overwrite:
            self._collisions(m, "--overwrite")
            removed, kept = m.remove_own(), m.foreign()
            if removed:
                logger.warning("--overwrite: removed the previous run's %s", describe(removed, self.folder))
            if kept:
                logger.warning("--overwrite: kept (not written by grpo-trl): %s", describe(kept, self.folder))
            return
        foreign = m.foreign()
        if foreign:
            beside = not any(predictable(n) for n in foreign)
            raise self._error(
                f"holds entries grpo-trl did not write: {describe(foreign, self.folder)}; move them away, choose "
                "another output_dir (--set trainer.output_dir=DIR)"
                + (", or pass --overwrite to train beside them (they are kept)" if beside else "")
            )
        trained = m.trained()
        if trained:
            found = checkpoints(self.folder)
            what = (
                f"{found[0].name} of a previous run"
                if found
                else f"a previous run's {describe(trained, self.folder, 4)}"
            )
            raise self._error(
                f"already holds {what}; pass --resume to continue it, --overwrite to start "
                "again (removes only what grpo-trl wrote), or --set trainer.output_dir=NEW_DIR"
            )

    def _prepare_resume(self, m: Manifest) -> None:
        if self.main:
            if not m.exists and (checkpoints(self.folder) or (self.folder / "trainer_state.json").is_file()):
                legacy = [n for n in m.foreign() if predictable(n)]
                m.record(*legacy)
                logger.info("no .grpo-trl/manifest.json: adopting %s as this run's", describe(legacy, self.folder))
            self._collisions(m, "--resume")
        ckpt, skipped = newest_complete(self.folder, self.config.world_size)
        for path, why in skipped if self.main else ():
            logger.warning("skipping %s: %s", path.name, why)
        states = [p for p in (self.folder, ckpt) if p and saved_step(p / "trainer_state.json")]
        best = max(states, key=lambda p: saved_step(p / "trainer_state.json")[0], default=None)
        done = saved_step(best / "trainer_state.json") if best else None
        target = self.config.max_steps if self.config.max_steps > 0 else (done[1] if done else 0)
        if done and target and done[0] >= target:
            self.finished = json.loads((best / "trainer_state.json").read_text())
            if self.main:
                logger.warning(
                    "%s finished at step %d (trainer.max_steps: %d): nothing trained, nothing deleted; raise "
                    "trainer.max_steps to continue", self.folder, done[0], target,
                )  # fmt: skip
            return
        if ckpt is None:
            if skipped:
                reasons = "; ".join(f"{p.name}: {why}" for p, why in skipped)
                raise self._error(
                    f"has no complete checkpoint to resume from ({reasons}); nothing was deleted: move the broken "
                    "ones away or pass --overwrite to start from step 0"
                )
            if self.main and m.trained():
                raise self._error(
                    "holds a previous run that stopped before its first checkpoint (trainer.save_steps): nothing to "
                    "resume from; pass --overwrite to start from step 0"
                )
            if self.main:
                logger.info("--resume: nothing to resume in %s yet, starting from step 0", self.folder)
            return
        self.resume_from = ckpt
        if self.main:
            logger.info("resuming from %s", ckpt)
            self._compare_recipe(m, ckpt)

    def _compare_recipe(self, m: Manifest, ckpt: Path) -> None:
        saved = self.folder / "recipe.yaml"
        try:
            old = yaml.safe_load(saved.read_text(errors="replace")) if "recipe.yaml" in m.entries else None
        except (OSError, yaml.YAMLError):
            old = None
        diffs = recipe_differences(old, self.recipe.data) if isinstance(old, dict) else []
        problems = [
            Problem(self.recipe.file, key, f"{a!r} -> {b!r} since {ckpt.name}: {why}")
            for key, a, b in diffs
            if (why := blocking(key))
        ]
        last = next((r.get("batch") for r in reversed(m.runs) if r.get("batch")), None) or {}
        if last.get("world_size") not in (None, self.config.world_size):
            ws = self.config.world_size
            problems.append(Problem(self.recipe.file, "launch", f"{last['world_size']} -> {ws} processes: batch"))
        if problems:
            fix = (
                f"; resuming would be meaningless: restore the saved value, or train into a new output_dir with "
                f"model.name: {ckpt} to start from these weights"
            )
            raise RecipeError([Problem(p.file, p.key, p.message + fix) for p in problems])
        if diffs:
            listed = "; ".join(f"{k}: {a!r} -> {b!r}" for k, a, b in diffs)
            logger.warning("the recipe differs from the saved recipe.yaml (resuming anyway): %s", listed)
            step = int(ckpt.name.split("-")[-1])
            keep = self.folder / f"recipe.step-{step}.yaml"
            if not keep.exists():
                m.record(keep.name)
                m.save()
                saved.replace(keep)
                logger.info("kept the earlier recipe as %s", keep.name)

    # ------------------------------------------------------------------------------------------------ during
    def attach(self, trainer: Any) -> None:
        """Record checkpoints as they are saved; on resume, continue the logs and alerts from the checkpoint."""
        if self.main and self._run is not None:
            trainer.add_callback(ManifestCallback(self.manifest, self._run))
        if self.resume_from is not None:
            continue_callbacks(trainer, self.folder, self.resume_from, write=self.main)


class ManifestCallback(TrainerCallback):
    """Adds each saved ``checkpoint-<N>`` (and the trainer's other new entries) to the manifest."""

    def __init__(self, manifest: Manifest, run: dict):
        self.manifest, self.run = manifest, run

    def on_save(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            self.manifest.record(f"checkpoint-{state.global_step}")
            self.manifest.sync(self.run)
