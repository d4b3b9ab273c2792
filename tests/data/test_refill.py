"""DAPO dynamic sampling (``data.dynamic_sampling``): the option's check, which groups count as zero-variance, which
groups make the batch, the fresh-prompt order across a resume, joining batches of different widths, and real
GRPOTrainer runs (refill happens and is logged, steps_per_generation/num_iterations, a resume gives the same
metrics as a run never interrupted)."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import TrainerCallback

from grpo_trl.check import load_recipe
from grpo_trl.data.options import validate_data_config
from grpo_trl.data.refill import RefillOrder, choose_groups, merge_batches, zero_variance
from grpo_trl.train import run

COUNTDOWN = {"builder": "countdown", "source": "generate", "size": 8, "system_prompt": "none"}


@pytest.mark.parametrize(
    ("option", "key", "text"),
    [
        ({"max_resample": 0}, "data.dynamic_sampling.max_resample", "must be >= 1, got 0"),
        ({"max_resample": 1.5}, "data.dynamic_sampling.max_resample", "expected int, got float 1.5"),
        ({"max_resample": True}, "data.dynamic_sampling.max_resample", "expected int, got bool True"),
        ({"max_resamples": 2}, "data.dynamic_sampling.max_resamples", "keys: max_resample"),
        (3, "data.dynamic_sampling", "expected mapping"),  # the schema says it, as for data.sampler
    ],
)
def test_bad_options_are_one_problem_naming_the_key(option, key, text):
    problems = validate_data_config({**COUNTDOWN, "dynamic_sampling": option})
    assert [p.key for p in problems] == [key], problems
    assert text in problems[0].text


def test_good_options_and_the_mixture_rules():
    assert validate_data_config({**COUNTDOWN, "dynamic_sampling": {}}) == []
    assert validate_data_config({**COUNTDOWN, "dynamic_sampling": {"max_resample": 4}}) == []
    part = {"builder": "countdown", "source": "generate", "size": 8}
    assert validate_data_config({"mixture": [part, part], "dynamic_sampling": {"max_resample": 1}}) == []
    inside = validate_data_config({"mixture": [part, {**part, "dynamic_sampling": {}}]})
    assert [p.key for p in inside] == ["data.mixture.1.dynamic_sampling"]
    assert "set data.dynamic_sampling beside data.mixture" in inside[0].text


def test_check_prints_one_error_line_before_any_model_loads(tmp_path, capsys):
    import yaml

    from grpo_trl.cli import main

    data = {**COUNTDOWN, "dynamic_sampling": {"max_resample": -1}}
    recipe = {"model": {"name": "no/such-model"}, "data": data, "rewards": [{"name": "xml_format"}]}
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(recipe))
    code = main(["check", str(path)])  # in process, as the images test below: `grpo-trl check` is this call
    out = capsys.readouterr()
    errors = [line for line in (out.out + out.err).splitlines() if line.startswith("error:")]
    assert code != 0 and len(errors) == 1, out.out + out.err
    assert "data.dynamic_sampling.max_resample" in errors[0] and "must be >= 1" in errors[0]


def test_check_refuses_groups_that_would_span_two_processes(make_recipe):
    from grpo_trl.check.validate import validate

    data = {**COUNTDOWN, "dynamic_sampling": {"max_resample": 1}}
    split = load_recipe(make_recipe(data=data, trainer={"per_device_train_batch_size": 2}), validate=False)
    problems = validate(split, world_size=2)  # 2 rows a process, groups of 4: TRL accepts it, refill cannot
    assert [p.key for p in problems] == ["data.dynamic_sampling"], problems
    assert (
        "not a multiple of num_generations = 4" in problems[0].text
        and "per_device_train_batch_size" in problems[0].fix
    )
    assert validate(load_recipe(make_recipe(data=data)), world_size=2) == []  # 8 rows a process: whole groups


# ------------------------------------------------------------------------------------------------ zero variance
def _trl_zero_std(rewards: list[float], size: int) -> list[bool]:
    """TRL's own test (sum_then_normalize): nan-aware sample std of the group, isclose to 0."""
    flags = []
    for start in range(0, len(rewards), size):
        group = torch.tensor(rewards[start : start + size], dtype=torch.float64)
        valid = group[~torch.isnan(group)]
        std = valid.std() if valid.numel() > 1 else torch.tensor(float("nan"))
        flags.append(bool(torch.isnan(std)) or bool(torch.isclose(std, torch.zeros((), dtype=std.dtype), atol=1e-8)))
    return flags


GROUP = st.one_of(
    st.tuples(st.sampled_from([0.0, 1.0, 0.25, -2.0]), st.integers(2, 6)).map(lambda t: [t[0]] * t[1]),  # all equal
    st.lists(st.sampled_from([0.0, 0.5, 1.0, math.nan]), min_size=2, max_size=6),  # mixed, None rewards (NaN)
)


@settings(max_examples=200, deadline=None)
@given(st.integers(2, 6).flatmap(lambda n: st.lists(GROUP.map(lambda g: (g * n)[:n]), min_size=1, max_size=6)))
def test_zero_variance_is_trls_zero_std(groups):
    size = len(groups[0])
    flat = [r for g in groups for r in g]
    assert zero_variance(flat, size) == _trl_zero_std(flat, size)
    for group, flag in zip(groups, zero_variance(flat, size)):
        valid = [r for r in group if not math.isnan(r)]
        assert flag == (len(valid) < 2 or len(set(valid)) == 1)


# ------------------------------------------------------------------------------------------------ choosing groups
@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.booleans(), min_size=1, max_size=5), min_size=1, max_size=4), st.integers(1, 8))
def test_choose_groups_prefers_variance_then_fills_earliest(flags, need):
    chosen = choose_groups(flags, need)
    every = [(r, g) for r, row in enumerate(flags) for g in range(len(row))]
    good = [(r, g) for r, g in every if not flags[r][g]]
    assert len(chosen) == len(set(chosen)) == min(need, len(every))
    assert set(chosen) <= set(every)
    if len(good) >= need:
        assert chosen == good[:need]  # only groups with variance, the earliest generated
    else:
        zero = [(r, g) for r, g in every if flags[r][g]]
        assert set(chosen) == set(good) | set(zero[: need - len(good)])  # budget spent: zero-variance groups fill


def test_a_batch_with_no_zero_variance_group_is_kept_as_it_is():
    assert choose_groups([[False, False, False]], 3) == [(0, 0), (0, 1), (0, 2)]


# ------------------------------------------------------------------------------------------------ fresh prompts
@settings(max_examples=50, deadline=None)
@given(st.integers(1, 9), st.lists(st.integers(1, 7), min_size=1, max_size=6), st.integers(0, 5), st.integers(0, 3))
def test_refill_order_resumes_where_it_stopped(size, takes, cut, seed):
    straight = RefillOrder(size, seed)
    expected = [straight.take(n) for n in takes]
    first = RefillOrder(size, seed)
    got = [first.take(n) for n in takes[:cut]]
    resumed = RefillOrder(size, seed)
    resumed.load_state(first.state())
    got += [resumed.take(n) for n in takes[cut:]]
    assert got == expected
    flat = [i for part in expected for i in part]
    for start in range(0, len(flat) - size + 1, size):  # each full pass: every prompt once
        if start % size == 0:
            assert sorted(flat[start : start + size]) == list(range(size))


def test_refill_order_passes_over_skipped_prompts_unless_nothing_else_is_left():
    order = RefillOrder(6, seed=1)
    assert all(i % 2 for i in order.take(3, skip=lambda i: i % 2 == 0))
    assert len(RefillOrder(4).take(3, skip=lambda i: True)) == 3  # all in cooldown: taken anyway, no endless loop


def test_with_data_sampler_the_refill_passes_over_prompts_in_cooldown():
    from datasets import Dataset

    from grpo_trl.data.refill import Refill
    from grpo_trl.data.sampler import ZeroVarianceSampler

    sampler = ZeroVarianceSampler(Dataset.from_dict({"prompt": ["a", "b", "c", "d"]}), mini_repeat_count=2, seed=0)
    list(sampler)  # epoch 1 drawn
    sampler.observe(["a", "a", "c", "c"], [0.0, 0.0, 0.0, 0.0], group_size=2)  # "a" and "c" taught nothing
    skip = Refill(None, 1, RefillOrder(4), sampler)._skip()
    assert [skip(i) for i in range(4)] == [True, False, True, False]
    assert sorted(RefillOrder(4, seed=3).take(2, skip)) == [1, 3]
    assert Refill(None, 1, RefillOrder(4), None)._skip() is None  # no data.sampler: every prompt


# ------------------------------------------------------------------------------------------------ joining batches
def _batch(n: int, prompt_w: int, completion_w: int, seed: int) -> dict:
    g = torch.Generator().manual_seed(seed)
    p_len = torch.randint(1, prompt_w + 1, (n,), generator=g)
    c_len = torch.randint(1, completion_w + 1, (n,), generator=g)
    prompt_mask = (torch.arange(prompt_w) >= prompt_w - p_len[:, None]).long()  # left-padded
    completion_mask = (torch.arange(completion_w) < c_len[:, None]).long()  # right-padded
    return {
        "prompt_ids": torch.randint(1, 50, (n, prompt_w), generator=g) * prompt_mask,
        "prompt_mask": prompt_mask,
        "completion_ids": torch.randint(1, 50, (n, completion_w), generator=g) * completion_mask,
        "completion_mask": completion_mask,
        "old_per_token_logps": torch.randn(n, completion_w, generator=g) * completion_mask,
        "advantages": torch.randn(n, generator=g),
        "num_items_in_batch": completion_mask.sum(),
    }


def _tokens(batch: dict, i: int) -> tuple:
    return (
        batch["prompt_ids"][i][batch["prompt_mask"][i].bool()].tolist(),
        batch["completion_ids"][i][batch["completion_mask"][i].bool()].tolist(),
        batch["old_per_token_logps"][i][batch["completion_mask"][i].bool()].tolist(),
        batch["advantages"][i].item(),
    )


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 6), st.integers(1, 9), st.integers(1, 9)), min_size=1, max_size=3), st.data())
def test_merge_keeps_each_row_whole_whatever_the_widths(shapes, data):
    batches = [_batch(n, pw, cw, seed) for seed, (n, pw, cw) in enumerate(shapes)]
    rows = [data.draw(st.lists(st.integers(0, b["advantages"].numel() - 1), max_size=4)) for b in batches]
    if not any(rows):
        rows[0] = [0]
    merged = merge_batches(batches, rows, pad_token_id=0)
    expected = [_tokens(b, i) for b, picked in zip(batches, rows) for i in picked]
    assert [_tokens(merged, i) for i in range(len(expected))] == expected
    assert merged["prompt_mask"][:, -1].all()  # prompts still end at the right edge (left padding)
    assert "num_items_in_batch" not in merged


def test_merge_refuses_multimodal_batches():
    from grpo_trl.errors import GrpoTrlError

    batch = {**_batch(2, 3, 3, 0), "pixel_values": torch.zeros(2, 3)}
    with pytest.raises(GrpoTrlError, match="pixel_values"):
        merge_batches([batch, batch], [[0], [1]], pad_token_id=0)


# ------------------------------------------------------------------------------------------------ real trainer
def half_constant(completions: list, target: list, **kwargs) -> list[float]:
    """Even targets: a constant 0 (zero variance, every time); odd: how long the completion is (always varies)."""
    texts = [c[0]["content"] if isinstance(c, list) else c for c in completions]
    return [0.0 if t % 2 == 0 else float(len(text)) for text, t in zip(texts, target)]


def _refill_recipe(make_recipe, sampler=None, **trainer):
    data = {**COUNTDOWN, "dynamic_sampling": {"max_resample": 3}, **({"sampler": sampler} if sampler else {})}
    rewards = [{"name": "tests.data.test_refill:half_constant"}]
    return make_recipe(data=data, rewards=rewards, trainer={"max_steps": 4, **trainer})


def _metrics(history: list[dict]) -> list[dict]:
    timing = ("step_time", "timing/", "train_runtime", "train_samples_per_second", "train_steps_per_second")
    return [{k: v for k, v in h.items() if not k.startswith(timing)} for h in history if "loss" in h]


@pytest.mark.slow
def test_refill_fills_the_batch_with_groups_that_teach(make_recipe, tmp_path):
    import json
    from pathlib import Path

    from grpo_trl.report.page import write_report

    result = run(load_recipe(_refill_recipe(make_recipe)))
    logs = _metrics(result.log_history)
    assert len(logs) == 4
    for h in logs:
        assert h["dynamic_sampling/zero_std_kept"] <= h["dynamic_sampling/zero_std_generated"]
        assert h["dynamic_sampling/generations"] >= 8 and math.isfinite(h["loss"])
    # half the prompts always teach nothing: some batch needed a refill, and got one with variance
    assert any(h["dynamic_sampling/resample_rounds"] >= 1 for h in logs)
    assert sum(h["dynamic_sampling/zero_std_kept"] for h in logs) < sum(
        h["dynamic_sampling/zero_std_generated"] for h in logs
    )
    plots = json.loads((Path(write_report(tmp_path / "out")).parent / "report.json").read_text())["plots"]
    assert plots["dynamic_sampling.png"] == [
        "dynamic_sampling/dropped",
        "dynamic_sampling/zero_std_generated",
        "dynamic_sampling/zero_std_kept",
    ]
    assert plots["dynamic_sampling_generations.png"] == ["dynamic_sampling/generations"]
    assert plots["dynamic_sampling_rounds.png"] == ["dynamic_sampling/resample_rounds"]


@pytest.mark.slow
def test_refill_with_steps_per_generation_iterations_and_data_sampler(make_recipe):
    trainer = {"steps_per_generation": 2, "num_iterations": 2, "per_device_train_batch_size": 4}
    sampler = {"zero_variance_weight": 0.2, "cooldown_epochs": 1}
    result = run(load_recipe(_refill_recipe(make_recipe, sampler=sampler, max_steps=12, **trainer)))
    logs = _metrics(result.log_history)
    assert len(logs) == 12 and all(math.isfinite(h["loss"]) for h in logs)
    generated = [h for h in logs if "dynamic_sampling/generations" in h]
    assert len(generated) == 3  # one generation batch (2 groups) serves 2 slices x 2 iterations = 4 steps
    assert any(h["dynamic_sampling/resample_rounds"] for h in generated)  # a joined batch was split and reused


class _Killed(Exception):
    pass


class _DieOnSave(TrainerCallback):
    def on_save(self, args, state, control, **kwargs):
        raise _Killed


@pytest.mark.slow
def test_a_resumed_run_logs_the_same_metrics_as_one_never_interrupted(make_recipe, tmp_path):
    path = _refill_recipe(make_recipe, save_strategy="steps", save_steps=2)
    with pytest.raises(_Killed):
        run(load_recipe(path), extra_callbacks=[_DieOnSave()])
    assert (tmp_path / "out" / "checkpoint-2" / "dynamic_sampling.json").is_file()
    resumed = run(load_recipe(path), resume=True)
    straight = run(load_recipe(path, [f"trainer.output_dir={tmp_path / 'straight'}"]))
    assert _metrics(resumed.log_history)[-2:] == _metrics(straight.log_history)[-2:]
    assert any(h["dynamic_sampling/resample_rounds"] for h in _metrics(straight.log_history)[-2:])


def test_check_refuses_dynamic_sampling_on_data_with_images_before_any_model_loads(tmp_path, capsys):
    """Batches with images cannot be joined (merge_batches): refused by check and at train start, not at the first
    refill, mid-run, after the model loaded and trained."""
    from pathlib import Path

    import yaml

    from grpo_trl.cli import main

    recipe = yaml.safe_load((Path(__file__).parents[2] / "recipes/demo/tiny-vlm.yaml").read_text())
    recipe["data"]["dynamic_sampling"] = {"max_resample": 2}
    recipe["trainer"]["output_dir"] = str(tmp_path / "out")
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(recipe))
    assert main(["check", str(path)]) == 1
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert (
        len(errors) == 1
        and "data.dynamic_sampling: cannot join generation batches of prompts with images" in errors[0]
    )
    assert not (tmp_path / "out").exists()
