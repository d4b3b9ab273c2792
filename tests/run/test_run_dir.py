"""The output directory is the user's: foreign entries stop a fresh run before the model loads, --overwrite moves
aside only grpo-trl's entries, one run per directory (a real second process holds the lock), a killed run's files
are its own only where its manifest recorded them, bad output_dir values are `check` errors, and `grpo-trl data`
writes nothing there."""

from __future__ import annotations

import json
import os
import signal
import string
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grpo_trl.check import load_recipe
from grpo_trl.cli import main as cli_main
from grpo_trl.cli import train_main
from grpo_trl.run.directory import Manifest, RunLock, output_dir_problems
from tests.conftest import snapshot

pytestmark = pytest.mark.fault

ROOT = Path(__file__).resolve().parents[2]


def _foreign_entries(out: Path) -> list[str]:
    """One of each kind a user leaves in a folder; returns the names as the error lists them."""
    (out / "checkpoint-best").mkdir(parents=True)
    (out / "checkpoint-best" / "model.safetensors").write_bytes(b"weights I care about")
    (out / "checkpoint-7").mkdir()  # partial, no trainer state, not in any manifest
    (out / "checkpoint-7" / "config.json").write_text("{}")
    (out / "completions.jsonl").write_text('{"mine": 1}\n')  # a name grpo-trl itself uses
    (out / "notes.txt").write_text("do not lose")
    os.symlink("/nonexistent-target", out / "link")
    return ["checkpoint-7/", "checkpoint-best/", "completions.jsonl", "link", "notes.txt"]


def test_fresh_run_into_foreign_content_stops_before_the_model_loads(tmp_path, make_recipe, capsys):
    out = tmp_path / "out"
    names = _foreign_entries(out)
    before = snapshot(out)
    path = make_recipe()
    load_recipe(path)  # imports and registries warm (the first test of a process pays them), then time the refusal
    start = time.perf_counter()
    assert train_main([str(path)]) == 1
    err = capsys.readouterr().err
    assert time.perf_counter() - start < 5
    assert "did not write" in err and all(n in err for n in names), err
    assert "Traceback" not in err and err.count("\n") == 1
    assert snapshot(out) == before and not (out / "tiny-model").exists() and not (out / "recipe.yaml").exists()


@pytest.mark.parametrize("clash", ["checkpoint-7", "config.json", "README.md", "model.safetensors", "runs"])
def test_overwrite_refuses_foreign_entries_the_trainer_would_clobber(run_copy, clash, capsys):
    path, out = run_copy()
    target = out / clash
    target.mkdir() if clash in ("checkpoint-7", "runs") else None
    if clash not in ("checkpoint-7", "runs"):
        (out / clash).unlink()  # as if the run had not written it (forgotten by the next sync)...
        Manifest.load(out).sync()
        target.write_text("the user's")  # ...and the user put their own there
        mtime = time.time() - 86400
        os.utime(target, (mtime, mtime))  # older than any run: not adoptable
    else:
        (target / "mine.txt").write_text("x")
    before = snapshot(out)
    assert train_main([str(path), "--overwrite"]) == 1
    err = capsys.readouterr().err
    assert clash in err and "would overwrite or rotate" in err
    assert snapshot(out) == before  # not even grpo-trl's own entries were removed


@pytest.mark.slow
def test_overwrite_removes_only_own_entries_and_lists_the_kept(run_copy, capsys, caplog):
    path, out = run_copy({"max_steps": 2, "save_strategy": "no"})
    (out / "notes.txt").write_text("do not lose")
    (out / "checkpoint-best").mkdir()
    (out / "checkpoint-best" / "w.bin").write_bytes(b"x" * 10)
    mine = {k: v for k, v in snapshot(out).items() if k.startswith(("notes", "checkpoint-best"))}
    assert train_main([str(path), "--overwrite"]) == 0
    err = capsys.readouterr().err + caplog.text
    assert "kept (not written by grpo-trl): checkpoint-best/, notes.txt" in err
    assert "moved the previous run's" in err and "checkpoint-4" in err
    assert {k: v for k, v in snapshot(out).items() if k in mine} == mine
    assert not (out / "checkpoint-4").exists() and not (out / "checkpoint-2").exists()
    assert (out / ".grpo-trl" / "previous" / "checkpoint-4" / "trainer_state.json").is_file()  # moved, not deleted
    rows = [json.loads(x) for x in (out / "completions.jsonl").read_text().splitlines()]
    assert {r["step"] for r in rows} == {1, 2}  # the new run's log only
    assert train_main([str(path)]) == 1  # a plain run still refuses to start beside them
    assert "did not write: checkpoint-best/, notes.txt" in capsys.readouterr().err


def test_fresh_run_over_a_previous_run_refuses(run_copy, capsys):
    path, out = run_copy()
    before = snapshot(out)
    assert train_main([str(path)]) == 1
    err = capsys.readouterr().err
    assert "already holds checkpoint-4" in err and "--resume" in err and "--overwrite" in err
    assert snapshot(out) == before


HOLD_LOCK = """
import sys, time
from grpo_trl.run.directory import RunLock
lock = RunLock(sys.argv[1])
assert lock.acquire() is None
print("locked", flush=True)
time.sleep(120)
"""


def _holder(folder: Path) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(folder)],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline().strip() == "locked"
    return proc


@pytest.mark.slow
def test_two_concurrent_trains_the_second_fails_within_a_second(tmp_path, make_recipe, capsys):
    (tmp_path / "slow.py").write_text(
        "import time\nfrom grpo_trl.rewards import register_reward\n\n"
        "@register_reward('t_sleepy')\ndef sleepy(completions, **kw):\n"
        "    time.sleep(1)\n    return [0.0] * len(completions)\n"
    )
    path = make_recipe(rewards=[{"name": "t_sleepy"}], trainer={"max_steps": 50}, extra={"plugins": ["slow.py"]})
    out = tmp_path / "out"
    first = subprocess.Popen(
        [sys.executable, "-m", "grpo_trl.train", str(path)],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.time() + 120
        while not (out / ".grpo-trl" / "lock.json").exists():
            assert first.poll() is None and time.time() < deadline
            time.sleep(0.05)
        for args in ([], ["--resume"], ["--overwrite"]):
            start = time.perf_counter()
            assert train_main([str(path), *args]) == 1
            assert time.perf_counter() - start < 1.0
            err = capsys.readouterr().err
            assert f"in use by another run: PID {first.pid}" in err, err
        assert first.poll() is None  # the first run is untouched
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()


def test_lock_of_a_killed_process_is_taken_over_with_a_warning(tmp_path, caplog):
    proc = _holder(tmp_path)
    assert f"in use by another run: PID {proc.pid}" in RunLock(tmp_path).acquire()
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert json.loads((tmp_path / ".grpo-trl" / "lock.json").read_text())["pid"] == proc.pid  # left behind
    lock = RunLock(tmp_path)
    assert lock.acquire() is None
    assert f"taking over the lock of PID {proc.pid}" in caplog.text
    assert json.loads((tmp_path / ".grpo-trl" / "lock.json").read_text())["pid"] == os.getpid()
    lock.release()
    assert not (tmp_path / ".grpo-trl" / "lock.json").exists()


def test_a_killed_runs_files_are_its_own_only_where_recorded(tmp_path):
    """No time window: what the killed run recorded (and wrote) is its own, anything else stays foreign; --overwrite
    moves only the recorded entries aside, never deleting or overwriting a file, and a second one does not replace
    the first one's aside folder."""
    old = tmp_path / "checkpoint-9"  # a user's copy, made before the run
    old.mkdir()
    m = Manifest.load(tmp_path)
    m.record("checkpoint-2", "completions.jsonl", "README.md")  # recorded before written; then the run is killed
    m.save()
    for name in ("checkpoint-2", "runs"):
        (tmp_path / name).mkdir()
    for name in ("model.safetensors", "config.json", "completions.jsonl", "README.md", "notes.txt", "ckpt-7"):
        (tmp_path / name).write_text(f"{name} x")
    again = Manifest.load(tmp_path)
    assert sorted(again.entries) == ["README.md", "checkpoint-2", "completions.jsonl"]
    foreign = ["checkpoint-9", "ckpt-7", "config.json", "model.safetensors", "notes.txt", "runs"]
    assert again.foreign() == foreign  # written unannounced: not adopted after the kill
    assert again.remove_own() == ["README.md", "checkpoint-2", "completions.jsonl"]
    aside = tmp_path / ".grpo-trl" / "previous"
    assert (aside / "README.md").read_text() == "README.md x" and (aside / "checkpoint-2").is_dir()
    assert Manifest.load(tmp_path).foreign() == foreign and (tmp_path / "notes.txt").read_text() == "notes.txt x"
    (tmp_path / "README.md").write_text("second")
    later = Manifest.load(tmp_path)
    later.record("README.md")
    assert later.remove_own() == ["README.md"]
    assert (aside / "README.md").read_text() == "README.md x"  # the first aside folder is kept whole
    assert (tmp_path / ".grpo-trl" / "previous-2" / "README.md").read_text() == "second"
    (tmp_path / "config.json").unlink()
    later.sync()
    assert "config.json" not in Manifest.load(tmp_path).entries  # gone entries are forgotten


def test_a_live_run_adopts_what_the_trainer_wrote_unannounced(tmp_path):
    from transformers import TrainerControl, TrainerState

    from grpo_trl.run.writes import ManifestCallback

    (tmp_path / "notes.txt").write_text("mine")
    m = Manifest.load(tmp_path)
    m.record("alerts.jsonl")  # recorded before it is written (at the first alert)
    (tmp_path / "completions").mkdir()  # TRL's parquet logs, made in GRPOTrainer's __init__: no callback before it
    ManifestCallback(m).on_train_begin(None, TrainerState(), TrainerControl())
    assert sorted(Manifest.load(tmp_path).entries) == ["alerts.jsonl", "completions"]  # before any kill can land
    (tmp_path / "runs").mkdir()  # tensorboard's, made while the run holds the lock
    (tmp_path / "my_eval.txt").write_text("mine too")
    m.sync(live=True)  # what the run's end does (RunSession.__exit__)
    assert sorted(m.entries) == ["completions", "runs"]  # alerts.jsonl never came: forgotten
    assert Manifest.load(tmp_path).foreign() == ["my_eval.txt", "notes.txt"]


def _git_project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / "src").mkdir()
    return project


@pytest.mark.parametrize(
    "value,words",
    [
        ("", "is empty"),
        ("   ", "is empty"),
        (".", "is the current directory"),
        ("./", "is the current directory"),
        ("..", "holds the current directory"),
        ("/", "is the filesystem root"),
        ("~", "is your home directory"),
        ("HOME", "is your home directory"),
        ("PROJECT", "is the project (its git root)"),
        ("RECIPE_DIR", "is the recipe's directory"),
        ("RECIPE_DIR/..", "holds the recipe's directory"),
        ("RUN/checkpoint-4/more", "is inside the checkpoint"),
        ("RUN/checkpoint-4", "is inside the output_dir"),
        ("RUN/nested", "is inside the output_dir"),
    ],
)
def test_bad_output_dirs_are_check_errors(value, words, tmp_path, run_copy, monkeypatch, capsys):
    path, out = run_copy()
    project = _git_project(tmp_path)
    recipe_dir = tmp_path / "recipes"
    recipe_dir.mkdir()
    monkeypatch.chdir(project / "src" if value == "PROJECT" else project)
    for key, real in (("HOME", str(Path.home())), ("PROJECT", str(project)), ("RECIPE_DIR", str(recipe_dir))):
        value = value.replace(key, real)
    value = value.replace("RUN", str(out))
    problems = output_dir_problems(value, recipe_dir)
    assert any(words in p for p in problems), problems
    text = path.read_text().replace(f"output_dir: {out}", f"output_dir: '{value}'")
    (recipe_dir / "r.yaml").write_text(text)
    assert cli_main(["check", str(recipe_dir / "r.yaml")]) == 1
    err = capsys.readouterr().err
    assert "trainer.output_dir" in err and words in err and "Traceback" not in err


def test_good_output_dirs_pass(tmp_path, trained_run):
    for value in ("outputs/run1", str(tmp_path / "a" / "b"), str(trained_run.parent / "sibling"), None):
        assert output_dir_problems(value, tmp_path / "recipes", cwd=tmp_path) == []


def test_data_command_writes_no_tiny_model_into_output_dir(tmp_path, monkeypatch, capsys):
    import yaml

    monkeypatch.setenv("GRPO_TRL_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "out"
    recipe = {
        "model": {"name": "builtin:tiny"},
        "data": {"builder": "countdown", "source": "generate", "size": 8},
        "rewards": ["countdown"],
        "trainer": {"output_dir": str(out), "num_generations": 4, "per_device_train_batch_size": 8},
    }
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(recipe))
    assert cli_main(["data", str(tmp_path / "r.yaml"), "-n", "1"]) == 0
    assert "<|im_start|>" in capsys.readouterr().out
    assert not out.exists()
    assert [p.name for p in (tmp_path / "cache").iterdir()][0].startswith("tiny-model-")


def test_report_is_recorded_so_overwrite_may_replace_it(run_copy):
    from grpo_trl.report.page import write_report

    path, out = run_copy()
    write_report(out)
    assert Manifest.load(out).entries["report"] == {"kind": "report"}
    assert Manifest.load(out).foreign() == []


@given(
    parts=st.lists(
        st.text(alphabet=string.ascii_letters + string.digits + "_-. ", min_size=1, max_size=8), max_size=4
    ),
    up=st.integers(min_value=1, max_value=4),
)
def test_subfolders_are_fine_and_ancestors_of_the_project_are_not(parts, up):
    cwd = Path("/srv/grpo-prop/team/project")  # need not exist: the rules read paths, not contents
    parts = [p for p in parts if p.strip(" .")]  # ".", "..", " " are not subfolders
    if parts:
        assert output_dir_problems("/".join(parts), cwd.parent / "recipes", cwd=cwd) == []
    problems = output_dir_problems("../" * up, cwd.parent / "recipes", cwd=cwd)
    assert any("holds the current directory" in p for p in problems), problems
