"""Real GRPOTrainer runs on the tiny model: end to end, learning, resume, plan vs reality, alerts, eval, report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grpo_trl.check import load_recipe
from grpo_trl.check.plan import make_plan
from grpo_trl.cli import train_main
from grpo_trl.train import run

pytestmark = pytest.mark.slow

RECORDER = '''
import json
from grpo_trl.rewards import register_reward
from grpo_trl.check.plan import make_plan

@register_reward("t_recorder")
def recorder(completions, nums, target, log_to: str = "", **kwargs):
    """Records what TRL passed, and scores 0.5."""
    with open(log_to, "a") as fh:
        fh.write(json.dumps({"keys": sorted(kwargs), "nums": nums, "target": target, "n": len(completions)}) + "\\n")
    return [0.5] * len(completions)
'''


def _history(out: Path) -> list[dict]:
    return [h for h in json.loads((out / "trainer_state.json").read_text())["log_history"] if "loss" in h]


def test_end_to_end_train_cli(tmp_path, make_recipe, capsys):
    (tmp_path / "plugin_rewards.py").write_text(RECORDER)
    calls = tmp_path / "calls.jsonl"
    path = make_recipe(
        rewards=[
            {"name": "countdown"},
            {"name": "think_format"},
            {"name": "t_recorder", "args": {"log_to": str(calls)}},
        ],
        trainer={"max_steps": 4, "save_strategy": "steps", "save_steps": 2},
        extra={"plugins": ["plugin_rewards.py"], "logging": {"completions_every": 1, "completions_samples": 3}},
    )
    assert train_main([str(path)]) == 0
    out = tmp_path / "out"
    assert (out / "checkpoint-2").is_dir() and (out / "checkpoint-4").is_dir()
    assert (out / "model.safetensors").exists() and (out / "recipe.yaml").exists()
    history = _history(out)
    assert [h["step"] for h in history] == [1, 2, 3, 4]
    for h in history:
        assert "reward" in h
        for name in ("countdown", "think_format", "t_recorder"):
            assert f"rewards/{name}/mean" in h
        assert h["rewards/t_recorder/mean"] == pytest.approx(0.5)
        assert h["reward_faults/countdown"] == 0
        assert h["timing/generation_s"] > 0
    # extra dataset columns (and TRL's own kwargs) reached the reward
    rows = [json.loads(line) for line in calls.read_text().splitlines()]
    assert len(rows) == 4 and all(r["n"] == 8 for r in rows)
    assert {"prompts", "completion_ids", "trainer_state", "reference_equation"} <= set(rows[0]["keys"])
    assert all(isinstance(n, list) and len(n) in (3, 4) for n in rows[0]["nums"])
    assert all(isinstance(t, int) for t in rows[0]["target"])
    # completion samples
    samples = [json.loads(line) for line in (out / "completions.jsonl").read_text().splitlines()]
    assert {s["step"] for s in samples} == {1, 2, 3, 4}
    assert set(samples[0]) == {"step", "prompt", "completion", "rewards", "advantage"}
    assert set(samples[0]["rewards"]) == {"countdown", "think_format", "t_recorder"}
    assert "results in" in capsys.readouterr().out


def test_plan_matches_the_trainer(tmp_path, make_recipe):
    path = make_recipe(
        data={"builder": "countdown", "source": "generate", "size": 12, "system_prompt": "none"},
        trainer={
            "max_steps": -1,
            "num_train_epochs": 1,
            "num_generations": 4,
            "per_device_train_batch_size": 8,
            "gradient_accumulation_steps": 1,
        },
    )
    recipe = load_recipe(path)
    planned = make_plan(recipe).total_optimizer_steps
    assert planned == 6  # 12 rows x 4 generations / 8 completions per step
    assert run(recipe).global_step == planned


GENERATIONS: list[int] = []  # the optimizer step (trainer_state.global_step) at each reward call: one per generation


def count_generations(completions, trainer_state, **kwargs):
    GENERATIONS.append(trainer_state.global_step)
    return [0.0] * len(completions)


@pytest.mark.parametrize(
    ("trainer", "micro", "optimizer", "at"),
    [
        # mu = 3 over a batch of 2 micro-batches, 2 per optimizer step: one generation feeds 3 optimizer steps
        ({"steps_per_generation": 2, "gradient_accumulation_steps": 2, "num_iterations": 3}, 6, 3, [0, 3]),
        # one micro-batch per generation, 2 per optimizer step: two generations per optimizer step
        ({"steps_per_generation": 1, "gradient_accumulation_steps": 2, "num_iterations": 1}, 1, 0.5, [0, 0, 1, 1]),
    ],
)
def test_plan_says_how_often_trl_generates(make_recipe, trainer, micro, optimizer, at, capsys):
    from grpo_trl.cli import main as cli_main

    path = make_recipe(
        rewards=[{"name": "tests.e2e.test_train:count_generations"}],
        trainer={"max_steps": at[-1] + 1 if optimizer < 1 else 6, "per_device_train_batch_size": 4, **trainer},
    )
    recipe = load_recipe(path)
    plan = make_plan(recipe)
    assert (plan.micro_steps_per_generation, plan.optimizer_steps_per_generation) == (micro, optimizer)
    assert cli_main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"generated every {micro} micro-step(s) = {optimizer:g} optimizer step(s)" in out
    assert f"each trained on {trainer['num_iterations']} time(s) (num_iterations)" in out
    GENERATIONS.clear()
    run(recipe)
    assert GENERATIONS == at


def test_resume_continues_from_the_checkpoint(run_copy):
    path, out = run_copy()  # a copy of the shared finished run: steps 1-4, checkpoints 2 and 4
    assert _history(out)[-1]["step"] == 4
    assert train_main([str(path)]) == 1  # refuses to silently restart over checkpoints
    assert train_main([str(path), "--resume", "--set", "trainer.max_steps=6"]) == 0
    steps = [h["step"] for h in _history(out)]
    assert steps == [1, 2, 3, 4, 5, 6]  # steps 5-6 follow the restored 1-4; nothing restarted from 0
    state = json.loads((out / "trainer_state.json").read_text())
    assert state["global_step"] == 6


def test_learning_reward_rises_and_alerts_stay_quiet(tmp_path, make_recipe):
    """Seeded: a format reward plus a length penalty; the tiny model learns tags and to stop within 150 steps."""
    path = make_recipe(
        rewards=[
            {"name": "xml_format", "args": {"tags": ["think", "answer"], "per_tag": 0.25}},
            {"name": "soft_overlong", "args": {"max_completion_len": 16, "soft_punish_cache": 16}},
        ],
        data={"builder": "countdown", "source": "generate", "size": 256, "system_prompt": "none"},
        trainer={
            "max_steps": 150,
            "num_generations": 8,
            "per_device_train_batch_size": 16,
            "max_completion_length": 16,
            "beta": 0.04,
        },
        extra={"logging": {"alert_patience": 10}},
    )
    result = run(load_recipe(path))
    first, last = result.reward_trend(window=20)
    assert last - first > 0.4, (first, last)
    fmt_first, fmt_last = result.reward_trend(window=20, key="rewards/xml_format/mean")
    assert fmt_last - fmt_first > 0.1
    assert result.alerts == []
    assert not (tmp_path / "out" / "alerts.jsonl").exists()


def test_alerts_fire_on_a_constant_zero_reward(tmp_path, make_recipe):
    path = make_recipe(
        rewards=[{"name": "tests.rewards.plugin_module:zero"}],
        trainer={"max_steps": 6},
        extra={"logging": {"alert_patience": 3}},
    )
    result = run(load_recipe(path))
    kinds = {a["kind"] for a in result.alerts}
    assert {"no_signal", "reward_zero:zero"} <= kinds
    logged = [json.loads(line) for line in (tmp_path / "out" / "alerts.jsonl").read_text().splitlines()]
    assert {a["kind"] for a in logged} == kinds
    assert {a["step"] for a in logged if a["kind"] in ("no_signal", "reward_zero:zero")} == {3}  # patience 3


def test_eval_numbers_match_the_completions_file(tmp_path, make_recipe):
    from grpo_trl.eval import evaluate

    path = make_recipe(
        rewards=[{"name": "countdown"}, {"name": "xml_format", "args": {"tags": ["think", "answer"]}, "weight": 0.5}],
    )
    recipe = load_recipe(path)
    model = recipe.model["name"]
    report = evaluate(
        recipe, model=model, split="train", n=4, limit=6, output_dir=str(tmp_path / "eval"), max_new_tokens=12
    )
    rows = [json.loads(line) for line in (tmp_path / "eval" / "eval_completions.jsonl").read_text().splitlines()]
    assert len(rows) == 24 and json.loads((tmp_path / "eval" / "eval.json").read_text())["prompts"] == 6
    assert report["rewards"]["xml_format"] == pytest.approx(sum(r["rewards"]["xml_format"] for r in rows) / 24)
    assert report["mean_completion_length"] == pytest.approx(sum(r["length"] for r in rows) / 24)
    assert report["reward_mean"] == pytest.approx(
        sum(r["rewards"]["countdown"] + 0.5 * r["rewards"]["xml_format"] for r in rows) / 24
    )
    by_prompt = {}
    for r in rows:
        by_prompt.setdefault(r["prompt_index"], []).append(r["passed"])
        assert r["passed"] == (r["rewards"]["countdown"] >= 1.0)
    assert report["pass@1"] == pytest.approx(sum(sum(v) / 4 for v in by_prompt.values()) / 6)
    assert report["pass@4"] == pytest.approx(sum(any(v) for v in by_prompt.values()) / 6)
    assert report["format_failure_rate"] == pytest.approx(sum("</answer>" not in r["completion"] for r in rows) / 24)


def test_report_writes_plots_and_html(run_copy):
    import matplotlib.image

    from grpo_trl.report.page import write_report

    _, out = run_copy()  # a copy of the shared finished run: 4 steps, completions logged at each
    html_path = Path(write_report(out))
    summary = json.loads((html_path.parent / "report.json").read_text())
    assert "rewards/xml_format/mean" in summary["plots"]["rewards.png"] and "reward" in summary["plots"]["rewards.png"]
    assert {"completions/mean_length", "completions/max_length"} <= set(summary["plots"]["lengths.png"])
    assert "frac_reward_zero_std" in summary["plots"]["zero_std.png"]
    assert "timing/generation_s" in summary["plots"]["timing.png"]
    for name in summary["plots"]:
        image = matplotlib.image.imread(html_path.parent / name)
        assert image.shape[0] > 100 and image.shape[1] > 100
    page = html_path.read_text()
    assert page.count("data:image/png;base64,") == len(summary["plots"])
    assert "Sample completions" in page and "<td>4</td>" in page


def test_overwrite_starts_clean(run_copy):
    path, out = run_copy()  # a copy of the shared finished run: checkpoints 2 and 4, completions of steps 1-4
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-2", "checkpoint-4"]
    assert train_main([str(path), "--overwrite", "--set", "trainer.max_steps=2"]) == 0
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-2"]  # the old checkpoint-4 is gone
    assert {json.loads(x)["step"] for x in (out / "completions.jsonl").read_text().splitlines()} == {1, 2}
