"""What a fresh run and ``--overwrite`` refuse in an output directory; ``--overwrite`` moves aside only what the
manifest records, never an entry the trainer would overwrite or rotate away."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grpo_trl.recipe import RecipeError
from grpo_trl.run.directory import STATE, Manifest, aside_folder, describe, predictable
from grpo_trl.run.resume import checkpoints
from grpo_trl.trl_adapter import rotation_candidates

logger = logging.getLogger("grpo_trl")
Error = Callable[[str], RecipeError]


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
