"""Environments: the section's shapes, TRL's contract checked up front (reset, tool schemas), the Countdown env,
rows naming environments, and the ``environment`` reward hiding TRL's duplicate column."""

from __future__ import annotations

import inspect
import re

import pytest

from grpo_trl.check import load_recipe
from grpo_trl.check.extras import check_environment_column
from grpo_trl.environments import EnvError, build_environment_factory, environment_problems, environment_score
from grpo_trl.environments.countdown import Countdown
from grpo_trl.recipe import RecipeError
from grpo_trl.rewards import get_reward
from tests.recipe.test_recipe import BASE, write

ECHO = "tests.tools.tool_plugin:Echo"


@pytest.mark.parametrize(
    ("section", "key", "fix"),
    [
        (["countdown"], "environment", "must be {factory"),
        ({"factory": "countdwn"}, "environment.factory", "did you mean 'countdown'"),
        ({"factory": "tests.tools.tool_plugin:NoReset"}, "environment.factory", "no reset() method"),
        ({"factory": "countdown", "arg": {}}, "environment.arg", "environment keys"),
        ({"factory": "countdown", "args": {"max_tries": 2}}, "environment.args", "unexpected keyword"),
        ({"a": {"factory": "countdown"}, "b": "nowhere:Env"}, "environment.b.factory", "cannot import module"),
    ],
)
def test_environment_section_errors(section, key, fix):
    problems = environment_problems(section)
    assert any(p.key == key and fix in p.message for p in problems), problems


def test_check_builds_no_environment_and_a_failing_constructor_is_one_error_when_built():
    # an environment's constructor may open a remote client (TRL's openenv examples): check reads the class only
    from tests.tools.tool_plugin import ExitsWhenBuilt

    ExitsWhenBuilt.BUILT = 0
    assert environment_problems({"factory": "tests.tools.tool_plugin:ExitsWhenBuilt"}) == []
    assert ExitsWhenBuilt.BUILT == 0
    factory = build_environment_factory({"factory": "tests.tools.tool_plugin:ExitsWhenBuilt"})
    with pytest.raises(EnvError, match="building the environment failed: SystemExit: 5") as caught:
        factory()  # what GRPOTrainer calls: one error line, not exit 5
    assert caught.value.problems[0].key == "environment.args"


def test_single_and_named_factories():
    single = build_environment_factory({"factory": ECHO, "args": {"bonus": 2.0}})
    env = single()
    env.reset()
    env.say(text="hi")
    assert env.get_reward() == 2.0
    named = build_environment_factory({"echo": {"factory": ECHO}, "countdown": "countdown"})
    assert set(named) == {"echo", "countdown"} and isinstance(named["countdown"](), Countdown)


def test_hidden_reward_is_invisible_to_trl_but_scored_by_the_environment_reward():
    env = build_environment_factory({"factory": ECHO}, hide_reward=True)()
    # TRL lists get_reward with inspect.getmembers(type(env), isfunction): it must not see one
    names = [n for n, _ in inspect.getmembers(type(env), predicate=inspect.isfunction)]
    assert "get_reward" not in names and "say" in names and type(env).__name__ == "Echo"
    env.reset()
    env.say(text="a")
    env.say(text="b")
    assert environment_score(env) == 2.0
    reward = get_reward("environment")
    assert reward(["x"], environments=[env]) == [2.0]
    with pytest.raises(ValueError, match="needs an environment: section"):
        reward(["x"])


def test_environment_tools_are_bounded_like_tools_and_keep_their_schemas():
    from transformers.utils import get_json_schema

    from tests.tools.tool_plugin import Unruly

    env = build_environment_factory({"factory": "tests.tools.tool_plugin:Unruly"})()
    assert isinstance(env, Unruly) and type(env).__name__ == "Unruly"
    for name in ("fail", "leave"):  # the model sees exactly the schema of the method as written
        assert get_json_schema(getattr(env, name)) == get_json_schema(getattr(Unruly(), name))
    with pytest.raises(ValueError, match="bad 3"):  # TRL turns it into {"error": ...} for this call
        env.fail(x=3)
    with pytest.raises(RuntimeError, match="SystemExit"):  # exit() in a tool fails the call, not the run
        env.leave(code=4)
    both = build_environment_factory({"factory": ECHO}, hide_reward=True)()  # bounded and hidden together
    both.reset()
    both.say(text="a")
    assert environment_score(both) == 1.0


@pytest.mark.parametrize(
    ("equation", "reply", "score"),
    [
        ("(3 + 5) * 2", "correct", 1.0),
        ("3 + 5 + 2", "wrong: 3 + 5 + 2 = 10", 0.2),
        ("3 + 5", "wrong numbers", 0.1),
        ("__import__('os')", "invalid", 0.1),
        ("3 * 5 + 2 = 16", "wrong: 3 * 5 + 2 = 17", 0.2),
    ],
)
def test_countdown_environment(equation, reply, score):
    env = Countdown()
    assert env.reset(nums=[2, 3, 5], target=16) is None
    assert env.get_reward() == 0.0
    assert env.check_equation(equation).startswith(reply)
    assert env.get_reward() == score


def test_countdown_environment_bounds_attempts_and_resets():
    env = Countdown(max_attempts=1)
    env.reset(nums=[1, 2], target=3)
    env.check_equation("1 + 2")
    with pytest.raises(ValueError, match="no attempts left"):
        env.check_equation("1 + 2")
    env.reset(nums=[1, 2], target=5)
    assert env.get_reward() == 0.0 and env.attempts == 0


def test_rows_must_name_defined_environments(tmp_path):
    data = {**BASE, "model": {"name": "builtin:tiny-tools"}}
    data["environment"] = {"countdown": {"factory": "countdown"}, "echo": {"factory": ECHO}}
    with pytest.raises(RecipeError, match="need an 'environment' column"):  # check says what train would
        load_recipe(write(tmp_path, data))
    recipe = load_recipe(write(tmp_path, data), validate=False)
    with pytest.raises(RecipeError, match="need an 'environment' column"):
        check_environment_column(recipe, ["prompt"], {})
    with pytest.raises(RecipeError, match="rows name environment\\(s\\) 'maze'"):
        check_environment_column(recipe, ["prompt", "environment"], {"environment": ["echo", "maze"]})
    check_environment_column(recipe, ["environment"], {"environment": ["echo", "countdown"]})


def test_environment_reward_without_environment_is_an_error(tmp_path):
    with pytest.raises(RecipeError, match="add an environment: section"):
        load_recipe(write(tmp_path, {**BASE, "rewards": ["environment"]}))


def test_environment_errors_reach_the_cli_as_one_line(tmp_path, capsys):
    from grpo_trl.cli import main

    path = write(tmp_path, {**BASE, "environment": {"factory": "tests.tools.tool_plugin:NoReset"}})
    assert main(["check", str(path)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "def reset(self, **row)" in err[0]


def test_env_error_is_a_value_error():
    assert issubclass(EnvError, ValueError)


def _trl_tools(env) -> dict:
    """The tools GRPOTrainer takes from an environment instance (its own listing, _generate_and_score_completions)."""
    names = [n for n, _ in inspect.getmembers(type(env), predicate=inspect.isfunction)]
    return {n: getattr(env, n) for n in names if n not in ("reset", "get_reward") and not n.startswith("_")}


def test_an_environment_with_only_reset_is_accepted_as_trl_accepts_it():
    # TRL's own test_train_with_environment_owned_data: reset() gives the prompt, reward functions score
    assert environment_problems({"factory": "tests.tools.tool_plugin:OnlyReset"}) == []


def test_a_staticmethod_tool_is_called_without_self_and_keeps_its_schema():
    from transformers.utils import get_json_schema

    from tests.tools.tool_plugin import StaticTool

    env = build_environment_factory({"factory": "tests.tools.tool_plugin:StaticTool"})()
    tool = _trl_tools(env)["double"]
    assert tool(x=3) == 6 == _trl_tools(StaticTool())["double"](x=3)
    assert get_json_schema(tool) == get_json_schema(StaticTool.double)


def test_an_async_get_reward_is_awaited_by_the_environment_reward():
    import asyncio

    env = build_environment_factory({"factory": "tests.tools.tool_plugin:AsyncScored"}, hide_reward=True)()
    env.reset()
    assert asyncio.run(_trl_tools(env)["ping"](x=1)) == 1  # async tools stay async: TRL awaits them
    reward = get_reward("environment")
    assert reward(["x"], environments=[env]) == [1.5]
    assert reward(["x", "y"], environments=[env, env]) == [1.5, 1.5]  # the same loop again, for every rollout


def test_environment_reward_needs_an_environment_with_get_reward(tmp_path):
    only_reset = {"factory": "tests.tools.tool_plugin:OnlyReset"}
    with pytest.raises(RecipeError, match="no environment in environment: defines one"):
        load_recipe(write(tmp_path, {**BASE, "rewards": ["environment"], "environment": only_reset}))
    mixed = {"plain": only_reset, "echo": {"factory": ECHO}}  # one that scores is enough (TRL: None for the rest)
    tools_model = {"name": "builtin:tiny-tools"}
    routed = {"builder": "environment", "size": 4, "environments": ["plain", "echo"]}  # rows name one each
    recipe = {**BASE, "model": tools_model, "rewards": ["environment"], "environment": mixed, "data": routed}
    load_recipe(write(tmp_path, recipe))


@pytest.mark.parametrize(
    ("how", "says"),
    [
        ("raise", "reset() (row columns: nums, target) failed: KeyError: 'no such task'"),
        ("exit", "failed: SystemExit: 2"),
        ("huge", "returned a value of type int; TRL appends it to the prompt"),
    ],
)
@pytest.mark.fault  # a fault probe: make faults runs it
def test_a_misbehaving_reset_is_one_error_naming_the_environment(how, says, monkeypatch):
    # TRL calls reset() outside any guard: a traceback, a silent exit 2, or a TypeError deep in prompt building
    from tests.tools.tool_plugin import BadReset

    monkeypatch.setattr(BadReset, "how", how)
    env = build_environment_factory({"a": {"factory": "tests.tools.tool_plugin:BadReset"}})["a"]()
    with pytest.raises(EnvError) as caught:
        env.reset(nums=[1, 2], target=3)
    problem = caught.value.problems[0]
    assert problem.key == "environment.a" and says in problem.message and problem.fix
    assert len(str(caught.value)) < 600  # 10**5000 is never printed


@pytest.mark.fault  # a fault probe: make faults runs it
@pytest.mark.parametrize("tool", ["huge_result", "unprintable_result"])
def test_a_result_str_cannot_render_costs_the_call(tool):
    # TRL's str(result) sits outside its try: 2**20000 or a raising __str__ would end the run there
    from grpo_trl.tools import build_tools

    (bounded_tool,) = build_tools([f"tests.tools.tool_plugin:{tool}"])
    with pytest.raises(RuntimeError, match="cannot be shown as text") as caught:
        bounded_tool(x=1)
    assert isinstance(caught.value, Exception)  # TRL's `except Exception` turns it into {"error": ...}


def test_a_tool_bounding_itself_with_sigalrm_runs_and_the_limit_still_holds():
    import time

    from grpo_trl.tools import build_tools
    from tests.tools import trl_doc_agents as docs
    from tests.tools.tool_plugin import hang

    assert build_tools(["tests.tools.trl_doc_agents:calculator"])[0](expression="2 + 3") == "5"  # signal.alarm inside
    assert docs.calculator(expression="2 * 3") == "6"
    (bounded_hang,) = build_tools([{"name": "tests.tools.tool_plugin:hang", "timeout": 0.3}])
    start = time.perf_counter()
    with pytest.raises(TimeoutError):
        bounded_hang(x=1)
    assert time.perf_counter() - start < 5 and hang.__name__ == "hang"


@pytest.mark.parametrize(
    ("section", "error"),
    [
        ({"func": "tests.tools.trl_doc_agents:rollout_func", "fields": ["env_reward"]}, None),
        ("tests.tools.trl_doc_agents:rollout_func", None),  # fields not listed: any may come from it
        ({"func": "tests.tools.trl_doc_agents:rollout_func", "fields": ["other"]}, "reads column(s) env_reward"),
        ("tests.tools.trl_doc_agents:nope", "has no attribute 'nope'"),
        ("tests.tools.trl_doc_agents:calculator", "cannot be called as rollout_func(prompts, trainer)"),
    ],
)
def test_rollout_func_section_and_the_fields_rewards_read(tmp_path, section, error):
    # TRL forwards a rollout_func's extra output keys to every reward: a reward may name them as parameters
    data = {**BASE, "rollout_func": section, "rewards": ["tests.tools.trl_doc_agents:env_reward_passthrough"]}
    if error is None:
        load_recipe(write(tmp_path, data))
    else:
        with pytest.raises(RecipeError, match=re.escape(error)):
            load_recipe(write(tmp_path, data))
