"""``rollout_func`` through the Python API (``grpo_trl.train(recipe, rollout_func=f)``, as
``GRPOTrainer(rollout_func=f)``) behaves as the recipe key ``rollout_func: {func, fields}``: the fields it returns are
declared (``rollout_fields=[...]``) or checked at the first batch, with one error naming what is missing."""

from __future__ import annotations

import pytest
import yaml

import grpo_trl
from grpo_trl.errors import RecipeError
from tests.tools import trl_doc_agents as docs

M = "tests.tools.trl_doc_agents:"


def _recipe(tmp_path, model: str, **data) -> str:
    tmp_path.mkdir(parents=True, exist_ok=True)
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(f'{{"prompt": [{{"role": "user", "content": "say {i}"}}]}}\n' for i in range(6)))
    recipe = {
        "model": {"name": model},
        "data": {"builder": "hub", "path": str(rows)},
        "rewards": [{"name": M + "env_reward_passthrough"}],
        "trainer": {
            "output_dir": str(tmp_path / "out"),
            "max_steps": 1,
            "per_device_train_batch_size": 2,
            "num_generations": 2,
            "max_completion_length": 4,
            "use_cpu": True,
            "bf16": False,
            "report_to": "none",
            "save_strategy": "no",
        },
        **data,
    }
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(recipe))
    return str(path)


def _without_env_reward(prompts, trainer):
    out = docs.rollout_func(prompts, trainer)
    out.pop("env_reward")
    out["other"] = [0.0] * len(out["completion_ids"])
    return out


@pytest.mark.slow  # two real trainings
@pytest.mark.parametrize("declared", [None, ["env_reward"]])
def test_the_api_rollout_func_trains_like_the_recipe_key(tmp_path, tiny_model, declared):
    kwargs = {} if declared is None else {"rollout_fields": declared}
    api = grpo_trl.train(_recipe(tmp_path / "api", tiny_model), rollout_func=docs.rollout_func, **kwargs)
    section = {"func": M + "rollout_func", "fields": ["env_reward"]}
    key = grpo_trl.train(_recipe(tmp_path / "key", tiny_model, rollout_func=section))
    mean = "rewards/env_reward_passthrough/mean"
    assert [e[mean] for e in api.log_history if mean in e] == [e[mean] for e in key.log_history if mean in e]
    assert any(mean in e for e in api.log_history)


@pytest.mark.parametrize("how", ["api", "api-declared", "bare-recipe-key"])
def test_a_field_the_rewards_read_and_the_rollout_never_returns_is_one_error(tmp_path, tiny_model, how):
    import tests.trl_cases.test_rollout_func_api as me

    name = "tests.trl_cases.test_rollout_func_api:_without_env_reward"
    if how == "bare-recipe-key":
        path, kwargs = _recipe(tmp_path, tiny_model, rollout_func=name), {}
    else:
        path, kwargs = _recipe(tmp_path, tiny_model), {"rollout_func": me._without_env_reward}
        if how == "api-declared":
            kwargs["rollout_fields"] = ["env_reward"]
    with pytest.raises(RecipeError) as err:
        grpo_trl.train(path, **kwargs)
    (problem,) = err.value.problems
    assert problem.key == "rollout_func" and "returned no env_reward" in problem.message and "other" in problem.message


def test_a_declared_field_list_that_misses_what_a_reward_reads_is_refused_before_training(tmp_path, tiny_model):
    with pytest.raises(RecipeError, match="env_reward"):
        grpo_trl.build_trainer(_recipe(tmp_path, tiny_model), rollout_func=docs.rollout_func, rollout_fields=["x"])
