"""``saved_by``: how many processes saved a checkpoint, or why it cannot be resumed, over fabricated checkpoint folders
(no training): 1..8 processes, plain or DeepSpeed ZeRO-2/3 shards, whole, saved with ``save_only_model``, or cut by
a kill; and ``--resume`` never goes on with a checkpoint that another number of processes saved."""

from __future__ import annotations

import json
import tempfile
import time
import zipfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from safetensors.numpy import save_file

from grpo_trl.recipe import RecipeError
from grpo_trl.run.resume import checkpoint_problem, compare_recipe, saved_by


@pytest.fixture(scope="module", autouse=True)
def _transformers_imported():
    """checkpoint names are read with transformers' own pattern: its import (once per test session, seconds) is not
    what these tests time."""
    import transformers.trainer_utils  # noqa: F401


LAYOUTS = {  # the per-rank files of DeepSpeed's save (global_step<N>/), with {} for the rank
    "plain": [],
    "zero2": ["zero_pp_rank_{}_mp_rank_00_optim_states.pt"],
    "zero2-bf16": ["bf16_zero_pp_rank_{}_mp_rank_00_optim_states.pt"],
    "zero3": ["zero_pp_rank_{}_mp_rank_00_model_states.pt", "zero_pp_rank_{}_mp_rank_00_optim_states.pt"],
}


def _zip(path: Path) -> None:
    with zipfile.ZipFile(path, "w") as z:  # what torch.save writes: a whole zip
        z.writestr("data.pkl", b"x")


def fabricate(ckpt: Path, processes: int, layout: str, save_only_model: bool = False) -> Path:
    """A ``checkpoint-2`` folder as transformers (and DeepSpeed) leave it when ``processes`` processes saved it."""
    ckpt.mkdir(parents=True)
    (ckpt / "trainer_state.json").write_text(json.dumps({"global_step": 2, "max_steps": 4, "log_history": []}))
    save_file({"w": np.zeros(2, dtype="float32")}, str(ckpt / "model.safetensors"))
    if LAYOUTS[layout]:  # DeepSpeed's save_checkpoint: under save_only_model too, where ZeRO-3 does not gather
        (ckpt / "global_step2").mkdir()
        for name in LAYOUTS[layout]:
            for rank in range(processes):
                _zip(ckpt / "global_step2" / name.format(rank))
        (ckpt / "latest").write_text("global_step2")
    if save_only_model:
        return ckpt
    _zip(ckpt / "scheduler.pt")
    if not LAYOUTS[layout]:
        _zip(ckpt / "optimizer.pt")
    for rank in range(processes):
        _zip(ckpt / ("rng_state.pth" if processes == 1 else f"rng_state_{rank}.pth"))
    return ckpt


def _refused(ckpt: Path, world_size: int) -> str | None:
    """Why ``--resume`` under ``world_size`` processes does not go on from ``ckpt``: skipped, or refused."""
    if why := checkpoint_problem(ckpt, world_size):
        return why
    recipe, manifest = SimpleNamespace(file="recipe.yaml", data={}), SimpleNamespace(entries={})
    try:
        compare_recipe(recipe, ckpt.parent, manifest, ckpt, world_size)
    except RecipeError as exc:
        return str(exc)
    return None


@settings(max_examples=50)
@given(processes=st.integers(1, 8), layout=st.sampled_from(list(LAYOUTS)), now=st.integers(1, 8))
def test_a_whole_checkpoint_names_the_processes_that_saved_it(processes, layout, now):
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = fabricate(Path(tmp) / "checkpoint-2", processes, layout)
        assert saved_by(ckpt) == (processes, None)
        why = _refused(ckpt, now)
        if now == processes:
            assert why is None
        else:  # skipped or refused, either way naming both counts and the launch that fits
            assert why and (f"launch {processes}" in why or f"{processes} -> {now} processes" in why), why


@settings(max_examples=50)
@given(processes=st.integers(1, 8), layout=st.sampled_from(list(LAYOUTS)), now=st.integers(1, 8))
def test_a_save_only_model_checkpoint_cannot_be_resumed_and_says_so(processes, layout, now):
    """transformers saves no optimizer, scheduler or RNG state: ``--resume`` names the key, never crashes later."""
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = fabricate(Path(tmp) / "checkpoint-2", processes, layout, save_only_model=True)
        count, why = saved_by(ckpt)
        assert count == 0 and "trainer.save_only_model: true" in why and "cannot resume" in why
        assert checkpoint_problem(ckpt, now) == why


@settings(max_examples=50)
@given(
    processes=st.integers(2, 8),
    layout=st.sampled_from(list(LAYOUTS)),
    data=st.data(),
)
def test_a_save_cut_by_a_kill_is_not_counted_as_a_smaller_launch(processes, layout, data):
    """Rank 0 wrote everything (trainer_state.json last); rank ``killed`` stopped before its RNG state and maybe some
    of its DeepSpeed shards: seen wherever a rank the save had is named by a file (only the last rank, gone without
    a trace, looks like a smaller launch)."""
    killed = data.draw(st.integers(1, processes - 1), label="killed")
    shards = LAYOUTS[layout]
    lost = data.draw(st.integers(0, len(shards)), label="shards lost")
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = fabricate(Path(tmp) / "checkpoint-2", processes, layout)
        (ckpt / f"rng_state_{killed}.pth").unlink()
        for name in shards[len(shards) - lost :]:
            (ckpt / "global_step2" / name.format(killed)).unlink()
        count, why = saved_by(ckpt)
        if killed == processes - 1 and lost == len(shards) and processes > 2:
            assert (count, why) == (processes - 1, None)
        else:
            assert count == 0 and f"saved by {processes} process(es), but" in why and "killed while saving" in why, why
            assert checkpoint_problem(ckpt, processes) == why


@pytest.mark.parametrize("processes", [1, 3])
def test_a_truncated_rng_state_is_a_reason(tmp_path, processes):
    ckpt = fabricate(tmp_path / "checkpoint-2", processes, "zero3")
    rng = sorted(ckpt.glob("rng_state*.pth"))[-1]
    rng.write_bytes(rng.read_bytes()[: rng.stat().st_size // 2])
    assert saved_by(ckpt) == (0, f"{rng.name} is truncated or unreadable (File is not a zip file)")


def test_a_deepspeed_save_without_its_latest_file_is_a_reason(tmp_path):
    ckpt = fabricate(tmp_path / "checkpoint-2", 2, "zero2")
    (ckpt / "latest").unlink()
    assert saved_by(ckpt) == (2, None)
    assert "no DeepSpeed 'latest' file" in checkpoint_problem(ckpt, 2)


@pytest.mark.parametrize(
    ("names", "words"),
    [
        (["rng_state_1000000000.pth"], "rng_state_0.pth is missing"),  # answered at once, not after 10**9 looks
        (["rng_state_abc.pth"], "rng_state.pth is missing"),
        (["rng_state_0.pth"], "saved by 2 process(es), but rng_state_1.pth is missing"),  # indexed: 2 or more saved it
    ],
)
def test_odd_rng_file_names(tmp_path, names, words):
    ckpt = fabricate(tmp_path / "checkpoint-2", 1, "plain")
    (ckpt / "rng_state.pth").unlink()
    for name in names:
        _zip(ckpt / name)
    start = time.perf_counter()
    count, why = saved_by(ckpt)
    assert count == 0 and words in why, why
    assert time.perf_counter() - start < 1


def test_resume_of_a_save_only_model_run_is_one_error_line(run_copy, capsys):
    """A run killed after saving its checkpoints with ``save_only_model`` (checkpoint-4 as DeepSpeed ZeRO-3 leaves
    it: its own ``global_step4/``): one error line naming the key, nothing trained or changed."""
    from grpo_trl.cli import train_main
    from tests.conftest import snapshot

    path, out = run_copy({"max_steps": 6, "save_only_model": True})
    (out / "trainer_state.json").unlink()
    for ckpt in (out / "checkpoint-2", out / "checkpoint-4"):
        for name in ("optimizer.pt", "scheduler.pt", "rng_state.pth"):
            (ckpt / name).unlink()
    (out / "checkpoint-4" / "global_step4").mkdir()
    for kind in ("model", "optim"):
        _zip(out / "checkpoint-4" / "global_step4" / f"zero_pp_rank_0_mp_rank_00_{kind}_states.pt")
    (out / "checkpoint-4" / "latest").write_text("global_step4")
    before = snapshot(out)
    assert train_main([str(path), "--resume"]) == 1
    err = capsys.readouterr().err
    error = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(error) == 1 and "Traceback" not in err, err
    assert (
        "checkpoint-4: no RNG state" in error[0]
        and "(also checkpoint-2)" in error[0]
        and "trainer.save_only_model: true" in error[0]
    )
    assert snapshot(out) == before
