"""Issue 27 part 3: a reward that fails on every row of the first generation batch stops the run with one error
naming the reward, the cause and its file:line; failures on some rows, or after the first batch, cost only their
rows. The recipe's rewards and those given through the Python API go through the same wrapper (``guarded``)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_trl.errors import RewardError
from grpo_trl.rewards.call import NamedReward, SafeReward, call_sync, guarded

pytestmark = pytest.mark.fault

HERE = __file__


class PluginError(Exception):
    """A user's own exception type."""


EXCEPTIONS = [ZeroDivisionError, KeyError, TypeError, RuntimeError, ValueError, IndexError, PluginError, SystemExit]

# each kind of brokenness: (what the reward does with a batch of n, a text its cause names)
RESULTS = {
    "too short": (lambda n: [1.0] * (n - 1), "values for"),
    "too long": (lambda n: [1.0] * (n + 1), "values for"),
    "returns None": (lambda n: None, "not a list"),
    "a string": (lambda n: "1.0", "not a list"),
    "strings": (lambda n: ["1.0"] * n, "not a number"),
    "nan": (lambda n: [math.nan] * n, "nan"),
    "inf": (lambda n: [math.inf] * n, "beyond float32"),
}


def make_raiser(kind: type[BaseException], message: str):
    def broken(completions, **kwargs):
        raise kind(message)  # the file:line the error must name

    return broken, broken.__code__.co_firstlineno + 1


def make_returner(result):
    def broken(completions, **kwargs):
        return result(len(completions))

    return broken, broken.__code__.co_firstlineno


def wrap(func, path: str):
    """``plugin``: as ``build_rewards`` wraps a recipe's reward, then the trainer; ``api``: ``reward_funcs=[func]``."""
    return guarded(SafeReward(NamedReward("mine", func))) if path == "plugin" else guarded(func)


def call(reward, n: int, step: int = 0):
    return call_sync(reward, completions=[f"c{i}" for i in range(n)], trainer_state=SimpleNamespace(global_step=step))


broken_rewards = st.one_of(
    st.builds(make_raiser, st.sampled_from(EXCEPTIONS), st.text(max_size=20)).map(lambda f: (*f, None)),
    st.sampled_from(sorted(RESULTS)).map(lambda k: (*make_returner(RESULTS[k][0]), RESULTS[k][1])),
)


@settings(max_examples=60, deadline=None)
@given(broken=broken_rewards, path=st.sampled_from(["plugin", "api"]), n=st.integers(2, 16))
def test_broken_on_the_whole_first_batch_stops_naming_reward_cause_and_file_line(broken, path, n):
    func, line, says = broken
    reward = wrap(func, path)
    with pytest.raises(RewardError) as info:
        call(reward, n)
    (problem,) = info.value.problems
    name = "mine" if path == "plugin" else "broken"
    assert problem.message.startswith(f"reward {name!r} failed on all {n} rows of the first batch")
    assert f"{HERE}:{line}" in problem.message  # where it raised, or (a wrong result) where it is defined
    assert says is None or says in problem.message


@settings(max_examples=40, deadline=None)
@given(
    kind=st.sampled_from(EXCEPTIONS),
    path=st.sampled_from(["plugin", "api"]),
    n=st.integers(2, 16),
    data=st.data(),
)
def test_failures_on_some_rows_cost_only_those_rows(kind, path, n, data):
    bad = data.draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=n - 1))

    def sometimes(completions, **kwargs):
        rows = [int(c[1:]) for c in completions]
        if any(r in bad for r in rows):
            raise kind("this row")
        return [1.0] * len(completions)

    reward = wrap(sometimes, path)
    out = call(reward, n)
    assert [i for i, v in enumerate(out) if v is None] == sorted(bad)
    assert call(reward, n, step=1) == out  # and the run goes on


@pytest.mark.parametrize("path", ["plugin", "api"])
def test_broken_only_after_the_first_batch_goes_on(path):
    def later(completions, trainer_state, **kwargs):
        if trainer_state.global_step:
            raise RuntimeError("later")
        return [1.0] * len(completions)

    reward = wrap(later, path)
    assert call(reward, 4) == [1.0] * 4
    assert call(reward, 4, step=1) == [None] * 4 and reward.mostly_none() is None
    call(reward, 4, step=2)
    assert "RuntimeError: later" in reward.mostly_none()  # most rows None: the summary repeats the cause


def test_a_timeout_or_a_rewards_own_none_never_stops():
    def hangs(completions, **kwargs):
        import time

        time.sleep(30)

    reward = guarded(SafeReward(NamedReward("hangs", hangs), timeout=0.5))
    assert call(reward, 3) == [None] * 3
    assert guarded(lambda completions, **kw: [None] * len(completions))(completions=["a", "b"]) == [None, None]


def test_a_reward_model_is_left_to_trl():
    model = SimpleNamespace(config={})
    assert guarded("org/reward-model") == "org/reward-model" and guarded(model) is model


# ------------------------------------------------------------------------------------------------ real runs
PLUGIN = """from grpo_trl import register_reward


@register_reward("boom")
def boom(completions, **kwargs):
    return [1 / 0 for _ in completions]
"""


@pytest.mark.slow
def test_cli_run_with_a_plugin_reward_broken_on_every_row_exits_1_at_the_first_batch(make_recipe, tmp_path, capsys):
    from grpo_trl.cli import main

    (tmp_path / "plug.py").write_text(PLUGIN)
    path = make_recipe(rewards=[{"name": "boom"}], trainer={"max_steps": 2}, extra={"plugins": ["plug.py"]})
    assert main(["train", str(path)]) == 1
    err = capsys.readouterr().err
    errors = [line[line.index("error:") :] for line in err.splitlines() if "error:" in line]  # after a progress bar
    assert len(errors) == 1, err
    assert "reward 'boom' failed on all 8 rows of the first batch" in errors[0]
    assert "ZeroDivisionError: division by zero at " in errors[0] and "plug.py:6" in errors[0]
    assert "Traceback" not in err


def wrong_length(completions, **kwargs):
    return [1.0]


@pytest.mark.slow
def test_python_api_reward_broken_on_every_row_stops_train(make_recipe):
    from grpo_trl.train import train

    path = make_recipe(trainer={"max_steps": 2})
    with pytest.raises(RewardError) as info:
        train(str(path), reward_funcs=[wrong_length])
    message = str(info.value)
    assert "reward 'wrong_length' failed on all 8 rows" in message and "returned 1 values for 8 completions" in message
    assert f"defined at {HERE}:{wrong_length.__code__.co_firstlineno}" in message


@pytest.mark.slow
@pytest.mark.parametrize("given", [list, tuple, lambda fs: fs[0]])
def test_rewards_given_through_the_api_as_a_list_a_tuple_or_one_function_all_train(make_recipe, given):
    """``reward_funcs=(f,)`` reached TRL as one reward that is a tuple: AttributeError inside GRPOTrainer."""
    from grpo_trl.train import build_trainer

    def mine(completions, **kwargs):
        return [0.0] * len(completions)

    trainer = build_trainer(str(make_recipe()), reward_funcs=given([mine]))
    assert trainer.reward_func_names[-1] == "mine"
