"""``RunSession``: what ``train`` decides about its output directory before a model loads (the lock, a killed
run's leftovers, fresh, ``--overwrite``, ``--resume``) and records while it trains. The rules: docs/safety.md."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import yaml

from grpo_trl.errors import GrpoTrlError, config_secrets, redact
from grpo_trl.io import write
from grpo_trl.models.builtin import folder_name
from grpo_trl.recipe import Problem, Recipe, RecipeError
from grpo_trl.run import writes
from grpo_trl.run.directory import STATE, Manifest, RunLock, aside_folder, describe, predictable
from grpo_trl.run.resume import compare_recipe, continue_callbacks, newest_complete, read_state
from grpo_trl.trl_adapter import checkpoint_step, save_model_only

logger = logging.getLogger("grpo_trl")
STATE_FILES = ("lock", "lock.json", "manifest.json")


IN_PLACE = ("README.md", "completions.jsonl", "alerts.jsonl")  # written in place: TRL's card, the logs appended to


def is_main_process() -> bool:
    """Rank 0 of ``accelerate launch`` (``RANK``), or a single process; a ``RANK`` that is not a number is an error."""
    raw = os.environ.get("RANK", "0")
    try:
        return int(raw) == 0
    except ValueError:
        why = f"must be a process rank (0, 1, ...), got {raw!r}"
        raise RecipeError([Problem("environment", "RANK", why)]) from None


class RunSession:
    """The output directory's side of one ``train`` call: see the module docstring."""

    def __init__(self, recipe: Recipe, config: Any, *, resume: bool = False, overwrite: bool = False):
        self.recipe, self.config, self.resume, self.overwrite = recipe, config, resume, overwrite
        self.folder = Path(config.output_dir)
        self.main = is_main_process()  # under accelerate launch, only rank 0 owns the directory
        if resume and overwrite:
            raise RecipeError([Problem(recipe.file, "", "--resume and --overwrite together: one would be ignored")])
        if found := config_secrets(config, recipe.file):  # saved in clear in every checkpoint's training_args.bin
            raise RecipeError(found)
        self.resume_from: Path | None = None
        self.finished: dict | None = None  # the saved trainer state of a run already at max_steps
        self.manifest: Manifest | None = None
        self._lock: RunLock | None = None
        self._started = False  # this process records the run (rank 0, not finished)

    def _error(self, message: str) -> RecipeError:
        return RecipeError([Problem(self.recipe.file, "trainer.output_dir", f"{str(self.folder)!r} {message}")])

    def __enter__(self) -> RunSession:
        for name in STATE_FILES:  # grpo-trl's own files, replaced by something else (a folder, a device)
            path = self.folder / STATE / name
            if path.exists() and not path.is_file():
                raise self._error(f"holds {STATE}/{name}, which is not a file: move it away (grpo-trl writes it)")
        if self.main:
            try:
                self._lock = RunLock(self.folder)
            except OSError as exc:  # .grpo-trl is a file, or cannot be made
                raise self._error(
                    f"cannot hold its lock in .grpo-trl/ ({exc.strerror or exc}); move it away"
                ) from None
            if held := self._lock.acquire():
                raise self._error(f"{held}; wait for it to end, stop it, or use --set trainer.output_dir=DIR")
        try:
            self._prepare()
        except BaseException as exc:
            self.__exit__(type(exc), exc, exc.__traceback__)
            raise
        return self

    def __exit__(self, exc_type: Any = None, exc: BaseException | None = None, tb: Any = None) -> None:
        try:
            if self._started:  # adopt what the trainer wrote unannounced, forget what never came
                self.manifest.sync(live=True)
        except (OSError, GrpoTrlError) as err:  # the directory became unwritable (full disk, read-only)
            if exc is None and (error := self._failure(err, ended=True)):
                raise error from err
            if exc is None:
                raise
        finally:
            if self._lock is not None:
                self._lock.release()
        if isinstance(exc, Exception) and (error := self._failure(exc)):
            raise error from exc

    def _failure(self, exc: BaseException, ended: bool = False) -> RecipeError | None:
        """The error line of a write into the folder that failed (a full disk, a read-only file), else None."""
        if writes.disk_full(self.folder, exc):
            when = "ended" if ended else "was writing to it"
            then = "" if ended else ", then --resume continues from the last complete checkpoint"
            return self._error(f"ran out of disk space while the run {when}; free space{then}")
        if isinstance(exc, GrpoTrlError) or not (ended or writes.inside(self.folder, exc)):
            return None
        what = f"writing {where}" if (where := getattr(exc, "filename", None)) else "writing"
        return self._error(f"cannot be written ({what}: {getattr(exc, 'strerror', None) or exc})")

    def _prepare(self) -> None:
        m = self.manifest = Manifest.load(self.folder)
        if self.main:
            logs = ("recipe.yaml", "completions.jsonl", "alerts.jsonl")
            folders = [n for n in logs if n in m.entries and (self.folder / n).is_dir()]
            if folders and not self.overwrite:  # grpo-trl's own, replaced by a folder: the first write would fail
                raise self._error(
                    f"holds {describe(folders, self.folder)}, a folder where grpo-trl writes: move it away"
                )
        if self.resume:
            self._prepare_resume(m)
        elif self.main:
            writes.prepare_fresh(self.folder, m, self.config, self.overwrite, self._error)
        if self.finished is not None or not self.main:
            return
        self._started = True
        m.record("recipe.yaml", "completions.jsonl", "alerts.jsonl")  # recorded before they are written
        if str(self.recipe.model.get("name")).startswith("builtin:"):  # built into the output_dir by resolve_model
            m.record(folder_name(str(self.recipe.model.get("name"))))
        if any(spec.get("model") == "builtin:tiny-reward" for spec in self.recipe.rewards):
            m.record("tiny-reward")
        m.save()
        text = yaml.safe_dump(redact(self.recipe.data), sort_keys=False)  # the one redaction: no secret in the copy
        path = self.folder / "recipe.yaml"
        if path.is_symlink() or not path.is_file() or path.read_text(errors="replace") != text:  # else: untouched
            write(path, text, where=self.recipe.file, flag="trainer.output_dir", mine=True)

    def _prepare_resume(self, m: Manifest) -> None:
        if self.main:
            if not m.exists and any(predictable(n) for n in m.foreign()):
                raise self._error(
                    "has no .grpo-trl/manifest.json, so --resume cannot tell a run's files from yours "
                    f"({describe([n for n in m.foreign() if predictable(n)], self.folder, 4)}) and adopts none: "
                    "train into a new output_dir (to start from a checkpoint's weights: model.name: "
                    "OUTPUT_DIR/checkpoint-N)"
                )
            writes.refuse_collisions(self.folder, m, self.config, "--resume", self._error)
            if blocked := [n for n in m.present() if checkpoint_step(n) is not None and not (m.folder / n).is_dir()]:
                raise self._error(
                    f"holds {describe(blocked, self.folder)}, not a folder, where the trainer saves a checkpoint: "
                    "move it away"
                )
            # written in place, through a link (TRL's checkpoint card; the logs grpo-trl appends to)
            if odd := [n for n in IN_PLACE if (self.folder / n).is_symlink() or (self.folder / n).is_dir()]:
                raise self._error(
                    f"holds {describe(odd, self.folder)}, a link or a folder, where the run writes its model card "
                    "and logs: move it away"
                )
        ckpt, skipped = newest_complete(self.folder, self.config.world_size)
        for path, why in skipped if self.main else ():
            logger.warning("skipping %s: %s", path.name, why)
        # finished: the final save is whole (its trainer_state.json is moved into place last, see save_final); a
        # checkpoint at max_steps without it: the final save is made again from that checkpoint
        final = read_state(self.folder / "trainer_state.json")[0] or {}
        at = (read_state(ckpt / "trainer_state.json")[0] if ckpt else None) or {}
        target = self.config.max_steps if self.config.max_steps > 0 else (final or at).get("max_steps") or 0
        if final and target and final["global_step"] >= target and at.get("global_step", 0) <= final["global_step"]:
            self.finished = final
            if self.main:
                logger.warning(
                    "%s finished at step %d (trainer.max_steps: %d): nothing trained, nothing deleted; raise "
                    "trainer.max_steps to continue", self.folder, final["global_step"], target,
                )  # fmt: skip
            return
        if at and target and at["global_step"] >= target:  # killed in (or before) the final save: make it now
            self.finished = at
            if self.main:
                self._place(writes.stage(self.folder, ckpt))
                logger.warning(
                    "%s: the final save of step %d was not whole (killed while saving): made it again from %s; "
                    "nothing trained", self.folder, at["global_step"], ckpt.name,
                )  # fmt: skip
            return
        if ckpt is None:
            if skipped:
                grouped: dict[str, list[str]] = {}  # each reason once (save_only_model: every checkpoint's)
                for p, why in skipped:
                    grouped.setdefault(why, []).append(p.name)
                reasons = "; ".join(
                    f"{n[0]}: {why}" + (f" (also {', '.join(n[1:])})" if n[1:] else "") for why, n in grouped.items()
                )
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
            compare_recipe(self.recipe, self.folder, m, ckpt, self.config.world_size)
            if skipped:  # the trainer saves their steps again: into new folders, not over what they left
                (aside := aside_folder(self.folder)).mkdir(parents=True)
                for path, _ in skipped:
                    os.replace(path, aside / path.name)
                    m.entries.pop(path.name, None)
                m.save()
                logger.warning("moved the skipped %s into %s", describe([p.name for p, _ in skipped], aside), aside)

    def save_final(self, trainer: Any) -> None:
        """The trainer's final save (``save_model`` and ``save_state``), whole before any of it is in place
        (``writes.place``): a run killed on the way leaves it unmade, and ``--resume`` makes it again."""
        staged = self.folder / STATE / "final-save"
        if self.main:
            staged = writes.stage(self.folder)
        save_model_only(trainer, str(staged))  # every process: sharded models gather here; no push (report.card)
        trainer.accelerator.wait_for_everyone()
        if self.main:
            trainer.state.save_to_json(str(staged / "trainer_state.json"))
            self._place(staged)

    def _place(self, staged: Path) -> None:
        if foreign := writes.place(self.folder, self.manifest, staged):
            raise self._error(
                f"holds {describe(foreign, self.folder)}, not written by grpo-trl, where the final save goes; the "
                f"model is in {staged}: move them away and copy it from there"
            )

    def attach(self, trainer: Any) -> None:
        """Record checkpoints as they are saved; on resume, continue the logs and alerts from the checkpoint."""
        if self._started:
            trainer.add_callback(writes.ManifestCallback(self.manifest))
        if self.resume_from is not None:
            continue_callbacks(trainer, self.folder, self.resume_from, write=self.main)
