"""SIGKILL a training run after a checkpoint, --resume: it continues from that checkpoint's step with the optimizer
and RNG state restored, i.e. the steps after it log exactly what an uninterrupted run with the same seed logs, and
its completions.jsonl and alerts.jsonl equal the uninterrupted run's: nothing lost, nothing written twice."""

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

pytestmark = [pytest.mark.fault, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]

SLOW_REWARD = '''
import os
import time
from grpo_trl.rewards import register_reward

@register_reward("t_slow_zero")
def slow_zero(completions, trainer_state=None, **kwargs):
    """0.0, after a pause in the run to be killed (T_SLOW=1) once past checkpoint-4: room to kill it before the end."""
    if os.environ.get("T_SLOW") == "1" and trainer_state.global_step >= 4:
        time.sleep(0.4)
    return [0.0] * len(completions)


@register_reward("t_late_zero")
def late_zero(completions, trainer_state=None, **kwargs):
    """1.0 for the first three steps, then 0.0: its reward_zero alert's streak (steps 4-6) spans checkpoint-4."""
    return [1.0 if trainer_state.global_step < 3 else 0.0] * len(completions)
'''


def _rows(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.endswith("}")] if path.exists() else []


def _history(out: Path) -> list[dict]:
    return [h for h in json.loads((out / "trainer_state.json").read_text())["log_history"] if "loss" in h]


def _cmd(path: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "grpo_trl.train", str(path), *extra]


def test_sigkill_then_resume_matches_uninterrupted(tmp_path, make_recipe):
    (tmp_path / "slow.py").write_text(SLOW_REWARD)
    path = make_recipe(
        rewards=[
            {"name": "xml_format", "args": {"tags": ["think", "answer"], "per_tag": 0.25}},
            {"name": "soft_overlong", "args": {"max_completion_len": 12, "soft_punish_cache": 12}},
            {"name": "t_slow_zero"},
            {"name": "t_late_zero"},
        ],
        trainer={"max_steps": 8, "save_strategy": "steps", "save_steps": 4, "beta": 0.04},
        # alerts: reward_zero:t_slow_zero at step 3 (before the checkpoint), reward_zero:t_late_zero at step 6 (its
        # streak began before it); samples every 3rd logged step (1, 4, 7) and the last: the cadence spans it too
        extra={"plugins": ["slow.py"], "logging": {"alert_patience": 3, "completions_every": 3}},
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # the reference: the same recipe, uninterrupted, in this process (only the kill and the resume need their own)
    from grpo_trl.cli import train_main
    from grpo_trl.rewards import unregister_reward

    try:
        assert train_main([str(path), "--set", f"trainer.output_dir={tmp_path / 'ref'}"]) == 0
    finally:  # the plugin's rewards, registered in this process
        unregister_reward("t_slow_zero")
        unregister_reward("t_late_zero")

    out = tmp_path / "out"
    proc = subprocess.Popen(
        _cmd(path), env={**env, "T_SLOW": "1"}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.time() + 240
    while not (out / "checkpoint-4" / "trainer_state.json").exists() or _rows(out / "alerts.jsonl")[-1:] == []:
        assert proc.poll() is None, "training ended before the first checkpoint"
        assert time.time() < deadline
        time.sleep(0.05)
    while max(r["step"] for r in _rows(out / "alerts.jsonl")) < 6:  # rows after the checkpoint, to be dropped
        assert proc.poll() is None and time.time() < deadline
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (out / "checkpoint-8").exists() and not (out / "trainer_state.json").exists()  # really interrupted
    assert any(r["step"] > 4 for r in _rows(out / "alerts.jsonl"))

    resumed = subprocess.run(_cmd(path, "--resume"), env=env, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "resuming from" in resumed.stderr and "checkpoint-4" in resumed.stderr

    got, want = _history(out), _history(tmp_path / "ref")
    assert [h["step"] for h in got] == list(range(1, 9))
    assert json.loads((out / "trainer_state.json").read_text())["global_step"] == 8
    for g, w in zip(got[4:], want[4:]):  # steps 5-8 came from the resumed process
        assert g["loss"] == pytest.approx(w["loss"], abs=1e-6)
        assert g["reward"] == pytest.approx(w["reward"], abs=1e-6)  # same generations: RNG state restored
        assert g["learning_rate"] == pytest.approx(w["learning_rate"])  # scheduler restored
    want_alerts = _rows(tmp_path / "ref" / "alerts.jsonl")
    fired = [(a["step"], a["kind"]) for a in want_alerts]
    assert (3, "reward_zero:t_slow_zero") in fired and (6, "reward_zero:t_late_zero") in fired, fired
    assert _rows(out / "alerts.jsonl") == want_alerts  # step 6's row dropped with the killed steps, fired once again
    got_rows, want_rows = _rows(out / "completions.jsonl"), _rows(tmp_path / "ref" / "completions.jsonl")
    assert sorted({r["step"] for r in want_rows}) == [1, 4, 7, 8]
    assert [(r["step"], r["prompt"], r["completion"]) for r in got_rows] == [
        (r["step"], r["prompt"], r["completion"]) for r in want_rows
    ]
    for g, w in zip(got_rows, want_rows):
        assert g["rewards"] == pytest.approx(w["rewards"], abs=1e-6)


def test_incomplete_checkpoint_is_skipped(tmp_path, trained_run):
    from grpo_trl.run.resume import newest_complete

    shutil.copytree(trained_run / "checkpoint-2", tmp_path / "checkpoint-2")
    (tmp_path / "checkpoint-4").mkdir()  # killed while saving: no trainer_state.json
    shutil.copytree(trained_run / "checkpoint-4", tmp_path / "checkpoint-6")
    (tmp_path / "checkpoint-6" / "trainer_state.json").write_text('{"global_st')  # cut mid-write
    ckpt, skipped = newest_complete(tmp_path)
    assert ckpt == tmp_path / "checkpoint-2"
    assert [(p.name, why.split(" (")[0]) for p, why in skipped] == [
        ("checkpoint-6", "trainer_state.json is unreadable"),
        ("checkpoint-4", "no trainer_state.json"),
    ]
