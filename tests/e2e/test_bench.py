"""`make bench` at a small size, so the benchmark code cannot rot; the full figures are in docs/figures.md. One test
per part (``bench.run --quick --only PART``), so the parts run side by side in ``make test``'s workers."""

from __future__ import annotations

import json

import pytest

from bench.run import EXTRA

pytestmark = pytest.mark.slow


CHECKS = {  # what each part's figures must show even at the quick size
    "rewards": lambda r: (
        r["accuracy_vs_naive"]["ratio"] > 1  # the full run's target (5x) is checked by make bench
        and r["countdown_vs_naive"]["ratio"] > 0
        and set(r["per_reward"]) >= {"countdown", "accuracy", "gsm8k", "think_format"}
    ),
    "startup": lambda r: r["help_s"] < 1.5,
    "overhead": lambda r: 0.5 < r["ratio"] < 2.0,
    "gpu": lambda r: bool(r.get("skipped") or r["rows"]),
    "isolation": lambda r: r["user_reward_vs_all_builtins"] < 0.05,  # isolation: under 5% of the built-ins' time
    # same rows asserted inside; the cache must beat computing, and datasets' own cache (why filters.py keeps one)
    "data_filter": lambda r: r["kept"] > 0 and r["warm_s"] < r["cold_s"] and r["warm_s"] < r["datasets_warm_s"],
}


@pytest.mark.parametrize("part", ["rewards", "startup", "overhead", "gpu", *EXTRA])
def test_quick_bench_runs_and_reports_ratios(tmp_path, part):
    from bench.run import main

    out = tmp_path / "results.json"
    main(["--quick", "--only", part, "--output", str(out)])
    saved = json.loads(out.read_text())
    assert saved["quick"] and isinstance(saved[part], dict)
    assert CHECKS.get(part, lambda r: True)(saved[part]), saved[part]
