"""Faulty rewards do not end a run: affected rows become None (skipped by TRL) with a logged count, and the other
rewards are unaffected. A hanging reward is cut off by the per-call time limit set in the recipe."""

from __future__ import annotations

import json
import time

import pytest

from grpo_trl.check import load_recipe
from grpo_trl.train import run

pytestmark = [pytest.mark.slow, pytest.mark.fault]
M = "tests.rewards.faulty_rewards:"


def test_run_survives_faulty_rewards(tmp_path, make_recipe):
    path = make_recipe(
        rewards=[
            {"name": "countdown"},
            {"name": "xml_format", "args": {"tags": ["think", "answer"]}},
            {"name": M + "raises_sometimes"},
            {"name": M + "wrong_length"},
            {"name": M + "hangs_on_a_row", "timeout": 1.0},
            {"name": M + "returns_nan"},
        ],
        trainer={"max_steps": 4},
    )
    start = time.perf_counter()
    result = run(load_recipe(path))
    elapsed = time.perf_counter() - start
    assert result.global_step == 4
    assert elapsed < 60  # the hanging reward cost one timeout (1 s), not an hour
    history = [h for h in result.log_history if "loss" in h]
    per_step = 8
    for i, h in enumerate(history):
        assert h["reward_faults/countdown"] == 0 and h["reward_faults/xml_format"] == 0
        assert h["rewards/countdown/mean"] == 0.0 and h["rewards/xml_format/mean"] is not None
        assert h["reward_faults/wrong_length"] == (per_step if i else 0)  # whole from step 2: the run goes on
        assert h["reward_faults/returns_nan"] == per_step / 2
        assert h["rewards/returns_nan/mean"] == pytest.approx(1.0)  # NaN rows skipped, not averaged in
    assert history[0]["reward_faults/hangs_on_a_row"] == per_step
    assert all(h["reward_faults/hangs_on_a_row"] == 0 for h in history[1:])
    faults = sum(h["reward_faults/raises_sometimes"] for h in history)
    assert 0 < faults < per_step * 4  # only the failing rows, not whole batches
    samples = [json.loads(x) for x in (tmp_path / "out" / "completions.jsonl").read_text().splitlines()]
    later = [s for s in samples if s["step"] > 1]
    assert later and all(s["rewards"]["wrong_length"] is None for s in later)
