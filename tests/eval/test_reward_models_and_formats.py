"""``eval`` scores reward models (``rewards: - {model: ...}``) as TRL's trainer does, and takes datasets in TRL's
standard format (string prompts: plain text, no chat template) as well as conversational ones, with every backend.
All offline: ``builtin:tiny-reward``, the tiny model, and tests/fake_openai.py for the endpoint backend."""

from __future__ import annotations

import json

import pytest

from grpo_trl.check import load_recipe
from grpo_trl.check.rewards import build_rewards
from grpo_trl.eval import evaluate
from grpo_trl.eval.backends import Generations, prompt_ids, render
from grpo_trl.eval.score import load_reward_models, score
from tests.fake_openai import FakeOpenAI

REWARDS = [
    {"name": "xml_format", "args": {"tags": ["think", "answer"]}},
    {"model": "builtin:tiny-reward", "weight": 0.5},
]
TEXTS = ["<think>a</think><answer>4</answer>", "no tags at all", "<answer>5</answer>"]


def completion_is_text(completions, **kwargs):
    """A reward saying which shape TRL's contract gave it: 1.0 for a string, 0.0 for a message list."""
    return [float(isinstance(c, str)) for c in completions]


def _standard_data(tmp_path, rows: int = 4) -> dict:
    path = tmp_path / "problems.jsonl"
    path.write_text(
        "".join(
            json.dumps({"prompt": f"What is {i} + {i}? Answer:", "solution": str(2 * i)}) + "\n" for i in range(rows)
        )
    )
    return {"builder": "hub", "path": str(path), "prompt_format": "standard"}


def _conversational(prompts: list[str]) -> list[list[dict]]:
    return [[{"role": "user", "content": p}] for p in prompts]


@pytest.fixture
def recipe(make_recipe):
    return load_recipe(make_recipe(rewards=REWARDS))


def test_reward_model_scores_equal_trl_trainer_scores(recipe):
    """The same prompts and completions through GRPOTrainer._calculate_rewards and through eval's RewardModel."""
    from grpo_trl.train import build_trainer

    trainer = build_trainer(recipe)
    name = trainer.reward_func_names[1]
    model = load_reward_models(recipe, build_rewards(recipe)[0])[1]
    assert name == model.__name__ == "tiny-reward"
    texts = ["<answer>4</answer>", "x", "a longer completion, so that padding matters"]
    for prompts, completions in (
        (["2+2?", "3+1? Think", "1+3?"], texts),  # standard
        (_conversational(["2+2?", "3+1? Think", "1+3?"]), [[{"role": "assistant", "content": t}] for t in texts]),
    ):
        inputs = [{"prompt": p} for p in prompts]
        expected = trainer._calculate_rewards(inputs, prompts, completions, [[1]] * 3)[:, 1].tolist()
        assert model(prompts=prompts, completions=completions) == pytest.approx(expected, abs=1e-5)
        assert len(set(expected)) == 3  # three different scores: a real model, not a constant


@pytest.mark.parametrize("standard", [True, False], ids=["standard", "conversational"])
def test_score_gives_the_reward_model_a_mean_and_rewards_see_trl_shapes(make_recipe, standard):
    from datasets import Dataset

    recipe = load_recipe(make_recipe(rewards=[*REWARDS, {"name": f"{__name__}:completion_is_text", "weight": 0}]))
    prompts = ["2+2?", "2+3?"] if standard else _conversational(["2+2?", "2+3?"])
    ds = Dataset.from_dict({"prompt": prompts})
    gens = Generations([TEXTS, TEXTS[::-1]], [[3, 2, 1], [1, 2, 3]])
    rewards, weights = build_rewards(recipe)
    scored = score(recipe, load_reward_models(recipe, rewards), weights, ds, gens)
    means = scored.summary["rewards"]
    assert set(means) == {"xml_format", "tiny-reward", "completion_is_text"} and isinstance(
        means["tiny-reward"], float
    )
    assert means["completion_is_text"] == float(standard)  # a string after a string prompt, else messages
    model_scores = [row["rewards"]["tiny-reward"] for row in scored.rows]
    assert means["tiny-reward"] == pytest.approx(sum(model_scores) / 6)
    totals = [row["rewards"]["xml_format"] + 0.5 * row["rewards"]["tiny-reward"] for row in scored.rows]
    assert scored.summary["reward_mean"] == pytest.approx(sum(totals) / 6)
    assert [row["rewards"]["xml_format"] for row in scored.rows[:3]] == [0.8, 0.0, 0.4]  # either shape, same text
    assert scored.summary["pass_reward"] == "xml_format"


def test_standard_prompts_render_and_tokenize_as_trl_does(recipe):
    from grpo_trl.models.load import load_tokenizer

    tokenizer = load_tokenizer(recipe.model, recipe.model["name"], recipe.file, recipe.base_dir)
    assert render(tokenizer, "What is 2 + 2?") == "What is 2 + 2?"  # no chat template
    assert prompt_ids(tokenizer, "What is 2 + 2?") == tokenizer(text=["What is 2 + 2?"])["input_ids"][0]  # TRL's call
    chat = _conversational(["What is 2 + 2?"])[0]
    assert render(tokenizer, chat) != "What is 2 + 2?" and "What is 2 + 2?" in render(tokenizer, chat)


@pytest.mark.slow
def test_eval_on_string_prompts_with_a_reward_model_same_for_every_backend(tmp_path, make_recipe):
    recipe = load_recipe(make_recipe(data=_standard_data(tmp_path), rewards=REWARDS))
    common = {"split": "train", "n": 2, "limit": 3, "max_new_tokens": 6}
    local = evaluate(recipe, model=recipe.model["name"], output_dir=str(tmp_path / "hf"), **common)
    saved = json.loads((tmp_path / "hf" / "eval.json").read_text())
    assert isinstance(saved["rewards"]["tiny-reward"], float) and saved["prompts"] == 3
    rows = [json.loads(x) for x in (tmp_path / "hf" / "eval_completions.jsonl").read_text().splitlines()]
    assert all(isinstance(r["prompt"], str) and "tiny-reward" in r["rewards"] for r in rows)
    replies = {  # what a server would answer: the transformers backend's completions
        (r["prompt"], r["prompt_index"] * 2 + r["sample"]): [(r["completion"], "length", r["length"])] for r in rows
    }
    for api in ("completions", "chat"):  # a string prompt goes through the completions API even with api: chat
        with FakeOpenAI(models=["served"], reply=lambda body: replies[body["prompt"], body["seed"]]) as server:
            remote = evaluate(
                recipe,
                model="served",
                backend="endpoint",
                endpoint={"base_url": server.base_url, "api": api, "max_concurrency": 2},
                output_dir=str(tmp_path / api),
                **common,
            )
        posts = server.requests[1:]
        assert {r["path"] for r in posts} == {"/v1/completions"}
        assert {r["body"]["prompt"] for r in posts} == {f"What is {i} + {i}? Answer:" for i in range(3)}  # untemplated
        skip = ("model", "backend", "output_dir")
        assert {k: v for k, v in remote.items() if k not in skip} == {k: v for k, v in local.items() if k not in skip}


def test_check_prints_reward_models_by_the_name_trl_logs(make_recipe, capsys):
    from grpo_trl.cli import main

    assert main(["check", str(make_recipe(rewards=REWARDS))]) == 0
    assert "rewards             xml_format x1.0, tiny-reward x0.5" in capsys.readouterr().out


def needs_every_trl_keyword(completions, trainer_state, log_extra, log_metric, **kwargs):
    """A reward written for TRL: it reads the trainer state and logs, as TRL's docs show."""
    log_metric("my_metric", 1.0)
    log_extra("my_column", [str(trainer_state.global_step)] * len(completions))
    return [float(trainer_state.global_step >= 0)] * len(completions)


def uses_kwargs_like_trl(completions, **kwargs):
    return [float(kwargs["trainer_state"].global_step + 1)] * len(completions)


@pytest.mark.parametrize("reward", ["needs_every_trl_keyword", "uses_kwargs_like_trl"])
def test_eval_calls_rewards_with_every_keyword_trl_passes(make_recipe, reward):
    """A reward that trains under TRL must score in eval too: TRL always passes trainer_state, log_extra and
    log_metric, so eval passes them as well (a fresh TrainerState; logs go nowhere)."""
    from datasets import Dataset

    recipe = load_recipe(make_recipe(rewards=[{"name": f"{__name__}:{reward}"}]))
    ds = Dataset.from_dict({"prompt": ["2+2?", "2+3?"]})
    gens = Generations([TEXTS, TEXTS[::-1]], [[3, 2, 1], [1, 2, 3]])
    rewards, weights = build_rewards(recipe)
    scored = score(recipe, load_reward_models(recipe, rewards), weights, ds, gens)
    assert [row["rewards"][reward] for row in scored.rows] == [1.0] * 6


def test_reward_model_is_loaded_with_the_model_init_kwargs_trl_uses(make_recipe):
    """TRL loads a reward model with GRPOConfig.model_init_kwargs (model.dtype...): eval scores it in that dtype."""
    import torch

    from grpo_trl.train import build_trainer

    recipe = load_recipe(make_recipe(rewards=REWARDS), ["model.dtype=bfloat16"])
    trainer = build_trainer(recipe)
    model = load_reward_models(recipe, build_rewards(recipe)[0])[1]
    assert trainer.reward_funcs[1].dtype == model.model.dtype == torch.bfloat16
    prompts, completions = ["2+2?", "3+1? Think"], ["<answer>4</answer>", "a longer completion"]
    expected = trainer._calculate_rewards([{"prompt": p} for p in prompts], prompts, completions, [[1]] * 2)
    assert model(prompts=prompts, completions=completions) == expected[:, 1].tolist()
