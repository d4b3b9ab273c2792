"""Held-out evaluation during training (``heldout:``) and the ``heldout_diverging`` alert.

The alert logic is driven with log histories shaped like the trainer's (training entries with ``loss`` and
``reward``, one ``heldout/*`` entry per evaluation) through the real ``Alerts`` callback; the real runs train the
tiny model with a rigged reward that pays for leaving digits out while the task (the first reward, weight 0, the
one held-out pass@k counts) needs one.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import TrainerCallback

from grpo_trl.check import load_recipe
from grpo_trl.cli import main, train_main
from grpo_trl.monitor.callbacks import Alerts
from grpo_trl.monitor.heldout import KIND, Divergence
from grpo_trl.train import run
from tests.conftest import tiny_recipe

EVERY = 3  # training logs between evaluations


def history(rewards: list[float], accuracies: list[float]) -> list[dict]:
    """A log_history: a baseline evaluation at step 0, then per evaluation ``EVERY`` training logs at ``rewards[i]``
    and the evaluation at ``accuracies[i + 1]``."""
    out = [{"heldout/pass@1": accuracies[0], "heldout/time_s": 0.1, "step": 0}]
    step = 0
    for reward, accuracy in zip(rewards, accuracies[1:], strict=True):
        for _ in range(EVERY):
            step += 1
            out.append({"loss": 0.0, "reward": reward, "step": step})
        out.append({"heldout/pass@1": accuracy, "heldout/time_s": 0.1, "step": step})
    return out


def feed(alerts: Alerts, logs: list[dict]) -> list[dict]:
    for entry in logs:
        state = SimpleNamespace(global_step=entry["step"], is_world_process_zero=True)
        alerts.on_log(None, state, None, logs=dict(entry))
    return [a for a in alerts.fired if a["kind"] == KIND]


def alerts_for(tmp_path, patience: int, min_drop: float = 0.1) -> Alerts:
    alerts = Alerts(str(tmp_path), patience=patience)
    alerts.divergence.min_drop = min_drop
    return alerts


rates = st.floats(0, 1, allow_nan=False)
patiences = st.integers(1, 4)


@settings(max_examples=40, deadline=None)
@given(patience=patiences, evaluations=st.integers(1, 8), start=st.floats(0.3, 1), drop=st.floats(0.1, 0.3))
def test_reward_rising_while_accuracy_falls_alerts_at_the_patience_th_diverging_evaluation(
    tmp_path_factory, patience, evaluations, start, drop
):
    """The baseline takes the first interval's reward, so evaluation 1 cannot diverge; from evaluation 2 on every
    one does (accuracy >= min_drop below the baseline, reward above it)."""
    rewards = [0.1 * i for i in range(evaluations)]
    accuracies = [start] + [max(0.0, start - drop - 0.01 * i) for i in range(evaluations)]
    fired = feed(alerts_for(tmp_path_factory.mktemp("a"), patience), history(rewards, accuracies))
    diverging = max(0, evaluations - 1)
    if diverging < patience:
        assert fired == []
        return
    assert len(fired) == 1
    assert fired[0]["step"] == (1 + patience) * EVERY  # evaluation number patience + 1
    message = fired[0]["message"]
    assert f"training reward rose 0.000 -> {rewards[patience]:.3f}" in message
    assert f"held-out pass@1 fell {start:.3f} -> {accuracies[patience + 1]:.3f}" in message
    assert "best at step 0" in message


@settings(max_examples=40, deadline=None)
@given(patience=patiences, rewards=st.lists(rates, min_size=1, max_size=10), level=rates, data=st.data())
def test_flat_or_noisy_accuracy_within_min_drop_never_alerts(tmp_path_factory, patience, rewards, level, data):
    """However the reward moves, accuracy that never falls min_drop below its best is not a divergence."""
    wiggle = st.floats(-0.099, 0).map(lambda d: min(1.0, max(0.0, level + d)))
    accuracies = [level] + [data.draw(wiggle) for _ in rewards]
    assert feed(alerts_for(tmp_path_factory.mktemp("a"), patience), history(rewards, accuracies)) == []


@settings(max_examples=40, deadline=None)
@given(patience=patiences, accuracies=st.lists(rates, min_size=2, max_size=10), high=st.floats(0.5, 1))
def test_a_reward_never_rising_above_the_best_evaluations_never_alerts(tmp_path_factory, patience, accuracies, high):
    """Falling accuracy alone (a harder phase, a bad learning rate) is not the reward hacking this alert is about."""
    rewards = [high - 0.05 * i for i in range(len(accuracies) - 1)]  # falling reward
    assert feed(alerts_for(tmp_path_factory.mktemp("a"), patience), history(rewards, accuracies)) == []


def test_nan_evaluations_are_no_evidence_and_nan_rewards_are_skipped(tmp_path):
    logs = history([0.1, 0.5, 0.6, 0.7], [0.8, 0.5, 0.4, float("nan"), 0.3])
    logs.insert(5, {"loss": 0.0, "reward": float("nan"), "step": 3})
    fired = feed(alerts_for(tmp_path, patience=2), logs)
    assert [a["step"] for a in fired] == [12]  # evaluation 2 diverges, 3 (NaN) leaves the streak, 4 fires
    assert "0.800 -> 0.300" in fired[0]["message"]


def test_a_recovery_resets_the_streak(tmp_path):
    #               baseline  1     2     3 (back up: best again)  4     5
    accuracies = [0.6, 0.6, 0.4, 0.7, 0.5, 0.5]
    fired = feed(alerts_for(tmp_path, patience=2), history([0.1, 0.2, 0.3, 0.4, 0.5], accuracies))
    assert [a["step"] for a in fired] == [15]  # the streak of evaluation 2 is broken by 3; 4 and 5 fire
    assert "best at step 9" in fired[0]["message"]


def test_the_alert_joins_alerts_jsonl_once(tmp_path):
    logs = history([0.1, 0.5, 0.6, 0.7, 0.8], [0.9, 0.9, 0.2, 0.1, 0.0, 0.0])
    alerts = alerts_for(tmp_path, patience=2)
    fired = feed(alerts, logs)
    written = [json.loads(line) for line in (tmp_path / "alerts.jsonl").read_text().splitlines()]
    assert written == fired and [a["kind"] for a in written] == [KIND]


@settings(max_examples=25, deadline=None)
@given(
    patience=patiences,
    rewards=st.lists(rates, min_size=2, max_size=8),
    data=st.data(),
)
def test_resume_replays_the_checkpoints_history_and_alerts_exactly_when_an_uninterrupted_run_would(
    tmp_path_factory, patience, rewards, data
):
    accuracies = data.draw(st.lists(rates, min_size=len(rewards) + 1, max_size=len(rewards) + 1))
    logs = history(rewards, accuracies)
    whole = feed(alerts_for(tmp_path_factory.mktemp("a"), patience), logs)
    cut = data.draw(st.integers(0, len(logs)))
    first = alerts_for(tmp_path_factory.mktemp("b"), patience)
    before = feed(first, logs[:cut])
    resumed = alerts_for(tmp_path_factory.mktemp("c"), patience)
    resumed.restore(logs[:cut], list(first.fired))
    after = feed(resumed, logs[cut:])
    assert after == whole
    assert before == whole[: len(before)]


def test_divergence_needs_a_reward_logged_after_an_evaluation():
    d = Divergence(min_drop=0.1)
    assert d.evaluated(0, {"heldout/pass@1": 0.9}) is None
    assert d.evaluated(5, {"heldout/pass@1": 0.1}) is None  # no training reward yet: nothing to compare
    d.train({"reward": 0.5})
    assert d.evaluated(10, {"heldout/greedy/pass@1": 0.0}) is None  # the points before take this first reward
    d.train({"reward": 0.9})
    message = d.evaluated(15, {"heldout/greedy/pass@1": 0.0})
    assert d.streak == 1 and "held-out greedy/pass@1 fell 0.900 -> 0.000" in message


# ------------------------------------------------------------------------------------------------ check
@pytest.mark.parametrize(
    ("heldout", "data", "line"),
    [
        (
            {"every": 5},
            {},
            "heldout: needs an eval split to evaluate on, and the recipe has none "
            "(set data.eval_size: N (rows held out of training), data.eval_split or heldout.benchmark)",
        ),
        (
            {"n": 2, "k": [1, 4]},
            {"eval_size": 8},
            "heldout.k: pass@4 needs 1 <= k <= n, and heldout.n is 2 (raise heldout.n to 4 or drop 4 from heldout.k)",
        ),
        ({"every": 0}, {"eval_size": 8}, "heldout.every: must be >= 1, got 0"),
        ({"n": 0}, {"eval_size": 8}, "heldout.n: must be >= 1, got 0"),
        ({"temperature": 0.0}, {"eval_size": 8}, "heldout.temperature: must be a positive number, got 0.0"),
        (
            {"sampled": False, "greedy": False},
            {"eval_size": 8},
            "heldout: evaluates nothing: sampled and greedy are both false (turn one on)",
        ),
        (
            {"benchmark": "gsm8k", "data": "missing.jsonl"},
            {},
            "heldout.data: 'missing.jsonl' is not a file (relative to the recipe)",
        ),
        (
            {"data": "recipe.yaml"},
            {"eval_size": 8},
            "heldout.data: is a benchmark's local copy, and no heldout.benchmark is named",
        ),
    ],
)
def test_check_refuses_a_bad_heldout_section_before_any_model_loads(tmp_path, capsys, heldout, data, line):
    data = {"builder": "countdown", "source": "generate", "size": 64, "system_prompt": "none", **data}
    path = tiny_recipe(tmp_path, "builtin:tiny", data=data, extra={"heldout": heldout})
    assert main(["check", str(path)]) == 1
    errors = [x for x in capsys.readouterr().err.splitlines() if x.startswith("error:")]
    assert errors == [f"error: {path}: {line}"]
    assert not (tmp_path / "out").exists()  # nothing built, nothing written


def test_check_plans_the_cost_of_the_evaluations(tmp_path, capsys):
    data = {"builder": "countdown", "source": "generate", "size": 64, "system_prompt": "none", "eval_size": 8}
    path = tiny_recipe(tmp_path, "builtin:tiny", data=data, extra={"heldout": {"every": 3, "n": 2, "limit": 8}})
    assert main(["check", str(path)]) == 0
    assert (  # max_steps 4: before the first, at 3 and at the last
        "  heldout             up to 8 eval prompts x 3 = 24 completions of <= 12 tokens every 3 steps and before "
        "the first: 3 in all\n"
    ) in capsys.readouterr().out


# ------------------------------------------------------------------------------------------------ real runs
def has_digit(completions, **kwargs):
    """The task: an answer needs a number (1.0 when the completion holds a digit)."""
    texts = [c[0]["content"] if isinstance(c, list) else c for c in completions]
    return [1.0 if re.search(r"[0-9]", t) else 0.0 for t in texts]


def no_digit(completions, **kwargs):
    """The rigged reward: pays for a surface feature (no digits at all) that the task needs the opposite of."""
    return [1.0 - v for v in has_digit(completions)]


def rigged(tmp_path, tiny_model, **trainer):
    return tiny_recipe(
        tmp_path,
        tiny_model,
        rewards=[
            {"name": "tests.monitor.test_heldout:has_digit", "weight": 0.0},
            {"name": "tests.monitor.test_heldout:no_digit"},
        ],
        data={"builder": "countdown", "source": "generate", "size": 256, "eval_size": 16, "system_prompt": "none"},
        trainer={
            "max_steps": 12,
            "num_generations": 8,
            "per_device_train_batch_size": 16,
            "max_completion_length": 8,
            "learning_rate": 0.03,
            "beta": 0.0,
            "save_strategy": "steps",
            "save_steps": 3,
            **trainer,
        },
        extra={"heldout": {"every": 3, "n": 4, "limit": 16}, "logging": {"alert_patience": 2}},
    )


def state(out) -> list[dict]:
    return json.loads((out / "trainer_state.json").read_text())["log_history"]


def heldout_entries(out) -> list[dict]:
    return [h for h in state(out) if "heldout/pass@1" in h]


class Tracker(TrainerCallback):
    """What a ``report_to`` logger (TensorBoard, W&B) is given: every ``on_log`` entry."""

    def __init__(self):
        self.logged: list[dict] = []

    def on_log(self, args, state, control, logs=None, **kwargs):
        self.logged.append(dict(logs or {}))


@pytest.fixture(scope="module")
def rigged_run(tmp_path_factory, tiny_model):
    """The rigged run, uninterrupted: 12 steps, an evaluation every 3."""
    import io
    from contextlib import redirect_stdout

    tmp = tmp_path_factory.mktemp("rigged")
    console, tracker = io.StringIO(), Tracker()
    with redirect_stdout(console):
        result = run(load_recipe(rigged(tmp, tiny_model)), extra_callbacks=[tracker])
    return tmp / "out", console.getvalue(), result, tracker


@pytest.mark.slow
def test_a_rigged_reward_rises_while_held_out_accuracy_falls_and_the_alert_fires(rigged_run):
    from grpo_trl.report.page import write_report

    out, console, result, tracker = rigged_run
    held = heldout_entries(out)
    assert [h["step"] for h in held] == [0, 3, 6, 9, 12]
    for h in held:
        assert h["heldout/prompts"] == 16 and 0 < h["heldout/time_s"] < 60
        assert {"heldout/pass@4", "heldout/greedy/pass@1", "heldout/reward"} <= h.keys()
    accuracy = [h["heldout/pass@1"] for h in held]
    rewards = [h["reward"] for h in state(out) if "loss" in h]
    assert accuracy[0] > 0.3 and accuracy[-1] < accuracy[0] - 0.2, accuracy
    assert sum(rewards[-3:]) / 3 > sum(rewards[:3]) / 3 + 0.2, rewards
    alerts = [json.loads(line) for line in (out / "alerts.jsonl").read_text().splitlines()]
    fired = [a for a in alerts if a["kind"] == KIND]
    # 3 has the baseline's reward; the reward dips at first, so 6 diverges or not (seeded: not, fired at 12)
    assert len(fired) == 1 and fired[0]["step"] in (9, 12), alerts
    assert "training reward rose" in fired[0]["message"] and "held-out pass@1 fell" in fired[0]["message"]
    assert [a for a in result.alerts if a["kind"] == KIND] == fired  # TrainResult.alerts
    seen = [t for t in tracker.logged if "heldout/pass@1" in t]  # what trackers get: every evaluation
    assert seen == [{k: v for k, v in h.items() if k != "step"} for h in held]
    assert re.search(r"heldout at step 6 \| pass@1 [0-9.]+ \| pass@4 [0-9.]+ \| greedy pass@1", console)
    write_report(out)
    plots = json.loads((out / "report" / "report.json").read_text())["plots"]
    assert plots["heldout.png"] == ["heldout/pass@1", "heldout/pass@4", "heldout/greedy/pass@1", "reward"]


@pytest.mark.slow
def test_resume_continues_the_evaluations_and_the_alerts_history(tmp_path, tiny_model, rigged_run):
    """Stopped at step 9 (after the evaluation of step 9, saved with it), resumed to 12: the same five points, none
    twice, and the alert fires as in the uninterrupted run: at step 12 (seeded) only because the streak of step 9
    and the baseline of step 0 were restored."""

    class Interrupt(TrainerCallback):  # as a kill right after checkpoint-9 (same recipe, same learning-rate schedule)
        def on_step_end(self, args, state, control, **kwargs):
            control.should_training_stop = state.global_step == 9

    path = rigged(tmp_path, tiny_model)
    run(load_recipe(path), extra_callbacks=[Interrupt()])
    assert [h["step"] for h in heldout_entries(tmp_path / "out")] == [0, 3, 6, 9]
    assert train_main([str(path), "--resume"]) == 0
    held = heldout_entries(tmp_path / "out")
    assert [h["step"] for h in held] == [0, 3, 6, 9, 12]
    untimed = [{k: v for k, v in h.items() if k != "heldout/time_s"} for h in heldout_entries(rigged_run[0])]
    assert [{k: v for k, v in h.items() if k != "heldout/time_s"} for h in held[:4]] == untimed[:4]  # the same run
    alerts = [json.loads(line) for line in (tmp_path / "out" / "alerts.jsonl").read_text().splitlines()]
    fired = [a for a in alerts if a["kind"] == KIND]
    reference = [json.loads(line) for line in (rigged_run[0] / "alerts.jsonl").read_text().splitlines()]
    assert fired == [a for a in reference if a["kind"] == KIND] and "best at step 0" in fired[0]["message"]


def test_without_vllm_the_live_model_generates_with_transformers(tmp_path, tiny_model, caplog):
    """``generation.backend: transformers`` (no ``vllm_generation`` on the trainer): held-out evaluation takes the
    transformers backend, and the line announcing the section says so."""
    import logging

    from grpo_trl.eval.during import install_heldout
    from grpo_trl.train import build_trainer

    recipe = load_recipe(rigged(tmp_path, tiny_model))
    trainer = build_trainer(recipe)
    with caplog.at_level(logging.INFO, logger="grpo_trl"):
        callback = install_heldout(trainer, recipe)
    assert callback.vllm is None and callback.backend == "transformers"
    assert "every 3 steps (4 samples, greedy) with transformers" in caplog.text


# ------------------------------------------------------------------------------------------------ benchmark
def test_the_section_names_exactly_the_benchmarks_eval_knows():
    from grpo_trl.eval.benchmarks import BENCHMARKS as TABLE
    from grpo_trl.monitor.heldout import BENCHMARKS

    assert BENCHMARKS == tuple(TABLE)


def test_check_refuses_an_unknown_benchmark_before_any_model_loads(tmp_path, capsys):
    path = tiny_recipe(tmp_path, "builtin:tiny", extra={"heldout": {"benchmark": "mmlu"}})
    assert main(["check", str(path)]) == 1
    errors = [x for x in capsys.readouterr().err.splitlines() if x.startswith("error:")]
    assert len(errors) == 1 and "heldout.benchmark" in errors[0] and "gsm8k" in errors[0]


def test_a_training_run_evaluates_a_named_benchmark_from_a_local_copy(tmp_path, tiny_model):
    """``heldout: {benchmark: gsm8k, data: FILE}``: no eval split needed; the benchmark's prompts and verl's '####'
    scoring, logged as heldout/pass@k like the eval split's."""
    rows = [{"question": f"What is {i} + {i}?", "answer": f"{i} + {i} = {2 * i}\n#### {2 * i}"} for i in range(3)]
    (tmp_path / "gsm8k.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    heldout = {"benchmark": "gsm8k", "data": "gsm8k.jsonl", "every": 2, "n": 2, "limit": 2, "max_new_tokens": 4}
    path = tiny_recipe(tmp_path, tiny_model, trainer={"max_steps": 2}, extra={"heldout": heldout})
    assert main(["check", str(path)]) == 0
    out = Path(run(load_recipe(path)).output_dir)
    entries = heldout_entries(out)
    assert [e["step"] for e in entries] == [0, 2] and all(e["heldout/prompts"] == 2 for e in entries)
    assert all(0.0 <= e["heldout/pass@1"] <= 1.0 and "heldout/greedy/pass@1" in e for e in entries)
