"""Rewards in every shape TRL documents, and the ways a reward breaks TRL's contract, in one real run: async with
and without a timeout, in-place mutation of its inputs, 1e308, sys.exit, a coroutine returned by a sync function.
The run finishes, the well-behaved rewards are untouched, every reward that is None on every row is alerted with its
cause, and the summary and report.html give each reward's share of None rows. A reward leaving a non-daemon thread
running does not keep the training process alive: tests/rewards/test_reward_bounds.py, in its run of every reward
that kept the process alive."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from grpo_trl.check import load_recipe
from grpo_trl.cli import print_summary
from grpo_trl.report.page import write_report
from grpo_trl.train import run
from tests.rewards import trl_doc_rewards as docs

pytestmark = [pytest.mark.slow, pytest.mark.fault]
F = "tests.rewards.faulty_rewards:"
D = "tests.rewards.trl_doc_rewards:"


def test_contract_faults_in_one_run(tmp_path, make_recipe, capsys):
    rewards = [{"name": D + name} for name in docs.SHAPES]
    rewards += [
        {"name": D + "slow_judge", "timeout": 0.5},
        {"name": F + "vandal"},
        {"name": F + "overflows"},
        {"name": F + "calls_sys_exit"},
        {"name": F + "returns_coroutine"},
    ]
    path = make_recipe(
        rewards=rewards,
        trainer={"max_steps": 4},
        extra={"logging": {"alert_patience": 2, "completions_every": 1, "completions_samples": 8}},
    )
    start = time.perf_counter()
    result = run(load_recipe(path))
    assert result.global_step == 4 and time.perf_counter() - start < 120
    history = [h for h in result.log_history if "loss" in h]
    per_step = 8
    for h in history:
        for name in docs.SHAPES:
            assert h[f"reward_faults/{name}"] == 0 and h[f"reward_none_frac/{name}"] == 0, name
        assert h["reward_none_frac/vandal"] == 0 and h["rewards/vandal/mean"] == 0.5
        assert h["reward_faults/overflows"] == per_step / 2 and h["rewards/overflows/mean"] == 1.0
        assert h["reward_none_frac/slow_judge"] == 1.0 and h["reward_faults/slow_judge"] == per_step  # timeouts
    for h in history[1:]:  # broken from the second batch on (on all of the first, the run would stop)
        for name in ("calls_sys_exit", "returns_coroutine"):
            assert h[f"reward_none_frac/{name}"] == 1.0 and h[f"reward_faults/{name}"] == per_step, name
    alerts = {a["kind"]: a["message"] for a in result.alerts}
    assert "did not return within 0.5 s" in alerts["reward_none:slow_judge"]
    assert "SystemExit: exit('a plugin gave up')" in alerts["reward_none:calls_sys_exit"]
    assert "faulty_rewards.py:" in alerts["reward_none:calls_sys_exit"]  # file:line where it was raised
    assert "returned a coroutine" in alerts["reward_none:returns_coroutine"]
    assert not any(k.startswith("reward_none:") and k.split(":")[1] in docs.SHAPES for k in alerts)
    # the vandal's edits reached neither the other rewards, nor TRL's completion log
    samples = [json.loads(x) for x in (tmp_path / "out" / "completions.jsonl").read_text().splitlines()]
    assert samples and not any("EDITED" in s["completion"] or "EXTRA" in s["completion"] for s in samples)
    assert all(s["prompt"].count("[user] ") == 1 and "[user] \n" not in s["prompt"] for s in samples)

    print_summary(result)
    out = capsys.readouterr().out
    assert "rows scored None (skipped by TRL) per reward: " in out
    assert "reward 'calls_sys_exit' scored None on most rows; first cause: SystemExit" in out  # the why, repeated
    assert "calls_sys_exit 75.0%" in out and "overflows 50.0%" in out and "length_reward 0.0%" in out
    page = Path(write_report(tmp_path / "out")).read_text()
    assert "<td>returns_coroutine</td><td>75.0%</td>" in page and "<td>prompt_echo</td><td>0.0%</td>" in page
    report = json.loads((tmp_path / "out" / "report" / "report.json").read_text())
    assert report["reward_none_share"]["calls_sys_exit"] == 0.75 and report["reward_none_share"]["vandal"] == 0.0
    assert "reward_none_frac/overflows" in report["plots"]["reward_none.png"]
