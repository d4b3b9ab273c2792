"""Inputs an adversarial pass found ending in a traceback, an internal error (exit 70), a hang, an overwritten user
file, or a check that passed what training then crashed on. Each is now exit 1 and `error:` lines naming the key.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_trl.cli import main as cli_main
from grpo_trl.io import read_jsonl
from grpo_trl.recipe import RecipeError
from grpo_trl.run.directory import Manifest, RunLock
from grpo_trl.run.resume import checkpoint_problem, keep_until, read_state
from tests.check.test_bad_recipes import GOOD, _check_good_with

pytestmark = pytest.mark.fault  # a fault probe: `make faults` selects it

ROOT = Path(__file__).resolve().parents[2]


def _error_lines(capsys) -> list[str]:
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err, err
    return [line for line in err.splitlines() if line.strip()]


# ------------------------------------------------------------------------------------------------ recipe files
def test_nul_byte_in_a_recipe_is_an_error_line(tmp_path, capsys):
    path = tmp_path / "r.yaml"
    path.write_bytes(b"model: {name: builtin:tiny}\nx: 1\x00\n")
    assert cli_main(["check", str(path)]) == 1  # was exit 70: PyYAML's reader error escaped
    lines = _error_lines(capsys)
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}: not valid YAML"), lines


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_recipe_that_is_an_endless_device_is_refused_without_reading_it_all(tmp_path, capsys, device):
    path = tmp_path / "r.yaml"
    path.symlink_to(device)  # stat() says 0 bytes: the size check alone read forever
    assert cli_main(["check", str(path)]) == 1
    lines = _error_lines(capsys)
    assert len(lines) == 1 and "is a device, not a recipe" in lines[0], lines  # refused unread (the one reader)


# ------------------------------------------------------------------------------ values check passed, train crashed
CHECKED = [
    # (--set arguments, key named, words): each passed `check`, then crashed (exit 70) or trained nothing mid-run
    (["model.lora={r: 0}"], "model.lora.r", "positive integer"),
    (["model.lora={r: -1}"], "model.lora.r", "positive integer"),
    (["model.lora={r: 8, lora_dropout: 5}"], "model.lora.lora_dropout", "between 0 and 1"),
    (["model.lora={target_modules: 5}"], "model.lora.target_modules", "got int 5"),
    (["trainer.top_k=-3"], "trainer.top_k", "must be >= -1"),
    (["trainer.top_p=2"], "trainer.top_p", "must be <= 1"),
    (["trainer.top_p=-0.5"], "trainer.top_p", "positive"),
    (["trainer.min_p=2"], "trainer.min_p", "must be <= 1"),
    (["trainer.repetition_penalty=0"], "trainer.repetition_penalty", "positive"),
    (["model.name="], "model.name", "is empty"),
    (["model.name=/no/such/model/folder"], "model.name", "path that does not exist"),
    (["data.eval_size=16", "trainer.max_steps=1"], "data.eval_size", "holds out"),
    (["data.eval_size=100", "trainer.max_steps=1"], "data.eval_size", "holds out"),
]


@pytest.mark.parametrize(("sets", "named", "words"), CHECKED, ids=[" ".join(c[0]) for c in CHECKED])
def test_check_refuses_what_training_would_crash_on(tmp_path, capsys, sets, named, words):
    lines = _check_good_with(tmp_path, capsys, sets)
    assert len(lines) == 1 and f": {named}: " in lines[0] and words in lines[0], lines


@pytest.mark.parametrize("content", [b"- a list\n", b"just text\n", b"\xff\xfe not utf-8", b"a: [unclosed\n"])
def test_accelerate_config_that_is_not_a_mapping_is_an_error_line(tmp_path, capsys, content):
    (tmp_path / "accel.yaml").write_bytes(content)
    path = tmp_path / "good.yaml"
    path.write_text(yaml.safe_dump({**GOOD, "launch": {"accelerate_config": "accel.yaml"}}))
    assert cli_main(["check", str(path)]) == 1  # a YAML string here was exit 70 ('str' has no attribute 'get')
    lines = _error_lines(capsys)
    assert len(lines) == 1 and ": launch.accelerate_config: " in lines[0], lines


def test_accelerate_config_not_found_is_said_not_silently_planned_as_ddp(tmp_path, capsys):
    path = tmp_path / "good.yaml"
    path.write_text(yaml.safe_dump({**GOOD, "launch": {"accelerate_config": "zer03"}}))
    assert cli_main(["check", str(path)]) == 0
    assert "warning: launch.accelerate_config 'zer03' not found" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------------- schema -o
@pytest.mark.parametrize("where", ["folder", "under a file", "missing parent", "a user's file"])
def test_schema_output_that_cannot_or_must_not_be_written(tmp_path, capsys, where):
    (tmp_path / "notes.txt").write_text("mine")
    target = {
        "folder": tmp_path,
        "under a file": tmp_path / "notes.txt" / "s.json",
        "missing parent": tmp_path / "nope" / "s.json",
        "a user's file": tmp_path / "notes.txt",
    }[where]
    assert cli_main(["schema", "-o", str(target)]) == 1  # was exit 70, or the user's file silently replaced
    lines = _error_lines(capsys)
    assert len(lines) == 1 and lines[0].startswith("error: --output: "), lines
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_schema_output_replaces_its_own_schema(tmp_path, capsys):
    target = tmp_path / "s.json"
    assert cli_main(["schema", "-o", str(target)]) == 0
    assert cli_main(["schema", "-o", str(target)]) == 0
    assert "x-trl-version" in json.loads(target.read_text())


# ------------------------------------------------------------------------------------------------ environment
@pytest.mark.parametrize("value", ["abc", "-5", "", "1.5", "²"])  # "²".isdigit(), int() refuses it
def test_bad_min_free_env_is_an_error_line_not_an_import_traceback(tmp_path, value):
    env = {**os.environ, "GRPO_TRL_MIN_FREE_MB": value, "PYTHONPATH": str(ROOT)}
    help_run = subprocess.run(
        [sys.executable, "-m", "grpo_trl.cli", "--help"], env=env, capture_output=True, text=True
    )
    assert help_run.returncode == 0 and "Traceback" not in help_run.stderr  # was a ValueError at import: every command
    from grpo_trl.train import check_output_dir

    old = os.environ.get("GRPO_TRL_MIN_FREE_MB")
    os.environ["GRPO_TRL_MIN_FREE_MB"] = value
    try:
        with pytest.raises(RecipeError, match="GRPO_TRL_MIN_FREE_MB: must be a whole number"):
            check_output_dir(tmp_path / "out")
    finally:
        os.environ.pop("GRPO_TRL_MIN_FREE_MB") if old is None else os.environ.__setitem__("GRPO_TRL_MIN_FREE_MB", old)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(st.characters(whitelist_categories=("Nd", "No", "Nl")) | st.sampled_from("09 -.x"), max_size=4))
def test_any_min_free_env_value_is_accepted_or_one_recipe_error(tmp_path, monkeypatch, value):
    """Whatever GRPO_TRL_MIN_FREE_MB holds, the output-dir check passes or raises RecipeError, never a ValueError."""
    from grpo_trl.train import check_output_dir

    monkeypatch.setenv("GRPO_TRL_MIN_FREE_MB", value)
    try:
        check_output_dir(tmp_path / "out")
    except RecipeError as exc:
        assert "GRPO_TRL_MIN_FREE_MB" in str(exc)


# ------------------------------------------------------------------------------------ run directory state files
MANIFESTS = [
    "[]",
    '"x"',
    '{"entries": [1, 2]}',
    '{"entries": "abc"}',
    '{"entries": {"config.json": 5}}',
    '{"runs": [1]}',
    '{"runs": "abc"}',
    '{"runs": [{"fs_start": "x"}]}',
    '{"runs": [{"fs_start": null, "ended": null}]}',
]


@pytest.mark.parametrize("content", MANIFESTS)
def test_malformed_manifest_trusts_nothing_and_deletes_nothing(tmp_path, content):
    (tmp_path / ".grpo-trl").mkdir()
    (tmp_path / ".grpo-trl" / "manifest.json").write_text(content)
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "notes.txt").write_text("mine")
    m = Manifest.load(tmp_path)  # each was a TypeError/AttributeError (exit 70) in load or sync
    m.sync()
    assert m.foreign() == ["config.json", "notes.txt"]
    assert m.remove_own() == [] and (tmp_path / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("content", ['"x"', "5", "[]", "null"])
def test_malformed_lock_json_is_taken_over(tmp_path, content):
    (tmp_path / ".grpo-trl").mkdir()
    (tmp_path / ".grpo-trl" / "lock.json").write_text(content)
    lock = RunLock(tmp_path)
    assert lock.acquire() is None  # was AttributeError: 'str' object has no attribute 'get'
    assert json.loads((tmp_path / ".grpo-trl" / "lock.json").read_text())["pid"] == os.getpid()
    lock.release()


def test_state_folder_that_is_a_file_is_an_error_line(make_recipe, tmp_path, capsys):
    from grpo_trl.cli import train_main

    out = tmp_path / "out"
    out.mkdir()
    (out / ".grpo-trl").write_text("not a folder")
    path = make_recipe()
    assert train_main([str(path)]) == 1  # was exit 70 (FileExistsError)
    lines = _error_lines(capsys)
    assert len(lines) == 1 and ": trainer.output_dir: " in lines[0] and ".grpo-trl" in lines[0], lines
    assert (out / ".grpo-trl").read_text() == "not a folder"


@pytest.mark.parametrize("step", ["Infinity", "-Infinity", "1e400"])
def test_trainer_state_with_an_infinite_step_is_a_broken_checkpoint(tmp_path, step):
    ckpt = tmp_path / "checkpoint-2"
    ckpt.mkdir()
    (ckpt / "trainer_state.json").write_text(f'{{"global_step": {step}, "max_steps": 4}}')
    assert "trainer_state.json is unreadable" in checkpoint_problem(ckpt)  # was OverflowError (exit 70)
    assert read_state(ckpt / "trainer_state.json")[0] is None


def test_log_with_a_bad_byte_costs_its_line_not_the_resume(tmp_path):
    log = tmp_path / "completions.jsonl"
    log.write_bytes(b'{"step": 1}\n{"step": 2, "text": "\xff"}\n{"step": 3}\n{"step": 4, "te')
    assert [r["step"] for r in read_jsonl(log)] == [1, 2, 3]  # was UnicodeDecodeError (exit 70) on --resume
    assert [r["step"] for r in keep_until(log, 2)] == [1, 2]
    assert [json.loads(line)["step"] for line in log.read_text().splitlines()] == [1, 2]


# ------------------------------------------------------------------------------------------------------ report
STATE = {"global_step": 2, "log_history": [{"loss": 0.1, "step": 1, "reward": 0.5}, {"loss": 0.2, "step": 2}]}
REPORT_INPUTS = [
    # (file, content): what a killed run or a hand edit leaves; each was exit 70 in `grpo-trl report`
    ("completions.jsonl", '{"step": 1, "prompt": "p", "completion": "<b>"}\n{"step": 2, "compl'),  # cut by a kill
    ("alerts.jsonl", '{"step": 1}\n[1, 2]\n'),
    ("completions.jsonl", '{"step": 1, "prompt": ["a"], "turns": "x"}\n{"step": "2"}\n'),
    ("checkpoint-best/trainer_state.json", "{}"),
]


@pytest.mark.parametrize(("name", "content"), REPORT_INPUTS, ids=[f"{n}:{c[:20]}" for n, c in REPORT_INPUTS])
def test_report_survives_cut_and_odd_logs(tmp_path, capsys, name, content):
    (tmp_path / "trainer_state.json").write_text(json.dumps(STATE))
    (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / name).write_text(content)
    if name.startswith("checkpoint-best"):
        (tmp_path / "trainer_state.json").unlink()
        (tmp_path / "checkpoint-2").mkdir()
        (tmp_path / "checkpoint-2" / "trainer_state.json").write_text(json.dumps(STATE))
    assert cli_main(["report", str(tmp_path)]) == 0, capsys.readouterr().err
    html = (tmp_path / "report" / "report.html").read_text()
    assert "<b>" not in content or "&lt;b&gt;" in html  # model output is escaped


@pytest.mark.parametrize("state", ["{not json", "[1, 2]", '{"log_history": 5}'])
def test_report_on_an_unreadable_trainer_state_is_an_error_line(tmp_path, capsys, state):
    (tmp_path / "trainer_state.json").write_text(state)
    assert cli_main(["report", str(tmp_path)]) == 1
    lines = _error_lines(capsys)
    assert len(lines) == 1 and "trainer_state.json" in lines[0], lines


def test_report_does_not_adopt_a_users_report_folder(tmp_path, capsys):
    (tmp_path / "trainer_state.json").write_text(json.dumps(STATE))
    Manifest(tmp_path).save()  # a grpo-trl run directory...
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "report.html").write_text("my own")  # ...with the user's own report/ beside it
    assert cli_main(["report", str(tmp_path)]) == 1
    assert "did not write it" in _error_lines(capsys)[0]
    assert (tmp_path / "report" / "report.html").read_text() == "my own"
    assert "report" not in Manifest.load(tmp_path).entries  # so `train --overwrite` will not remove it


# ------------------------------------------------------------------------------------------------------ filter
@pytest.mark.parametrize("content", ['{"question": "1+1?", "solution": "2"}\n', "my notes", '{"other": 1}', ""])
def test_filter_never_overwrites_a_file_it_did_not_write(make_recipe, tmp_path, capsys, content):
    output = tmp_path / "problems.jsonl"  # the user's data, named by mistake
    output.write_text(content)
    argv = ["filter", str(make_recipe()), "--n", "1", "--limit", "1", "--max-new-tokens", "2", "--output", str(output)]
    assert cli_main(argv) == 1  # was: generated, then replaced the file with pass rates
    lines = _error_lines(capsys)
    assert len(lines) == 1 and ": --output: " in lines[0] and "not a pass-rate file" in lines[0], lines
    assert output.read_text() == content


# -------------------------------------------------------------------------------------------------------- eval
@pytest.mark.parametrize(("name", "content"), [("eval.json", '{"accuracy": 0.9}'), ("eval_completions.jsonl", "x")])
def test_eval_never_overwrites_results_it_did_not_write(make_recipe, tmp_path, capsys, name, content):
    out = tmp_path / "results"
    out.mkdir()
    (out / name).write_text(content)  # another tool's results in the folder eval writes to
    flags = ["--split", "train", "--n", "1", "--limit", "1", "--max-new-tokens", "2", "--output-dir", str(out)]
    assert cli_main(["eval", str(make_recipe()), *flags]) == 1  # was: generated, then replaced it
    lines = _error_lines(capsys)
    assert len(lines) == 1 and ": --output-dir: " in lines[0] and name in lines[0], lines
    assert (out / name).read_text() == content


def test_eval_replaces_its_own_results(make_recipe, tmp_path, capsys):
    flags = ["--split", "train", "--n", "1", "--limit", "1", "--max-new-tokens", "2", "--output-dir", str(tmp_path)]
    path = make_recipe()
    assert cli_main(["eval", str(path), *flags]) == 0
    assert cli_main(["eval", str(path), *flags]) == 0
    assert json.loads((tmp_path / "eval.json").read_text())["backend"] == "transformers"


# ------------------------------------------------------------------------------------------------ train flags
def test_resume_and_overwrite_together_is_a_usage_error(make_recipe, capsys):
    assert cli_main(["train", str(make_recipe()), "--resume", "--overwrite"]) == 1  # --overwrite was ignored
    lines = _error_lines(capsys)
    assert len(lines) == 1 and "not allowed with argument --resume" in lines[0], lines


def test_resume_and_overwrite_together_in_the_api_is_an_error(make_recipe):
    from grpo_trl.check import load_recipe
    from grpo_trl.train import run

    with pytest.raises(RecipeError, match="--resume and --overwrite together"):
        run(load_recipe(make_recipe()), resume=True, overwrite=True)


def test_a_rank_that_is_not_a_number_is_an_error_line(make_recipe, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("RANK", "abc")
    assert cli_main(["train", str(make_recipe())]) == 1  # was exit 70 (int('abc'))
    lines = _error_lines(capsys)
    assert lines == ["error: environment: RANK: must be a process rank (0, 1, ...), got 'abc'"], lines
    assert not (tmp_path / "out" / "tiny-model").exists()


# ------------------------------------------------------------------------------------------------- data files
DATA_FILES = [
    ("empty.jsonl", b"", "the file is empty"),
    ("bad.jsonl", b'{"question": "q", "solution": "1"}\nnot json\n', "JSON parse error"),
    ("bad.csv", b'question,solution\n"a\n', "EOF inside string"),
]


@pytest.mark.parametrize(("name", "content", "words"), DATA_FILES, ids=[d[0] for d in DATA_FILES])
def test_unreadable_data_file_says_why(tmp_path, capsys, name, content, words):
    (tmp_path / name).write_bytes(content)
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump({**GOOD, "data": {"builder": "files", "path": name}, "rewards": ["think_format"]}))
    assert (
        cli_main(["check", str(path)]) == 1
    )  # said "DatasetGenerationError: An error occurred ..." or "StopIteration"
    lines = _error_lines(capsys)
    assert len(lines) == 1 and ": data: " in lines[0] and words in lines[0], lines


def test_resume_with_a_saved_recipe_that_is_not_utf8(run_copy):
    from grpo_trl.cli import train_main

    path, out = run_copy({"max_steps": 5})
    (out / "recipe.yaml").write_bytes(b"\xff\xfe cut or overwritten")
    assert train_main([str(path), "--resume"]) == 0  # was UnicodeDecodeError (exit 70) comparing the recipes
    assert (out / "checkpoint-5").is_dir() and "trainer:" in (out / "recipe.yaml").read_text()


@pytest.mark.parametrize("tail", [b"", b'{"step": 2, "te', b'{"step": 2}\n' + b"\0" * 100])
def test_resumed_log_keeps_whole_rows_and_ends_a_line(tmp_path, tail):
    log = tmp_path / "completions.jsonl"
    log.write_bytes(b'{"step": 1}\n' + tail)
    keep_until(log, 5)
    assert log.read_bytes().endswith(b"\n") and b'{"step": 3}' not in log.read_bytes()
    with open(log, "a") as fh:  # the resumed run appends
        fh.write('{"step": 3}\n')
    assert [r["step"] for r in read_jsonl(log)][-1] == 3
