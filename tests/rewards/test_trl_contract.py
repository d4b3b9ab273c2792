"""A real tiny ``GRPOTrainer`` run with rewards in all five call shapes TRL documents: each is scored on every row,
receives exactly the keywords TRL passes, and the two ``async`` ones still run concurrently on TRL's event loop."""

from __future__ import annotations

import pytest

from grpo_trl.check import load_recipe
from grpo_trl.check.rewards import build_rewards
from grpo_trl.train import run
from tests.rewards import trl_doc_rewards as docs

pytestmark = pytest.mark.slow
M = "tests.rewards.trl_doc_rewards:"
TRL_KEYS = {"prompts", "completions", "completion_ids", "trainer_state", "log_extra", "log_metric"}


def test_five_trl_call_shapes_score_every_row_in_a_real_run(make_recipe):
    from trl.trainer.utils import is_async_callable

    docs.CALLS.clear()
    path = make_recipe(rewards=[{"name": M + name} for name in docs.SHAPES], trainer={"max_steps": 2})
    recipe = load_recipe(path)
    funcs, _ = build_rewards(recipe)
    assert [is_async_callable(f) for f in funcs] == [False, False, False, True, True]  # TRL sees the async ones

    result = run(recipe)
    history = [h for h in result.log_history if "loss" in h]
    assert len(history) == 2
    for h in history:
        for name in docs.SHAPES:
            assert h[f"reward_faults/{name}"] == 0, name
            assert h[f"reward_none_frac/{name}"] == 0, name
            assert h[f"rewards/{name}/mean"] == h[f"rewards/{name}/mean"], name  # not NaN: scored
    columns = {"nums", "target", "reference_equation"}
    for name in docs.SHAPES:
        calls = docs.CALLS[name]
        assert len(calls) == 2  # one generation batch per step
        assert all(set(c["keys"]) == TRL_KEYS | columns for c in calls), (name, calls[0]["keys"])
    for judge, rubric in zip(docs.CALLS["async_judge"], docs.CALLS["async_rubric"]):
        # both sleep 0.2 s: run one after the other they could not overlap
        assert judge["start"] < rubric["end"] and rubric["start"] < judge["end"]
