"""The compact console line (grpo_trl/console.py) and the report's plots (grpo_trl/report.py) on a real tiny run that
logs a custom ``log_metric``, reward faults and eval metrics."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grpo_trl.console import _duration, format_line
from grpo_trl.report import reward_trend

PLUGIN = '''
from grpo_trl.rewards import register_reward


@register_reward("t_logs")
def logs_and_faults(completions, log_metric=None, **kwargs):
    """Logs its own metric; raises on completions containing 'a' (a fault per such row)."""
    if log_metric is not None:
        log_metric("my/mean_chars", sum(len(c[0]["content"]) for c in completions) / len(completions))
    if any("a" in c[0]["content"] for c in completions):
        raise ValueError("boom")
    return [1.0 for _ in completions]
'''

metric_values = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 5), st.text())


@given(
    logs=st.dictionaries(
        st.sampled_from(
            ["reward", "reward_std", "kl", "entropy", "completions/mean_length", "completions/clipped_ratio",
             "rewards/a/mean", "rewards/b c/mean", "rewards/a/std", "loss", "other"]
        ),
        metric_values,
    ),
    step=st.integers(0, 10**6),
    total=st.one_of(st.none(), st.integers(0, 10**6)),
    rate=st.one_of(st.none(), st.floats(0.001, 1e4)),
)  # fmt: skip
def test_the_line_is_one_line_for_any_log_entry(logs, step, total, rate):
    line = format_line(logs, step, total, rate)
    assert "\n" not in line and line.startswith(f"step {step}")
    assert "nan" not in line and "inf" not in line  # a non-finite value is left out, not printed
    if isinstance(logs.get("kl"), (int, float)) and math.isfinite(logs["kl"]):
        assert f"kl {logs['kl']:.4f}" in line
    if rate and total and total > step:
        assert "ETA" in line


def test_duration_and_trend_edges():
    assert [_duration(s) for s in (0, 59.4, 60, 3599, 3600, 86400)] == [
        "0s",
        "59s",
        "1m00s",
        "59m59s",
        "1h00m",
        "24h00m",
    ]
    assert reward_trend([]) is None and reward_trend([{"reward": 1.0}]) is None  # eval/summary entries have no loss
    assert reward_trend([{"loss": 0, "reward": 2.0}]) == (2.0, 2.0)
    assert reward_trend([{"loss": 0, "reward": float("nan")}, {"loss": 0, "reward": 1.0}]) == (1.0, 1.0)


@pytest.mark.slow
def test_train_prints_one_line_per_step_and_the_report_draws_every_metric(tmp_path, make_recipe, capsys):
    import matplotlib.image

    from grpo_trl.report import write_report
    from grpo_trl.train import main as train_main

    (tmp_path / "logs_rewards.py").write_text(PLUGIN)
    path = make_recipe(
        rewards=[{"name": "xml_format", "args": {"tags": ["think", "answer"], "per_tag": 0.25}}, "t_logs"],
        data={"builder": "countdown", "source": "generate", "size": 64, "system_prompt": "none", "eval_size": 8},
        trainer={
            "max_steps": 4,
            "beta": 0.04,
            "eval_strategy": "steps",
            "eval_steps": 2,
            "per_device_eval_batch_size": 8,
        },
        extra={"plugins": ["logs_rewards.py"]},
    )
    assert train_main([str(path)]) == 0
    out = capsys.readouterr().out
    lines = [x for x in out.splitlines() if x.startswith("step ")]
    assert [x.split(" |")[0] for x in lines] == ["step 1/4", "step 2/4", "step 3/4", "step 4/4"]
    assert all("reward " in x and "(xml_format " in x and "s/step" in x for x in lines)
    assert "ETA" in lines[0] and "ETA" not in lines[-1]
    assert "{'loss'" not in out and "'rewards/" not in out  # TRL's dict is gone from the console...
    assert sum(x.startswith("eval at step") for x in out.splitlines()) == 2
    state = json.loads((tmp_path / "out" / "trainer_state.json").read_text())
    assert all("rewards/t_logs/mean" in h for h in state["log_history"] if "loss" in h)  # ...but kept in the logs

    html_path = Path(write_report(tmp_path / "out"))
    summary = json.loads((html_path.parent / "report.json").read_text())
    plots = summary["plots"]
    assert plots["kl.png"] == ["kl"] and plots["entropy.png"] == ["entropy"]
    assert plots["truncated.png"] == ["completions/clipped_ratio"]
    assert "completions/clipped_ratio" not in plots.get("clip_ratio.png", [])
    assert "reward_faults/t_logs" in plots["reward_faults.png"]
    assert plots["metric_my.png"] == ["my/mean_chars"]
    assert plots["eval.png"] == ["eval_reward", "eval_rewards/t_logs/mean", "eval_rewards/xml_format/mean"]
    assert "eval_loss" in plots["eval_details.png"]
    numeric = {k for h in state["log_history"] if "loss" in h for k, v in h.items() if isinstance(v, (int, float))}
    drawn = {k for series in plots.values() for k in series}
    assert numeric - drawn <= {"step", "epoch", "num_tokens"}  # every logged metric is drawn somewhere
    for name in plots:
        image = matplotlib.image.imread(html_path.parent / name)
        assert image.shape[0] > 100 and image.shape[1] > 100
    # the header says what the end-of-run summary said
    cli = re.search(r"first vs last 20 logged steps: ([-\d.]+) -> ([-\d.]+)", out)
    page = html_path.read_text()
    assert cli and f"{cli.group(1)} &rarr; {cli.group(2)}" in page
    assert summary["reward_trend"] == pytest.approx([float(cli.group(1)), float(cli.group(2))], abs=6e-4)

    assert train_main([str(path), "--overwrite", "--verbose", "--set", "trainer.max_steps=1"]) == 0
    out = capsys.readouterr().out
    assert "'loss'" in out and not any(x.startswith("step 1/1 |") for x in out.splitlines())
