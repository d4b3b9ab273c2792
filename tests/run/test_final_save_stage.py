"""The final save made again from a checkpoint (``--resume`` after a kill in the final save): everything the checkpoint
holds but its top-level resume-only entries (optimizer, scheduler, RNG, DeepSpeed/FSDP shards), staged in a folder
grpo-trl can move entries out of, whatever the checkpoint's own permissions."""

from __future__ import annotations

import fnmatch
import os
import stat
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_trl.run.writes import RESUME_ONLY, stage

NAMES = ["model.safetensors", "optimizer.pt", "scaler.pt", "rng_state_1.pth", "global_step4", "a_fsdp_0", "tok.json"]


def _tree(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def _checkpoint(base: Path, top: list[str], nested: list[str]) -> Path:
    ckpt = base / "checkpoint-4"
    (ckpt / "sub").mkdir(parents=True)
    for name in top:
        (ckpt / name).write_text(name)
    for name in nested:
        (ckpt / "sub" / name).write_text(name)
    return ckpt


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(top=st.sets(st.sampled_from(NAMES)), nested=st.sets(st.sampled_from(NAMES)))
def test_only_the_checkpoints_own_resume_entries_are_left_out(tmp_path_factory, top, nested):
    base = tmp_path_factory.mktemp("stage")
    ckpt = _checkpoint(base, sorted(top), sorted(nested))
    staged = stage(base / "run", ckpt)
    kept = {n for n in top if not any(fnmatch.fnmatchcase(n, p) for p in RESUME_ONLY)}
    assert _tree(staged) == kept | {"sub"} | {f"sub/{n}" for n in nested}  # a subfolder's files are model files


def test_a_read_only_checkpoint_stages_into_a_folder_grpo_trl_can_empty(tmp_path):
    ckpt = _checkpoint(tmp_path, ["model.safetensors", "optimizer.pt"], [])
    ckpt.chmod(0o555)  # the user protected the checkpoint: it is only read
    try:
        staged = stage(tmp_path / "run", ckpt)
    finally:
        ckpt.chmod(0o755)
    assert os.stat(staged).st_mode & stat.S_IWUSR  # place() moves every entry out of it, then removes it
    assert _tree(staged) == {"model.safetensors", "sub"}


def test_a_link_where_the_staging_folder_goes_is_replaced_not_followed(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep").write_text("k")
    (tmp_path / "run" / ".grpo-trl").mkdir(parents=True)
    (tmp_path / "run" / ".grpo-trl" / "final-save").symlink_to(elsewhere)
    staged = stage(tmp_path / "run", _checkpoint(tmp_path, ["model.safetensors"], []))
    assert not staged.is_symlink() and (elsewhere / "keep").read_text() == "k"
    assert _tree(staged) == {"model.safetensors", "sub"}
