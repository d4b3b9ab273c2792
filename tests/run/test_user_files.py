"""A user's files and checkpoints are sacred (issue 20): a killed run's files are its own only where it recorded
them (the rest is never touched; --overwrite moves its own aside), --resume without a manifest adopts nothing, the
trainer's checkpoint rotation never deletes a folder --overwrite said it kept, and a kill while the tiny model or
the final save is being written leaves nothing that breaks the next run. Kills are real (SIGKILL/SIGTERM of a real
`grpo_trl.train` process)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_trl.cli import train_main
from grpo_trl.run.directory import Manifest
from tests.conftest import snapshot

pytestmark = pytest.mark.fault

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}

SLOW_REWARD = """
import time
from grpo_trl.rewards import register_reward

@register_reward("t_slow")
def slow(completions, **kwargs):
    time.sleep(0.3)
    return [0.0] * len(completions)
"""

# the final save made slow (its files all written, none yet in place) so a kill can land inside it
SLOW_FINAL_SAVE = """
import time
from pathlib import Path
import trl

_save = trl.GRPOTrainer.save_model

def save_model(self, output_dir=None, _internal_call=False):
    _save(self, output_dir, _internal_call)
    if not _internal_call:  # the final save, not a checkpoint's
        Path(self.args.output_dir, "FINAL_SAVE_WRITTEN").touch()
        time.sleep(60)

trl.GRPOTrainer.save_model = save_model
"""


def _start(path: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "grpo_trl.train", str(path), *args],
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _wait_for(proc: subprocess.Popen, ready, timeout: float = 240, every: float = 0.05) -> None:
    deadline = time.time() + timeout
    while not ready():
        assert proc.poll() is None, "the run ended before the moment to kill it"
        assert time.time() < deadline
        time.sleep(every)


def _kill(proc: subprocess.Popen, sig: int) -> None:
    proc.send_signal(sig)
    proc.wait(timeout=60)


# ------------------------------------------------------------------------------------------------- a killed run
def _visible(out: Path) -> dict:
    return {k: v for k, v in snapshot(out).items() if not k.startswith(".grpo-trl")}


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_files_made_after_a_kill_are_the_users(sig, tmp_path, make_recipe, capsys, caplog):
    (tmp_path / "slow.py").write_text(SLOW_REWARD)
    path = make_recipe(
        rewards=[{"name": "t_slow"}],
        trainer={"max_steps": 40, "save_strategy": "steps", "save_steps": 2},
        extra={"plugins": ["slow.py"]},
    )
    out = tmp_path / "out"
    proc = _start(path)
    _wait_for(proc, lambda: (out / "checkpoint-2" / "trainer_state.json").exists())
    _kill(proc, sig)
    (out / "tokenizer_notes.txt").write_text("mine")
    (out / "my_eval_results.json").write_text('{"acc": 0.5}')
    (out / "runs").mkdir()
    (out / "runs" / "x.csv").write_text("a,b\n")
    mine = {k: v for k, v in snapshot(out).items() if k.startswith(("tokenizer_notes", "my_eval", "runs"))}
    assert len(mine) == 3
    again = [str(path), "--overwrite", "--set", "trainer.max_steps=1", "--set", "trainer.save_steps=5"]
    before = _visible(out)
    from grpo_trl.rewards import unregister_reward

    try:  # the runs after the kill in this process (the plugin's t_slow registered here, so unregistered after)
        assert train_main(again) == 1  # runs/ is the user's (was: the killed run's, deleted), where the trainer logs
        err = capsys.readouterr().err
        assert "with names the trainer would overwrite or rotate: runs/;" in err, err[-2000:]
        assert _visible(out) == before
        shutil.move(out / "runs", tmp_path / "runs")
        assert train_main(again) == 0
    finally:
        unregister_reward("t_slow")
    err = capsys.readouterr().err + caplog.text
    assert "kept (not written by grpo-trl): my_eval_results.json, tokenizer_notes.txt" in err, err[-2000:]
    assert "moved the previous run's" in err and "checkpoint-2" in err
    assert {k: v for k, v in snapshot(out).items() if k in mine} == {k: v for k, v in mine.items() if "runs" not in k}


def test_a_recorded_name_the_user_made_after_the_kill_is_theirs(tmp_path):
    """Entries a run records before writing them (logs, checkpoints, README.md): one the user made after the run
    died is adopted as the run's, so --overwrite moves it aside with the run; it is never overwritten or deleted."""
    m = Manifest.load(tmp_path)
    m.record("completions.jsonl", "checkpoint-2", "README.md")
    m.save()
    (tmp_path / "checkpoint-2").mkdir()  # the run wrote this one, then died
    for name in ("completions.jsonl", "README.md"):  # made by the user after the kill
        (tmp_path / name).write_text(f"mine: {name}")
    again = Manifest.load(tmp_path)
    assert again.foreign() == []
    assert again.remove_own() == ["README.md", "checkpoint-2", "completions.jsonl"]
    for name in ("completions.jsonl", "README.md"):
        assert not (tmp_path / name).exists()
        assert (tmp_path / ".grpo-trl" / "previous" / name).read_text() == f"mine: {name}"


def test_a_killed_run_from_an_older_grpo_trl_drops_none_of_the_earlier_entries(tmp_path):
    """A manifest from an older grpo-trl (version 2, with run records; one never ended): its entries stay its own."""
    (tmp_path / "checkpoint-2").mkdir()
    (tmp_path / "completions.jsonl").write_text("{}\n")
    entries = {"checkpoint-2": {"kind": "checkpoint"}, "completions.jsonl": {"kind": "log"}}
    (tmp_path / ".grpo-trl").mkdir()
    older = {"version": 2, "entries": entries, "runs": [{"pid": 1, "ended": None}]}
    (tmp_path / ".grpo-trl" / "manifest.json").write_text(json.dumps(older))
    again = Manifest.load(tmp_path)
    assert again.foreign() == [] and sorted(again.entries) == ["checkpoint-2", "completions.jsonl"]


# ------------------------------------------------------------------------------------- --resume without a manifest
def test_resume_without_a_manifest_adopts_nothing(run_copy, capsys):
    path, out = run_copy({"max_steps": 6})
    shutil.rmtree(out / ".grpo-trl")  # another tool's output, or a copy without grpo-trl's state
    (out / "trainer_state.json").unlink()
    before = snapshot(out)
    assert train_main([str(path), "--resume"]) == 1
    err = capsys.readouterr().err
    error = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(error) == 1 and "has no .grpo-trl/manifest.json" in error[0] and "adopts none" in error[0], err
    assert error[0].startswith(f"error: {path}: trainer.output_dir: ")
    assert snapshot(out) == before and not (out / ".grpo-trl" / "manifest.json").exists()


# ---------------------------------------------------------------------------------- the trainer's checkpoint names
@pytest.mark.parametrize("limit", [1, 2])
def test_overwrite_refuses_user_folders_the_rotation_would_delete(limit, run_copy, capsys):
    path, out = run_copy()
    for name in ("checkpoint-1-best", "checkpoint-500.bak", "checkpoint-best"):
        (out / name).mkdir()
        (out / name / "model.safetensors").write_bytes(b"the user's weights")
    before = snapshot(out)
    assert train_main([str(path), "--overwrite", "--set", f"trainer.save_total_limit={limit}"]) == 1
    err = capsys.readouterr().err
    error = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(error) == 1, err
    assert "checkpoint-1-best/, checkpoint-500.bak/, checkpoint-best/" in error[0]
    assert "rotation would delete" in error[0] and "trainer.save_total_limit" in error[0]
    assert snapshot(out) == before  # not even grpo-trl's own entries were removed


@pytest.mark.slow
def test_without_rotation_the_kept_folders_are_kept(run_copy, capsys, caplog):
    """No save_total_limit: --overwrite keeps them, as it says, and the run never touches them."""
    path, out = run_copy({"max_steps": 2, "save_steps": 1})
    for name in ("checkpoint-1-best", "checkpoint-500.bak"):
        (out / name).mkdir()
        (out / name / "w.bin").write_bytes(b"x")
    mine = {k: v for k, v in snapshot(out).items() if k.startswith(("checkpoint-1-", "checkpoint-500"))}
    assert train_main([str(path), "--overwrite"]) == 0
    assert "kept (not written by grpo-trl): checkpoint-1-best/, checkpoint-500.bak/" in (
        capsys.readouterr().err + caplog.text
    )
    assert {k: v for k, v in snapshot(out).items() if k in mine} == mine


NAMES = st.one_of(
    st.from_regex(r"checkpoint-[0-9]{1,4}([-._][a-z0-9]{1,5})?", fullmatch=True),
    st.from_regex(r"checkpoint[-_.][a-z]{1,6}", fullmatch=True),
    st.from_regex(r"ckpt-[0-9]{1,3}", fullmatch=True),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.lists(NAMES, min_size=1, max_size=6, unique=True), same_mtime=st.booleans())
def test_rotation_candidates_cover_what_transformers_rotates(names, same_mtime, tmp_path_factory):
    """Whatever transformers' own rotate_checkpoints deletes is among grpo_trl's rotation_candidates."""
    from transformers.trainer_utils import rotate_checkpoints

    from grpo_trl.trl_adapter import rotation_candidates

    folder = tmp_path_factory.mktemp("rot")
    for i, name in enumerate(names):
        (folder / name).mkdir()
        stamp = 1_000_000 if same_mtime else 1_000_000 + 10 * i
        os.utime(folder / name, (stamp, stamp))
    (folder / "newest").mkdir()
    candidates = set(rotation_candidates(folder))
    rotate_checkpoints(str(folder), save_total_limit=1, use_mtime=True)
    deleted = {n for n in names if not (folder / n).exists()}
    assert deleted <= candidates, (deleted, candidates)
    assert all(n.startswith("checkpoint-") for n in candidates)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    names=st.lists(
        st.from_regex(r"checkpoint-[1-9][0-9]{0,3}([-._][a-z0-9]{1,5})?", fullmatch=True) | NAMES,
        min_size=1,
        max_size=6,
        unique=True,
    )
)
def test_a_checkpoint_is_what_the_trainer_resumes_from(names, tmp_path_factory):
    """One definition of a checkpoint name: grpo-trl's newest is transformers' get_last_checkpoint."""
    from transformers.trainer_utils import get_last_checkpoint

    from grpo_trl.run.names import kind_of
    from grpo_trl.run.resume import checkpoints
    from grpo_trl.trl_adapter import checkpoint_step

    folder = tmp_path_factory.mktemp("names")
    steps = set()
    for name in names:
        step = checkpoint_step(name)
        if step is not None and (name != f"checkpoint-{step}" or step in steps):
            continue  # checkpoint-007 beside checkpoint-7: the trainer never writes both
        steps.add(step)
        (folder / name).mkdir()
    found = checkpoints(folder)
    assert (str(found[0]) if found else None) == get_last_checkpoint(str(folder))
    assert {p.name for p in found} == {p.name for p in folder.iterdir() if kind_of(p.name) == "checkpoint"}


# ------------------------------------------------------------------------------------- kill -9 while writing
@pytest.mark.slow
def test_kill_while_the_tiny_model_is_built_breaks_nothing(tmp_path, capsys):
    import yaml

    out = tmp_path / "out"
    recipe = {
        "model": {"name": "builtin:tiny"},
        "data": {"builder": "countdown", "source": "generate", "size": 16, "system_prompt": "none"},
        "rewards": [{"name": "xml_format", "args": {"tags": ["think", "answer"], "per_tag": 0.25}}],
        "trainer": {
            "output_dir": str(out), "max_steps": 1, "num_generations": 4, "per_device_train_batch_size": 8,
            "max_completion_length": 8, "report_to": "none", "use_cpu": True, "bf16": False, "save_strategy": "no",
        },
    }  # fmt: skip
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(recipe))
    proc = _start(path)
    stage = out / ".grpo-trl"
    _wait_for(proc, lambda: any(stage.glob(".tiny-model.build*/tokenizer*")), every=0.002)
    _kill(proc, signal.SIGKILL)
    assert not (out / "tiny-model").exists()  # killed mid-build: nothing half-built in the model's place
    assert train_main([str(path), "--resume"]) == 0  # was: every later run failed to load tiny-model
    assert (out / "tiny-model" / "model.safetensors").is_file() and not list(stage.glob(".tiny-model.build*"))
    assert json.loads((out / "trainer_state.json").read_text())["global_step"] == 1


def test_a_tiny_model_half_written_in_place_is_rebuilt(tmp_path):
    from grpo_trl.models.load import build_once
    from grpo_trl.models.tiny import build_tiny_model

    (tmp_path / "tiny-model").mkdir()
    (tmp_path / "tiny-model" / "tokenizer.json").write_text("")  # an older grpo-trl killed while building in place
    assert build_once(build_tiny_model, tmp_path / "tiny-model", tmp_path / ".grpo-trl") == str(
        tmp_path / "tiny-model"
    )
    from transformers import AutoModelForCausalLM, AutoTokenizer

    AutoTokenizer.from_pretrained(tmp_path / "tiny-model")
    AutoModelForCausalLM.from_pretrained(tmp_path / "tiny-model")


@pytest.mark.slow
def test_kill_during_the_final_save_then_resume_makes_it_again(tmp_path, make_recipe, capsys, caplog):
    (tmp_path / "slow_save.py").write_text(SLOW_FINAL_SAVE)
    path = make_recipe(trainer={"max_steps": 2, "save_strategy": "steps", "save_steps": 2})
    out = tmp_path / "out"
    proc = _start(path, "--set", "plugins=[slow_save.py]")
    _wait_for(proc, lambda: (out / "FINAL_SAVE_WRITTEN").exists())
    _kill(proc, signal.SIGKILL)
    (out / "FINAL_SAVE_WRITTEN").unlink()
    assert (out / "checkpoint-2" / "trainer_state.json").is_file()
    assert not (out / "trainer_state.json").exists() and not (out / "config.json").exists()  # none of it in place
    assert train_main([str(path), "--resume"]) == 0
    err = capsys.readouterr().err + caplog.text
    assert "the final save of step 2 was not whole" in err and "finished at" not in err
    _loads(out)
    assert json.loads((out / "trainer_state.json").read_text())["global_step"] == 2
    assert not (out / ".grpo-trl" / "final-save").exists()
    assert train_main([str(path), "--resume"]) == 0  # now it is finished
    assert "finished at step 2" in capsys.readouterr().err + caplog.text


def _loads(out: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    AutoTokenizer.from_pretrained(out)
    AutoModelForCausalLM.from_pretrained(out)


@pytest.mark.slow
def test_a_final_save_cut_short_is_not_finished(run_copy, capsys, caplog):
    """What a kill in the final save left before it was written whole: a 0-byte tokenizer_config.json and no
    trainer_state.json at the top, checkpoint-4 at max_steps. --resume makes the final save again from checkpoint-4
    (was: "finished, nothing trained" over an unloadable model)."""
    path, out = run_copy()
    (out / "trainer_state.json").unlink()
    (out / "tokenizer_config.json").write_bytes(b"")
    before = snapshot(out / "checkpoint-4")
    start = time.perf_counter()
    assert train_main([str(path), "--resume"]) == 0
    assert time.perf_counter() - start < 5  # no model loaded, no step trained
    err = capsys.readouterr().err + caplog.text
    assert "the final save of step 4 was not whole" in err and "made it again from checkpoint-4" in err
    assert "finished at" not in err and snapshot(out / "checkpoint-4") == before
    _loads(out)
    assert json.loads((out / "trainer_state.json").read_text())["global_step"] == 4
