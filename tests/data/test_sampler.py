"""data.sampler: the zero-variance-aware sampler (grpo_trl/data/sampler.py) against TRL's own RepeatSampler, its
weights, its state across a resume, and a real GRPOTrainer run that feeds it every generation once."""

from __future__ import annotations

import json

import pytest
from datasets import Dataset
from hypothesis import given
from hypothesis import strategies as st
from transformers import TrainerCallback
from trl.trainer.utils import RepeatSampler

from grpo_trl.check import load_recipe
from grpo_trl.data import validate_data_config
from grpo_trl.data.sampler import ZeroVarianceSampler, systematic_counts
from grpo_trl.train import run

PROMPTS = Dataset.from_dict({"prompt": [f"p{i}" for i in range(8)]})


def make(**kw) -> ZeroVarianceSampler:
    args = {"mini_repeat_count": 2, "batch_size": 2, "repeat_count": 2, "seed": 3, **kw}
    return ZeroVarianceSampler(PROMPTS, **args)


@given(st.lists(st.floats(0.01, 1.0), min_size=1, max_size=50), st.floats(0, 0.999))
def test_systematic_counts_are_floor_or_ceiling_and_sum_to_total(weights, u):
    total = len(weights)
    counts = systematic_counts(weights, total, u)
    assert sum(counts) == total and all(c >= 0 for c in counts)
    for w, c in zip(weights, counts):
        expected = total * w / sum(weights)
        assert expected - 1 - 1e-6 <= c <= expected + 1 + 1e-6


def test_without_zero_variance_groups_it_is_trls_sampler():
    ours = make()
    trl = RepeatSampler(PROMPTS, mini_repeat_count=2, batch_size=2, repeat_count=2, seed=3)
    assert list(ours) == list(trl) and len(ours) == len(trl)


def test_zero_variance_prompts_come_back_less_then_return():
    sampler = make(zero_variance_weight=0.1, cooldown_epochs=2)
    list(sampler)  # epoch 1
    groups = [f"p{i}" for i in range(4) for _ in range(2)]  # p0..p3 taught nothing, p4..p7 unseen
    sampler.observe(groups, [0.0] * 8, group_size=2)
    sampler.observe(["p4", "p4"], [0.5, -0.5], group_size=2)
    assert sampler.zero_variance_groups == 4 and sampler.observed_groups == 5
    epoch2 = list(sampler)
    assert len(epoch2) == len(make())
    low = sum(epoch2.count(i) for i in range(4)) / (2 * 2)  # appearances of p0..p3 (each counted 2x2 times)
    assert low <= 1  # 8 draws, weight 0.4 of 4.4: at most one of them appears
    assert set(epoch2) >= {4, 5, 6, 7}
    list(sampler)  # epoch 3: still within the cooldown
    epoch4 = list(sampler)  # epoch 4: weights back to 1, every prompt again
    assert sorted(set(epoch4)) == list(range(8))


def test_a_group_with_variance_restores_the_weight_at_once():
    sampler = make()
    sampler.observe(["p1", "p1"], [0.0, 0.0], group_size=2)
    sampler.observe(["p1", "p1"], [1.0, -1.0], group_size=2)
    assert sampler.history == {} and sampler.weights(sampler.history, 1) == [1.0] * 8


def test_state_round_trip_replays_the_interrupted_epoch():
    a = make()
    list(a)
    a.observe(["p0", "p0", "p5", "p5"], [0.0] * 4, group_size=2)
    epoch2 = list(a)
    saved = json.loads(json.dumps(a.state()))  # as written to the checkpoint
    a.observe(["p6", "p6"], [0.0, 0.0], group_size=2)  # after the checkpoint: lost with the crash
    b = make()
    b.load_state(saved, replay=True)
    assert list(b) == epoch2  # the trainer restarts the epoch and skips what was done
    c = make()
    c.load_state(saved, replay=False)  # checkpoint at an epoch boundary: the next epoch is drawn
    assert c.epoch == 2 and list(c) != epoch2 and c.epoch == 3


@pytest.mark.parametrize(
    "option, key",
    [
        ("on", "data.sampler"),
        ({"zero_variance_weight": 0}, "data.sampler.zero_variance_weight"),
        ({"zero_variance_weight": 1.5}, "data.sampler.zero_variance_weight"),
        ({"zero_variance_weight": True}, "data.sampler.zero_variance_weight"),
        ({"cooldown_epochs": 0}, "data.sampler.cooldown_epochs"),
        ({"cooldown_epochs": 1.5}, "data.sampler.cooldown_epochs"),
        ({"cooldown": 2}, "data.sampler.cooldown"),
    ],
)
def test_bad_options_are_reported(option, key):
    data = {"builder": "countdown", "source": "generate", "size": 8, "sampler": option}
    assert [p.key for p in validate_data_config(data)] == [key]


@pytest.mark.parametrize(
    ("key", "value", "fix"),
    [
        ("sampler", {"zero_variance_weight": 0.2}, "data.sampler beside data.mixture"),
        ("eval_size", 4, "data.eval_size beside data.mixture"),
        ("eval_split", "test", "data.eval_size beside data.mixture"),
    ],
)
def test_whole_dataset_options_inside_a_mixture_part_are_errors_not_no_ops(key, value, fix):
    part = {"builder": "countdown", "source": "generate", "size": 8}
    data = {"mixture": [part, {**part, key: value}]}
    problems = validate_data_config(data)
    assert [p.key for p in problems] == [f"data.mixture.1.{key}"], problems
    assert fix in problems[0].text
    assert validate_data_config({"mixture": [part, part], **({key: value} if key != "eval_split" else {})}) == []


def _sampled_recipe(make_recipe, rows: int):
    """Countdown with the zero-variance sampler, 4 steps, a checkpoint every 2."""
    sampler = {"zero_variance_weight": 0.2, "cooldown_epochs": 1}
    data = {"builder": "countdown", "source": "generate", "size": rows, "system_prompt": "none", "sampler": sampler}
    trainer = {"max_steps": 4, "save_strategy": "steps", "save_steps": 2}
    return make_recipe(data=data, trainer=trainer, rewards=[{"name": "countdown"}])


@pytest.mark.slow
def test_training_feeds_every_generation_once_and_resumes_the_sampler(tmp_path, make_recipe):
    path = _sampled_recipe(make_recipe, rows=4)
    run(load_recipe(path))
    out = tmp_path / "out"
    state = json.loads((out / "checkpoint-4" / "zero_variance_sampler.json").read_text())
    # 8 completions per step in groups of 4: 2 groups a step, each seen exactly once
    assert state["observed_groups"] == 8 and 0 <= state["zero_variance_groups"] <= 8
    assert state["epoch"] == 2  # 4 prompts, 2 per step: an epoch every 2 steps
    first = json.loads((out / "checkpoint-2" / "zero_variance_sampler.json").read_text())
    assert first["observed_groups"] == 4
    run(load_recipe(path, ["trainer.max_steps=6"]), resume=True)
    resumed = json.loads((out / "checkpoint-6" / "zero_variance_sampler.json").read_text())
    assert resumed["observed_groups"] == 12 and resumed["epoch"] == 3  # continued, not restarted


class _KilledAfterCheckpoint(Exception):
    pass


class _DieOnSave(TrainerCallback):
    """Ends the run right after the trainer wrote a checkpoint, before the callbacks added after it see on_save:
    the moment a SIGKILL between the checkpoint's save and the sampler's own save would hit."""

    def on_save(self, args, state, control, **kwargs):
        raise _KilledAfterCheckpoint


@pytest.mark.slow
def test_a_kill_right_after_a_checkpoint_save_keeps_the_sampler_state_for_resume(tmp_path, make_recipe):
    path = _sampled_recipe(make_recipe, rows=6)
    with pytest.raises(_KilledAfterCheckpoint):  # extra callbacks run before the sampler's
        run(load_recipe(path), extra_callbacks=[_DieOnSave()])
    out = tmp_path / "out"
    saved = out / "checkpoint-2" / "zero_variance_sampler.json"
    assert saved.is_file()  # the checkpoint --resume picks up has the sampler state, not a fresh sampler
    assert json.loads(saved.read_text())["observed_groups"] == 4
    run(load_recipe(path), resume=True)
    resumed = json.loads((out / "checkpoint-4" / "zero_variance_sampler.json").read_text())
    run(load_recipe(path, [f"trainer.output_dir={tmp_path / 'straight'}"]))
    straight = json.loads((tmp_path / "straight" / "checkpoint-4" / "zero_variance_sampler.json").read_text())
    assert resumed == straight  # the same sampling state as a run never interrupted
