"""verifiers tasksets: a local taskset module (verifiers' own Taskset, Task and @vf.reward) loaded by verifiers'
loader, its prompts as rows, each reward its own TRL reward function, and 2 training steps on the tiny model."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.vllm_runs import VERIFIERS_SKIP  # noqa: E402

pytest.importorskip("verifiers.v1", reason=VERIFIERS_SKIP)

from grpo_trl.environments.verifiers_env import reward, reward_specs, rows, score, tasks  # noqa: E402
from grpo_trl.errors import GrpoTrlError  # noqa: E402

WORDS = ["cat", "dog", "sun", "sky"]
TASKSET = textwrap.dedent(
    f"""
    import verifiers.v1 as vf

    __all__ = ["EchoTaskset", "EchoTask"]


    class EchoData(vf.TaskData):
        answer: str


    class EchoTask(vf.Task[EchoData, vf.State, vf.TaskConfig]):
        @vf.reward
        async def exact(self, task, trace) -> float:
            return float(trace.last_reply == task.answer)

        @vf.reward(weight=0.5)
        async def short(self, trace) -> float:
            return 1.0 if len(trace.last_reply) < 8 else 0.0


    class EchoTaskset(vf.Taskset[EchoTask, vf.TasksetConfig]):
        def load(self):
            for word in {WORDS!r}:
                yield EchoTask(EchoData(prompt=f"Say {{word}}", answer=word, system_prompt="Answer in one word."))
    """
)


@pytest.fixture(scope="module", autouse=True)
def echo_module(tmp_path_factory):
    folder = tmp_path_factory.mktemp("vf")
    (folder / "echo_vf_env.py").write_text(TASKSET)
    sys.path.insert(0, str(folder))
    yield "echo_vf_env"
    sys.path.remove(str(folder))
    sys.modules.pop("echo_vf_env", None)


def test_rows_are_the_tasks_prompts_with_their_index():
    built = rows("echo_vf_env")
    assert built["vf_task"] == [0, 1, 2, 3]
    assert built["prompt"][1] == [
        {"role": "system", "content": "Answer in one word."},
        {"role": "user", "content": "Say dog"},
    ]
    assert len(rows("echo_vf_env", limit=2)["prompt"]) == 2


def test_one_reward_entry_per_rubric_function_with_its_weight():
    specs = reward_specs("echo_vf_env")
    assert [(s["alias"], s["weight"], s["args"]["rubric"]) for s in specs] == [
        ("exact", 1.0, "exact"),
        ("short", 0.5, "short"),
    ]


@settings(max_examples=40, deadline=None)
@given(text=st.text(max_size=12), index=st.integers(0, 3), chat=st.booleans())
def test_rewards_are_the_tasks_own_scores(text, index, chat):
    completion = [{"role": "assistant", "content": text}] if chat else text
    expected_exact = float(text.strip() == WORDS[index])  # verifiers' last_reply strips the reply
    expected_short = 1.0 if len(text.strip()) < 8 else 0.0
    assert score(tasks("echo_vf_env")[index], completion) == {"exact": expected_exact, "short": expected_short}
    got = reward([completion], [index], taskset="echo_vf_env", rubric="exact")
    assert got == [expected_exact]


def test_an_unknown_taskset_is_one_error_naming_it():
    with pytest.raises(GrpoTrlError, match="no_such_vf_env"):
        tasks("no_such_vf_env")


def _train(tmp_path, model: str, taskset: str, steps: int, length: int, **extra):
    """A real run of ``steps`` steps on the taskset's rows and rewards (``extra``: more recipe sections)."""
    from grpo_trl import load_recipe, train

    trainer = {"output_dir": str(tmp_path / "out"), "max_steps": steps, "max_completion_length": length}
    trainer |= {"num_generations": 4, "per_device_train_batch_size": 4, "logging_steps": 1, "save_strategy": "no"}
    recipe = {
        "model": {"name": model, "dtype": "float32"},
        "data": {"builder": "verifiers", "taskset": taskset},
        "rewards": reward_specs(taskset),
        "trainer": trainer | {"report_to": "none", "use_cpu": True, "bf16": False},
        **extra,
    }
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe))
    return train(load_recipe(path))


def test_two_steps_on_the_tiny_model_log_each_rubric_function(tmp_path):
    result = _train(tmp_path, "builtin:tiny", "echo_vf_env", steps=2, length=8)
    assert result.global_step == 2
    logged = result.log_history[0]
    assert {"rewards/exact/mean", "rewards/short/mean"} <= set(logged)


# Multi-turn: a taskset whose tasks carry a verifiers Toolset; its @vf.tool methods are the environment's tools and
# TRL runs the turns (call, result, answer). Countdown prompts and grpo-trl's calculator schema (the one the tiny
# tool-calling model was warmed on), so the model calls it; calc1_vf_env has that tool alone.
TOOL_TASKSET = textwrap.dedent(
    '''
    import verifiers.v1 as vf

    from grpo_trl.data.countdown import USER_TEMPLATE
    from grpo_trl.tools.calculator import calculator

    __all__ = ["CalcTaskset", "CalcTask"]
    CALLS = []


    class CalcToolset(vf.Toolset[vf.ToolsetConfig]):
        def __init__(self, config):
            super().__init__(config)
            self.used = 0

        @vf.tool
        def calculator(self, expression: str) -> str:
            """Evaluate an arithmetic expression exactly.

            Args:
                expression: Integers combined with +, -, *, / and parentheses, e.g. "(3 + 5) * 2".

            Returns:
                The exact value: an integer, or a fraction with its decimal value.
            """
            self.used += 1
            CALLS.append(expression)
            return calculator(expression)

        @vf.tool(name="count_numbers")
        async def count(self, numbers: list[int]) -> int:
            return len(numbers)


    class CalcData(vf.TaskData):
        answer: str


    class CalcTask(vf.Task[CalcData, vf.State, vf.TaskConfig]):
        @classmethod
        def toolsets(cls, config):
            return [CalcToolset(vf.ToolsetConfig())]

        @vf.reward
        async def answered(self, trace) -> float:
            return float("<answer>" in trace.last_reply)


    class CalcTaskset(vf.Taskset[CalcTask, vf.TasksetConfig]):
        def load(self):
            for nums, target in [([3, 5, 2], 16), ([7, 4, 9], 19), ([12, 30, 2], 84), ([6, 8, 5], 53)]:
                yield CalcTask(CalcData(prompt=USER_TEMPLATE.format(numbers=nums, target=target), answer=str(target)))
    '''
)


@pytest.fixture(scope="module")
def calc_module(echo_module):
    folder = sys.path[0]  # echo_module's folder, on the path for this module's tests
    (Path(folder) / "calc_vf_env.py").write_text(TOOL_TASKSET)
    (Path(folder) / "calc1_vf_env.py").write_text(TOOL_TASKSET.replace('@vf.tool(name="count_numbers")', ""))
    yield "calc_vf_env"
    sys.modules.pop("calc_vf_env", None)
    sys.modules.pop("calc1_vf_env", None)


def test_a_tasksets_tools_are_environment_methods_with_their_schemas(calc_module):
    from grpo_trl.environments import build_environment_factory
    from grpo_trl.environments.verifiers_env import VerifiersTools, tools
    from grpo_trl.tools.registry import tool_schema

    factory = build_environment_factory(
        {"factory": "grpo_trl.environments.verifiers_env:tools", "args": {"taskset": calc_module}}
    )
    env = factory()
    assert isinstance(env, VerifiersTools)
    schemas = {
        s["function"]["name"]: s["function"] for s in (tool_schema(env.calculator), tool_schema(env.count_numbers))
    }
    assert schemas["calculator"]["parameters"]["properties"]["expression"]["type"] == "string"
    assert schemas["count_numbers"]["parameters"]["properties"]["numbers"]["type"] == "array"  # Args: added
    env.reset(vf_task=2, prompt="ignored")
    assert env.calculator(expression="12 * 2 + 30 * 2") == "84"
    assert env.calculator(expression="7 / 2") == "7/2 = 3.5" and env.toolsets[0].used == 2
    env.reset(vf_task=0)  # a new rollout: fresh toolsets, fresh state
    assert env.calculator(expression="3 + 5 * 2") == "13" and env.toolsets[0].used == 1
    assert __import__("asyncio").run(env.count_numbers(numbers=[1, 2, 3])) == 3  # an async tool, awaited
    assert type(tools(calc_module)) is type(env).__mro__[1]  # one class per taskset


def test_a_taskset_without_tools_is_one_error_naming_the_fix():
    from grpo_trl.environments.verifiers_env import tools

    with pytest.raises(GrpoTrlError, match="no @vf.tool") as caught:
        tools("echo_vf_env")
    assert "leave out environment:" in caught.value.problems[0].fix


@settings(max_examples=30, deadline=None)
@given(turns=st.lists(st.sampled_from(["tool", "assistant", "user"]), max_size=5), text=st.text(max_size=12))
def test_multi_turn_rewards_score_the_last_assistant_reply(turns, text):
    completion = [{"role": r, "content": "<answer>x</answer>" if r != "assistant" else "noise"} for r in turns]
    completion.append({"role": "assistant", "content": text})
    completion += [{"role": "tool", "content": "<answer>late</answer>"}]  # a tool result after it is not the reply
    got = reward([completion], [0], taskset="echo_vf_env", rubric="exact")
    assert got == [float(text.strip() == WORDS[0])]


def test_multi_turn_training_calls_the_tasksets_tool(tmp_path, calc_module, tool_model):
    import json

    calc_module = "calc1_vf_env"  # the calculator alone: the system prompt the tiny model was warmed on
    environment = {"factory": "grpo_trl.environments.verifiers_env:tools", "args": {"taskset": calc_module}}
    logging = {"completions_every": 1, "completions_samples": 8}
    result = _train(tmp_path, tool_model, calc_module, steps=3, length=40, environment=environment, logging=logging)
    assert result.global_step == 3
    assert max(h.get("tools/call_frequency", 0) for h in result.log_history) > 0
    assert "rewards/answered/mean" in result.log_history[0]
    assert sys.modules[calc_module].CALLS  # the toolset's own method ran
    rows = [json.loads(line) for line in (Path(result.output_dir) / "completions.jsonl").read_text().splitlines()]
    calls = [t for r in rows for t in r.get("turns") or [] if t["role"] == "tool_call"]
    assert any(t["content"].startswith("calculator(") for t in calls)
