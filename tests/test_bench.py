"""`make bench` at a small size, so the benchmark code cannot rot; the full figures are in docs/figures.md."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow


def test_quick_bench_runs_and_reports_ratios(tmp_path):
    from bench.run import main

    out = tmp_path / "results.json"
    results = main(["--quick", "--output", str(out)])
    saved = json.loads(out.read_text())
    assert saved["rewards"]["accuracy_vs_naive"]["ratio"] > 1  # the full run's target (5x) is checked by make bench
    assert saved["rewards"]["countdown_vs_naive"]["ratio"] > 0
    assert 0.5 < saved["overhead"]["ratio"] < 2.0
    assert saved["startup"]["help_s"] < 1.5
    assert set(saved["rewards"]["per_reward"]) >= {"countdown", "accuracy", "gsm8k", "think_format"}
    assert results["gpu"].get("skipped") or results["gpu"]["rows"]
    assert saved["isolation"]["user_reward_vs_all_builtins"] < 0.05  # isolation: under 5% of the built-ins' time
    filt = saved["data_filter"]  # same rows asserted inside; the cache must beat computing
    assert filt["kept"] > 0 and filt["warm_s"] < filt["cold_s"]
    assert filt["warm_s"] < filt["datasets_warm_s"]  # why filters.py keeps its own cache rather than datasets'
