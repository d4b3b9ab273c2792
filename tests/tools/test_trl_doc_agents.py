"""TRL's documented agent examples run twice on the same tiny tool-calling model and seed: under grpo-trl, from a
recipe naming the example's objects (``tests/tools/trl_doc_agents.py``, written as TRL's docs write them), and under
plain ``GRPOTrainer`` given those objects directly with the recipe's ``GRPOConfig``. The logged metrics must agree
name by name and value by value (grpo-trl may only add its own ``timing/``, ``reward_faults/`` and
``reward_none_frac/`` metrics). The OpenEnv examples reach a server: their client is a local stand-in of the same
shape (``EchoEnv``), said so in the plugin module."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from grpo_trl.check import load_recipe
from grpo_trl.train import run
from tests.conftest import tiny_recipe
from tests.tools import trl_doc_agents as docs
from tests.tools import trl_doc_openenv as openenv

pytestmark = pytest.mark.slow
M = "tests.tools.trl_doc_agents:"
OPENENV = "tests.tools.trl_doc_openenv:"
TRAINER = {"max_completion_length": 40, "max_steps": 3}
OURS_ONLY = ("timing/", "reward_faults/", "reward_none_frac/")  # metrics grpo-trl adds beside TRL's
VOLATILE = ("step_time", "train_runtime", "train_samples_per_second", "train_steps_per_second")


def _both(
    tmp_path: Path, model: str, trl_kwargs: dict, data_file: dict | None = None, between=None, **recipe
) -> tuple:
    """Run the recipe under grpo-trl, then plain GRPOTrainer with ``trl_kwargs`` and the same GRPOConfig
    (``between()`` is called after the first run)."""
    from datasets import Dataset
    from trl import GRPOTrainer

    if data_file is not None:  # the docs' in-memory dataset, as a local file the recipe's hub builder reads
        path = tmp_path / "rows.jsonl"
        rows = [dict(zip(data_file, values)) for values in zip(*data_file.values())]
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        recipe["data"] = {"builder": "hub", "path": str(path)}
    recipe.setdefault("trainer", TRAINER)
    ours_dir = tmp_path / "grpo-trl"
    ours_dir.mkdir()
    loaded = load_recipe(tiny_recipe(ours_dir, model, **recipe), ["logging.alerts=false"])
    ours = run(loaded).log_history
    if between is not None:
        between()
    config = loaded.to_grpo_config()
    config.output_dir = str(tmp_path / "trl")
    if "train_dataset" in trl_kwargs and isinstance(trl_kwargs["train_dataset"], dict):
        trl_kwargs["train_dataset"] = Dataset.from_dict(trl_kwargs["train_dataset"])
    elif "train_dataset" not in trl_kwargs and "environment_factory" not in trl_kwargs:  # the recipe's own rows
        from grpo_trl.data import build_dataset

        trl_kwargs["train_dataset"] = build_dataset(loaded.dataset, base_dir=loaded.base_dir).train
    trainer = GRPOTrainer(model=model, args=config, **trl_kwargs)
    trainer.train()
    return ours, trainer.state.log_history


def _steps(history: list[dict]) -> list[dict]:
    return [{k: v for k, v in h.items() if k not in VOLATILE} for h in history if "loss" in h]


def assert_same_metrics(ours: list[dict], theirs: list[dict]) -> None:
    ours, theirs = _steps(ours), _steps(theirs)
    assert len(ours) == len(theirs) > 0
    for step, (a, b) in enumerate(zip(ours, theirs)):
        extra = {k for k in set(a) - set(b) if not k.startswith(OURS_ONLY)}
        assert set(b) <= set(a) and not extra, (step, sorted(set(b) - set(a)), sorted(extra))
        for key, value in b.items():
            mine = a[key]
            same = (
                (math.isnan(value) and math.isnan(mine))
                if isinstance(value, float) and math.isnan(value)
                else (mine == pytest.approx(value, rel=1e-4, abs=1e-6))
            )
            assert same, (step, key, mine, value)


def _metric(history: list[dict], key: str) -> list[float]:
    return [h[key] for h in history if "loss" in h and key in h]


def test_tools_section_sync_and_async_tools(tmp_path, tool_model):
    ours, theirs = _both(
        tmp_path,
        tool_model,
        {"tools": [docs.multiply, docs.async_add], "reward_funcs": [docs.structure_reward]},
        rewards=[M + "structure_reward"],
        extra={"tools": [M + "multiply", M + "async_add"]},
    )
    assert_same_metrics(ours, theirs)
    assert max(_metric(theirs, "tools/call_frequency")) > 0  # the model called tools (by names it learned)


def test_grpo_agent_sigalrm_tool_runs_where_trl_runs_it(tmp_path, tool_model):
    # grpo_agent.py's tool shape (`with timeout(5):` on signal.SIGALRM) under the name the model calls: grpo-trl ran
    # tools in a worker thread, where signal.signal raises, so every call failed (failure_frequency 1.0, TRL 0.0)
    docs.make_biogrid(str(tmp_path / "biogrid.db"))
    assert docs.query_biogrid("SELECT COUNT(*) FROM interactions") == [(2,)]
    ours, theirs = _both(
        tmp_path,
        tool_model,
        {"tools": [docs.calculator, docs.query_biogrid], "reward_funcs": [docs.structure_reward]},
        rewards=[M + "structure_reward"],
        extra={"tools": [M + "calculator", M + "query_biogrid"]},
    )
    assert_same_metrics(ours, theirs)
    calls, failures = _metric(ours, "tools/call_frequency"), _metric(ours, "tools/failure_frequency")
    assert max(calls) > 0 and min(failures) < 1.0, (calls, failures)


def test_environment_owns_data_and_reward_no_rewards_section(tmp_path, tool_model):
    # grpo_trainer.md "Environments": GRPOTrainer(environment_factory=IncrementEnv), no dataset, no reward_funcs
    ours, theirs = _both(
        tmp_path,
        tool_model,
        {"environment_factory": docs.IncrementEnv},
        data={"builder": "environment", "size": 2},  # TRL's placeholder rows: generation batch / num_generations
        extra={"environment": {"factory": M + "IncrementEnv"}, "rewards": None},
    )
    assert_same_metrics(ours, theirs)
    assert len(_metric(ours, "rewards/IncrementEnv/mean")) == 3  # TRL's name for the environment's reward


def test_environment_with_external_dataset_and_trainer_owned_reward(tmp_path, tool_model):
    # "Providing an external dataset" + "Rewards": reset(target=...) from the row, format_reward beside get_reward
    ours, theirs = _both(
        tmp_path,
        tool_model,
        {
            "train_dataset": docs.increment_dataset(),
            "reward_funcs": docs.format_reward,
            "environment_factory": docs.DatasetIncrementEnv,
        },
        data_file=docs.increment_dataset(),
        rewards=[M + "format_reward"],
        extra={"environment": {"factory": M + "DatasetIncrementEnv"}},
        trainer={**TRAINER, "per_device_train_batch_size": 6, "num_generations": 3},
    )
    assert_same_metrics(ours, theirs)
    assert _metric(ours, "rewards/IncrementEnv/mean") and _metric(ours, "rewards/format_reward/mean")


def test_multiple_environments_with_a_routing_only_dataset(tmp_path, tool_model):
    # "Multiple environments": Dataset.from_dict({"environment": ["coding", "game"] * n}), no prompt column
    n = 4
    ours, theirs = _both(
        tmp_path,
        tool_model,
        {
            "train_dataset": docs.routing_dataset(n),
            "reward_funcs": docs.reward_func,
            "environment_factory": {"coding": docs.CodingEnv, "game": docs.GameEnv},
        },
        data_file=docs.routing_dataset(n),
        rewards=[M + "reward_func"],
        extra={"environment": {"coding": {"factory": M + "CodingEnv"}, "game": {"factory": M + "GameEnv"}}},
    )
    assert_same_metrics(ours, theirs)


def test_multiple_environments_with_the_environment_builder(tmp_path, tool_model):
    ours, theirs = _both(
        tmp_path,
        tool_model,
        {
            "train_dataset": docs.routing_dataset(4),
            "reward_funcs": docs.reward_func,
            "environment_factory": {"coding": docs.CodingEnv, "game": docs.GameEnv},
        },
        data={"builder": "environment", "size": 8, "environments": ["coding", "game"]},
        rewards=[M + "reward_func"],
        extra={"environment": {"coding": {"factory": M + "CodingEnv"}, "game": {"factory": M + "GameEnv"}}},
    )
    assert_same_metrics(ours, theirs)


def test_openenv_quick_start_echo_tool_env(tmp_path, tool_model):
    # openenv.md "Quick start" with a local stand-in for the OpenEnv client; also counts environments built
    openenv.EchoEnv.CONNECTIONS = 0
    ours_only = tmp_path / "check"
    ours_only.mkdir()
    load_recipe(  # check: builds (connects) nothing
        tiny_recipe(
            ours_only,
            tool_model,
            rewards=[OPENENV + "reward_func"],
            extra={"environment": {"factory": OPENENV + "EchoToolEnv"}},
        )
    )
    assert openenv.EchoEnv.CONNECTIONS == 0
    built = []

    def count() -> None:
        built.append(openenv.EchoEnv.CONNECTIONS)
        openenv.EchoEnv.CONNECTIONS = 0

    ours, theirs = _both(
        tmp_path,
        tool_model,
        {
            "train_dataset": openenv.echo_dataset(8),
            "reward_funcs": openenv.reward_func,
            "environment_factory": openenv.EchoToolEnv,
        },
        data_file=openenv.echo_dataset(8),
        rewards=[OPENENV + "reward_func"],
        extra={"environment": {"factory": OPENENV + "EchoToolEnv"}},
        between=count,
    )
    assert_same_metrics(ours, theirs)
    assert built == [openenv.EchoEnv.CONNECTIONS] and built[0] > 0  # as many environments as TRL builds
    assert _metric(ours, "rewards/reward_func/mean")


def test_rollout_func_with_an_extra_field_read_by_a_reward(tmp_path, tool_model):
    # GRPOTrainer docstring: rollout_func's extra fields are forwarded to the rewards (here `env_reward`)
    ours, theirs = _both(
        tmp_path,
        tool_model,
        {
            "train_dataset": openenv.echo_dataset(8),
            "reward_funcs": docs.env_reward_passthrough,
            "rollout_func": docs.rollout_func,
        },
        data_file=openenv.echo_dataset(8),
        rewards=[M + "env_reward_passthrough"],
        extra={"rollout_func": {"func": M + "rollout_func", "fields": ["env_reward"]}},
    )
    assert_same_metrics(ours, theirs)
    assert max(_metric(ours, "rewards/env_reward_passthrough/mean")) > 0


def test_openenv_multi_environment_meta_env_with_none_rewards(tmp_path, tool_model):
    # openenv.md "Multi-environment training": an `env` column read in reset(**kwargs), rewards None for other rows
    ours, theirs = _both(
        tmp_path,
        tool_model,
        {
            "train_dataset": openenv.multi_env_dataset(4),
            "reward_funcs": [openenv.wordle_reward, openenv.catch_reward],
            "environment_factory": openenv.MultiEnv,
        },
        data_file=openenv.multi_env_dataset(4),
        rewards=[OPENENV + "wordle_reward", OPENENV + "catch_reward"],
        extra={"environment": {"factory": OPENENV + "MultiEnv"}},
    )
    assert_same_metrics(ours, theirs)
    assert _metric(ours, "rewards/wordle_reward/mean") and _metric(ours, "rewards/catch_reward/mean")
