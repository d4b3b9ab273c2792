"""--resume on real checkpoints: a finished run changes nothing, every kind of damaged newest checkpoint is skipped
with the reason, none complete is one error line, and recipe changes warn or stop depending on what changed."""

from __future__ import annotations

import json
import shutil
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

from grpo_trl.cli import train_main
from grpo_trl.run.resume import checkpoint_problem, newest_complete
from grpo_trl.train import train
from tests.conftest import snapshot

pytestmark = pytest.mark.fault


def _truncate(path: Path, keep: float | int = 0.5) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep) if isinstance(keep, float) else keep])


DAMAGE = {
    # kind: (what is done to checkpoint-4, words of the reason)
    "weights cut in half": (lambda c: _truncate(c / "model.safetensors"), "model.safetensors does not load"),
    "weights header cut": (lambda c: _truncate(c / "model.safetensors", 5), "model.safetensors does not load"),
    "weights empty": (lambda c: _truncate(c / "model.safetensors", 0), "model.safetensors does not load"),
    "weights missing": (lambda c: (c / "model.safetensors").unlink(), "no model weights"),
    "weights one byte short": (lambda c: _truncate(c / "model.safetensors", -1), "model.safetensors does not load"),
    "optimizer cut": (lambda c: _truncate(c / "optimizer.pt"), "optimizer.pt is truncated"),
    "optimizer missing": (lambda c: (c / "optimizer.pt").unlink(), "no optimizer state"),
    "scheduler cut": (lambda c: _truncate(c / "scheduler.pt", 0.9), "scheduler.pt is truncated"),
    "scheduler missing": (lambda c: (c / "scheduler.pt").unlink(), "no scheduler state"),
    "rng cut": (lambda c: _truncate(c / "rng_state.pth", 0.99), "rng_state.pth is truncated"),
    "rng missing": (lambda c: (c / "rng_state.pth").unlink(), "no RNG state"),
    "trainer state cut": (lambda c: _truncate(c / "trainer_state.json"), "trainer_state.json is unreadable"),
    "trainer state missing": (lambda c: (c / "trainer_state.json").unlink(), "no trainer_state.json"),
    "trainer state without step": (
        lambda c: (c / "trainer_state.json").write_text('{"log_history": []}'),
        "trainer_state.json is unreadable",
    ),
    "trainer state a list": (lambda c: (c / "trainer_state.json").write_text("[1]"), "unreadable"),
}


@pytest.mark.parametrize("kind", DAMAGE)
def test_each_damage_of_the_newest_checkpoint_is_skipped_with_its_reason(kind, trained_run, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(trained_run, out)
    assert checkpoint_problem(out / "checkpoint-4") is None
    damage, words = DAMAGE[kind]
    damage(out / "checkpoint-4")
    ckpt, skipped = newest_complete(out)
    assert ckpt == out / "checkpoint-2"
    assert [p.name for p, _ in skipped] == ["checkpoint-4"] and words in skipped[0][1], skipped


@pytest.mark.parametrize("now", [2, 3, 8])
def test_rng_state_of_every_process_is_required(trained_run, now):
    """A single-process checkpoint under N processes: skipped with the process counts, not "save_only_model"."""
    why = checkpoint_problem(trained_run / "checkpoint-4", world_size=now)
    assert f"saved by 1 process(es), this launch has {now} (no rng_state_0.pth)" in why, why
    assert "save_only_model" not in why


def _killed_after_checkpoint_4(out: Path) -> None:
    """What a run killed after saving checkpoint-4 leaves: no final save, and log rows from steps never saved."""
    (out / "trainer_state.json").unlink()
    with (out / "completions.jsonl").open("a") as fh:
        fh.write(json.dumps({"step": 5, "prompt": "from the killed run"}) + "\n" + '{"step": 6, "pro')


@pytest.mark.slow
def test_resume_skips_a_truncated_newest_checkpoint_and_continues(run_copy, capsys, caplog):
    path, out = run_copy({"max_steps": 6})
    _killed_after_checkpoint_4(out)
    _truncate(out / "checkpoint-4" / "optimizer.pt")
    assert train_main([str(path), "--resume"]) == 0
    err = capsys.readouterr().err + caplog.text
    assert "skipping checkpoint-4: optimizer.pt is truncated" in err
    assert "resuming from" in err and "checkpoint-2" in err
    state = json.loads((out / "trainer_state.json").read_text())
    assert state["global_step"] == 6
    assert [h["step"] for h in state["log_history"] if "loss" in h] == [1, 2, 3, 4, 5, 6]
    rows = [json.loads(x) for x in (out / "completions.jsonl").read_text().splitlines()]
    assert sorted({r["step"] for r in rows}) == [1, 2, 3, 4, 5, 6] and "from the killed run" not in str(rows)
    steps = [r["step"] for r in rows]
    assert steps == sorted(steps)  # rows after checkpoint-2 were dropped, then logged once by the resumed steps
    assert len(set(Counter(steps).values())) == 1  # as many rows for each step: none twice


def test_no_complete_checkpoint_is_one_error_and_nothing_is_deleted(run_copy, capsys):
    path, out = run_copy({"max_steps": 6})
    _killed_after_checkpoint_4(out)
    (out / "checkpoint-4" / "rng_state.pth").unlink()
    _truncate(out / "checkpoint-2" / "model.safetensors")
    before = snapshot(out)
    assert train_main([str(path), "--resume"]) == 1
    err = capsys.readouterr().err
    error = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(error) == 1 and "no complete checkpoint" in error[0], err
    assert "checkpoint-4: no RNG state" in error[0] and "checkpoint-2: model.safetensors does not load" in error[0]
    assert "Traceback" not in err and "step 0" in error[0]
    assert snapshot(out) == before


def test_resume_of_a_finished_run_trains_nothing_and_changes_nothing(run_copy, capsys, caplog):
    path, out = run_copy()
    before = snapshot(out)
    start = time.perf_counter()
    assert train_main([str(path), "--resume"]) == 0
    assert time.perf_counter() - start < 5  # no model was loaded, no step trained
    err = capsys.readouterr().err + caplog.text
    assert "finished at step 4" in err and "raise trainer.max_steps to continue" in err
    assert snapshot(out) == before and not (out / "checkpoint-5").exists()
    result = train(path, resume=True)  # the Python API says the same
    assert result.global_step == 4 and [h["step"] for h in result.log_history if "loss" in h] == [1, 2, 3, 4]
    assert snapshot(out) == before


def test_resume_of_a_finished_run_without_checkpoints(tmp_path, make_recipe, capsys, caplog):
    path = make_recipe(trainer={"max_steps": 1})
    assert train_main([str(path)]) == 0
    before = snapshot(tmp_path / "out")
    assert train_main([str(path), "--resume"]) == 0
    assert "finished at step 1" in capsys.readouterr().err + caplog.text
    assert snapshot(tmp_path / "out") == before
    assert train_main([str(path), "--resume", "--set", "trainer.max_steps=2"]) == 1  # nothing to continue from
    assert "before its first checkpoint" in capsys.readouterr().err + caplog.text


@pytest.mark.parametrize(
    "change,key",
    [
        ({"trainer.num_generations": 2}, "trainer.num_generations"),
        ({"trainer.per_device_train_batch_size": 4}, "trainer.per_device_train_batch_size"),
        ({"trainer.gradient_accumulation_steps": 2}, "trainer.gradient_accumulation_steps"),
        ({"model.name": "OTHER"}, "model.name"),
        ({"model.revision": "other"}, "model.revision"),
    ],
)
def test_recipe_changes_that_make_a_resume_meaningless_are_errors(change, key, run_copy, tiny_model, capsys):
    path, out = run_copy({"max_steps": 6})
    _killed_after_checkpoint_4(out)
    before = snapshot(out)
    sets = []
    for k, v in change.items():
        v = str(Path(tiny_model).parent / "elsewhere") if v == "OTHER" else v
        sets += ["--set", f"{k}={json.dumps(v)}"]
    if key == "model.name":
        shutil.copytree(tiny_model, Path(tiny_model).parent / "elsewhere", dirs_exist_ok=True)
    assert train_main([str(path), "--resume", *sets]) == 1
    err = capsys.readouterr().err
    assert f": {key}: " in err and "since checkpoint-4" in err and "meaningless" in err, err
    assert snapshot(out) == before


@pytest.mark.slow
def test_recipe_changes_on_resume_are_listed_and_the_earlier_recipe_kept(run_copy, capsys, caplog):
    path, out = run_copy({"max_steps": 5})
    _killed_after_checkpoint_4(out)
    saved = (out / "recipe.yaml").read_text()
    assert train_main([str(path), "--resume", "--set", "trainer.learning_rate=5e-4", "--set", "trainer.seed=3"]) == 0
    err = capsys.readouterr().err + caplog.text
    assert "differs from the saved recipe.yaml" in err
    assert "trainer.learning_rate: 0.001 -> 0.0005" in err and "trainer.seed: 0 -> 3" in err
    assert (out / "recipe.step-4.yaml").read_text() == saved
    assert yaml.safe_load((out / "recipe.yaml").read_text())["trainer"]["learning_rate"] == 5e-4
    assert json.loads((out / "trainer_state.json").read_text())["global_step"] == 5


@pytest.mark.parametrize(("saved_by", "now"), [(1, 1), (2, 2), (3, 2)])
def test_a_checkpoint_saved_by_another_number_of_processes_is_refused(run_copy, saved_by, now):
    """Another world size changes the batch arithmetic: refused even where the checkpoint holds every RNG state the
    new launch needs (3 -> 2 processes)."""
    from grpo_trl.check import load_recipe
    from grpo_trl.recipe import RecipeError
    from grpo_trl.run.directory import Manifest
    from grpo_trl.run.resume import compare_recipe

    path, out = run_copy()
    ckpt = out / "checkpoint-4"
    if saved_by > 1:  # as transformers saves it under N processes: one RNG state file each
        rng = (ckpt / "rng_state.pth").read_bytes()
        (ckpt / "rng_state.pth").unlink()
        for i in range(saved_by):
            (ckpt / f"rng_state_{i}.pth").write_bytes(rng)
    assert checkpoint_problem(ckpt, world_size=now) is None
    recipe = load_recipe(path)
    if saved_by == now:
        compare_recipe(recipe, out, Manifest.load(out), ckpt, now)
    else:
        with pytest.raises(RecipeError, match=f"launch: {saved_by} -> {now} processes: batch"):
            compare_recipe(recipe, out, Manifest.load(out), ckpt, now)
