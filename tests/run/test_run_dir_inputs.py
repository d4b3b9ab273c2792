"""Bad run-directory input is one `error:` line naming the file or key, exit 1 (issue 20, item 8), never exit 70:
grpo-trl's files replaced by folders, `checkpoint-N` a file, a `global_step` written as a string, read-only folders
for `report`, `eval --model` and `GRPO_TRL_CACHE`, a disk that fills mid-run, an unwritable output_dir."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from grpo_trl.cli import main as cli_main
from grpo_trl.cli import train_main
from tests.conftest import snapshot

pytestmark = pytest.mark.fault


def _one_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in err and "internal error" not in err, err
    return lines[0]


def _mount(args: list[str], target: Path) -> None:
    if os.geteuid() != 0 or subprocess.run(["mount", *args, str(target)], capture_output=True).returncode:
        pytest.skip("mounting needs root")


@pytest.fixture
def read_only():
    """``make(folder)``: ``folder`` becomes a read-only bind mount of itself (the kernel refuses even root)."""
    mounted = []

    def make(folder: Path) -> Path:
        _mount(["--bind", str(folder)], folder)
        mounted.append(folder)
        _mount(["-o", "remount,bind,ro"], folder)
        return folder

    yield make
    for folder in reversed(mounted):
        subprocess.run(["umount", "--lazy", str(folder)], check=False)


# ------------------------------------------------------------------------------------ files replaced by folders
@pytest.mark.parametrize("name", ["lock", "lock.json", "manifest.json"])
def test_state_file_replaced_by_a_folder(name, run_copy, capsys):
    path, out = run_copy({"max_steps": 6})
    state = out / ".grpo-trl" / name
    state.unlink(missing_ok=True)
    state.mkdir()
    for args in (["--resume"], ["--overwrite"], []):
        assert train_main([str(path), *args]) == 1
        error = _one_error(capsys.readouterr().err)
        assert (
            error.startswith(f"error: {path}: trainer.output_dir: ")
            and f".grpo-trl/{name}, which is not a file" in error
        )


@pytest.mark.parametrize("name", ["recipe.yaml", "completions.jsonl"])
def test_log_or_recipe_replaced_by_a_folder_stops_before_training(name, run_copy, capsys):
    path, out = run_copy({"max_steps": 6})
    (out / "trainer_state.json").unlink()
    (out / name).unlink(missing_ok=True)
    (out / name).mkdir()
    before = snapshot(out)
    start = time.perf_counter()
    assert train_main([str(path), "--resume"]) == 1
    assert time.perf_counter() - start < 10  # before the model loads, not at the first write after a step
    error = _one_error(capsys.readouterr().err)
    assert f"holds {name}/, a folder where grpo-trl writes" in error
    assert {k: v for k, v in snapshot(out).items() if not k.startswith(".grpo-trl")} == {
        k: v for k, v in before.items() if not k.startswith(".grpo-trl")
    }


def test_checkpoint_that_is_a_file(run_copy, capsys):
    path, out = run_copy({"max_steps": 6})
    (out / "trainer_state.json").unlink()
    for f in (out / "checkpoint-4").iterdir():
        f.unlink()
    (out / "checkpoint-4").rmdir()
    (out / "checkpoint-4").write_text("not a checkpoint")
    assert train_main([str(path), "--resume"]) == 1  # was: trained steps 3-4, then exit 70 saving checkpoint-4
    assert "holds checkpoint-4, not a folder, where the trainer saves a checkpoint" in _one_error(
        capsys.readouterr().err
    )


@pytest.mark.parametrize("value", ['"4"', "4.0", "true", "-4", "null"])
def test_global_step_that_is_not_a_whole_number(value, run_copy, capsys):
    path, out = run_copy({"max_steps": 6})
    (out / "trainer_state.json").unlink()
    for ckpt in ("checkpoint-2", "checkpoint-4"):
        state_file = out / ckpt / "trainer_state.json"
        state = json.loads(state_file.read_text())
        state_file.write_text(json.dumps({**state, "global_step": json.loads(value)}))
    assert train_main([str(path), "--resume"]) == 1  # '"4"' was exit 70 (TypeError in the trainer's loop)
    error = _one_error(capsys.readouterr().err)
    assert (
        "no complete checkpoint" in error and "checkpoint-4: trainer_state.json is unreadable (global_step is" in error
    )


# ------------------------------------------------------------------------------------------- read-only folders
def test_report_on_a_read_only_output_dir(run_copy, read_only, capsys):
    _, out = run_copy()
    read_only(out)
    assert cli_main(["report", str(out)]) == 1
    error = _one_error(capsys.readouterr().err)
    assert error.startswith(f"error: {out}: cannot write ") and "Read-only file system" in error


def test_report_where_report_is_a_file(run_copy, capsys):
    from grpo_trl.run.directory import Manifest

    _, out = run_copy()
    (out / "report").write_text("x")
    m = Manifest.load(out)
    m.record("report")
    m.save()
    assert cli_main(["report", str(out)]) == 1
    assert f"cannot write {out / 'report'}" in _one_error(capsys.readouterr().err)


def test_cache_that_is_read_only(tmp_path, read_only, monkeypatch, capsys):
    import yaml

    cache = tmp_path / "cache"
    cache.mkdir()
    read_only(cache)
    monkeypatch.setenv("GRPO_TRL_CACHE", str(cache))
    recipe = {
        "model": {"name": "builtin:tiny"},
        "data": {"builder": "countdown", "source": "generate", "size": 8},
        "rewards": ["countdown"],
        "trainer": {"output_dir": str(tmp_path / "out"), "num_generations": 4, "per_device_train_batch_size": 8},
    }
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(recipe))
    assert cli_main(["data", str(tmp_path / "r.yaml"), "-n", "1"]) == 1
    error = _one_error(capsys.readouterr().err)
    assert error.startswith("error: environment: GRPO_TRL_CACHE: cannot build builtin:tiny") and "Read-only" in error


@pytest.mark.slow
def test_eval_of_a_read_only_model_folder(run_copy, read_only, capsys):
    path, out = run_copy()
    read_only(out)
    start = time.perf_counter()
    assert cli_main(["eval", str(path), "--model", str(out), "--split", "train", "--n", "1", "--limit", "2"]) == 1
    error = _one_error(capsys.readouterr().err)
    assert f"--model: cannot write '{out / 'eval.json'}' (Read-only file system)" in error
    assert time.perf_counter() - start < 60  # before generating (was: exit 70 after the whole generation)


# ------------------------------------------------------------------------------------------------- full disk
@pytest.mark.slow
def test_disk_that_fills_mid_run(tmp_path, make_recipe, monkeypatch, capsys):
    """A 700 KiB disk holds the run's logs but not its first checkpoint (~1.3 MB): the trainer's write fails."""
    disk = tmp_path / "disk"
    disk.mkdir()
    _mount(["-t", "tmpfs", "-o", "size=700k", "tmpfs"], disk)
    try:
        monkeypatch.setenv("GRPO_TRL_MIN_FREE_MB", "0")
        out = disk / "run"
        path = make_recipe(trainer={"output_dir": str(out), "save_strategy": "steps", "save_steps": 2})
        assert train_main([str(path)]) == 1  # was exit 70 (torch's "unexpected pos" / [Errno 28])
        error = _one_error(capsys.readouterr().err)
        assert error.startswith(f"error: {path}: trainer.output_dir: ") and "ran out of disk space" in error
        assert "--resume" in error
    finally:
        subprocess.run(["umount", "--lazy", str(disk)], check=False)  # detached even while a leftover process holds it


# ------------------------------------------------------------------------------------------- output_dir errors
def test_output_dir_errors_name_the_recipe_file(tmp_path, make_recipe, capsys):
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("x")
    path = make_recipe(trainer={"output_dir": str(blocker / "run")})
    assert train_main([str(path)]) == 1
    error = _one_error(capsys.readouterr().err)
    assert error.startswith(f"error: {path}: trainer.output_dir: '{blocker / 'run'}' is not writable"), error
