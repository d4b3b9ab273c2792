"""SIGKILL a training run after a checkpoint, --resume: it continues from that checkpoint's step with the optimizer
and RNG state restored, i.e. the steps after it log exactly what an uninterrupted run with the same seed logs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]

SLOW_REWARD = '''
import time
from grpo_trl.rewards import register_reward

@register_reward("t_slow_zero")
def slow_zero(completions, **kwargs):
    """0.0 after a pause, so the run can be killed between checkpoints."""
    time.sleep(0.4)
    return [0.0] * len(completions)
'''


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
        ],
        trainer={"max_steps": 8, "save_strategy": "steps", "save_steps": 4, "beta": 0.04},
        extra={"plugins": ["slow.py"]},
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # the reference: the same recipe, uninterrupted
    ref = subprocess.run(
        _cmd(path, "--set", f"trainer.output_dir={tmp_path / 'ref'}"),
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ref.returncode == 0, ref.stderr[-2000:]

    out = tmp_path / "out"
    proc = subprocess.Popen(_cmd(path), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 240
    while not (out / "checkpoint-4" / "trainer_state.json").exists():
        assert proc.poll() is None, "training ended before the first checkpoint"
        assert time.time() < deadline
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (out / "checkpoint-8").exists() and not (out / "trainer_state.json").exists()  # really interrupted

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


def test_incomplete_checkpoint_is_skipped(tmp_path):
    from grpo_trl.train import last_complete_checkpoint

    (tmp_path / "checkpoint-2").mkdir()
    (tmp_path / "checkpoint-2" / "trainer_state.json").write_text("{}")
    (tmp_path / "checkpoint-4").mkdir()  # killed while saving: no trainer_state.json
    (tmp_path / "checkpoint-6").mkdir()
    (tmp_path / "checkpoint-6" / "trainer_state.json").write_text('{"global_st')  # cut mid-write
    assert last_complete_checkpoint(tmp_path) == str(tmp_path / "checkpoint-2")
