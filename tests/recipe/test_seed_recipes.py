"""The shipped seed recipes run what their seeds ran: the loss, the format reward, the number of batches."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grpo_trl.check import load_recipe
from grpo_trl.check.plan import make_plan
from grpo_trl.check.rewards import build_rewards

ROOT = Path(__file__).resolve().parents[2]
RECIPES = ROOT / "recipes"
SEED_RECIPES = {  # recipe -> the seed its header traces every number to
    "countdown/qwen2.5-3b-instruct.yaml": "seed 001",
    "gsm8k/qwen2.5-1.5b-instruct.yaml": "seed 003",
    "gsm8k/qwen2.5-0.5b-lora-1gpu.yaml": "seed 004",
    "qlora/qwen2.5-7b-instruct-24gb.yaml": "seed 004",
    "tools/countdown-calculator-qwen2.5-3b.yaml": "seed 001",
    "tools/gsm8k-python-qwen2.5-1.5b.yaml": "seed 003",
}
SEED_COMPLETIONS = json.loads((ROOT / "tests/rewards/seed001_completions.json").read_text(encoding="utf-8"))


def _load(name: str):
    # validate=False: the GSM8K recipe's `require_answer_tag` arg needs a gsm8k reward that takes it (another branch)
    return load_recipe(RECIPES / name, validate=False)


def test_every_recipe_but_the_demos_is_a_seed_recipe():
    shipped = {str(p.relative_to(RECIPES)) for p in RECIPES.rglob("*.yaml")}
    # vlm/: no seed trains a vision-language model; its header says its numbers are not measured (test below)
    assert {p for p in shipped if not p.startswith(("accelerate/", "demo/", "vlm/"))} == set(SEED_RECIPES)


def test_a_recipe_from_no_seed_says_its_numbers_are_not_measured():
    for path in RECIPES.glob("vlm/*.yaml"):
        header = "\n".join(line for line in path.read_text().splitlines() if line.startswith("#"))
        assert "Not measured here" in header, path


@pytest.mark.parametrize("name", sorted(SEED_RECIPES))
def test_header_names_its_seed_and_what_differs_and_the_loss_is_the_seeds(name):
    header = [line for line in (RECIPES / name).read_text().splitlines() if line.startswith("#")]
    text = "\n".join(header)
    assert SEED_RECIPES[name] in text and "loss_type grpo" in text
    assert "What differs" in text or "own choice" in text
    # every seed averages each completion's token losses, then over completions: TRL's grpo, not its default dapo
    assert _load(name).to_grpo_config().loss_type == "grpo"


def test_the_countdown_recipe_scores_seed_001s_printed_completions_as_the_seed_did():
    recipe = _load("countdown/qwen2.5-3b-instruct.yaml")
    funcs, weights = build_rewards(recipe, output_dir="unused")
    fmt = funcs[[spec["name"] for spec in recipe.rewards].index("think_format")]
    texts = list(SEED_COMPLETIONS.values())
    assert fmt(prompts=[""] * 5, completions=texts, completion_ids=[[]] * 5) == [1.0] * 5
    assert weights == [1.0, 1.0]


def test_the_gsm8k_recipe_runs_seed_003s_500_batches_of_mu_3_updates():
    plan = make_plan(_load("gsm8k/qwen2.5-1.5b-instruct.yaml"))
    assert plan.num_iterations == 3
    assert plan.optimizer_steps_per_generation == 3
    assert plan.total_optimizer_steps / plan.optimizer_steps_per_generation == 500
    spec = _load("gsm8k/qwen2.5-1.5b-instruct.yaml").rewards[0]
    assert spec["name"] == "gsm8k" and spec["args"] == {"require_answer_tag": True}
