"""verifiers tasksets: a local taskset module (verifiers' own Taskset, Task and @vf.reward) loaded by verifiers'
loader, its prompts as rows, each reward its own TRL reward function, and 2 training steps on the tiny model."""

from __future__ import annotations

import sys
import textwrap

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


def test_two_steps_on_the_tiny_model_log_each_rubric_function(tmp_path):
    from grpo_trl import load_recipe, train

    recipe = {
        "model": {"name": "builtin:tiny", "dtype": "float32"},
        "data": {"builder": "verifiers", "taskset": "echo_vf_env"},
        "rewards": reward_specs("echo_vf_env"),
        "trainer": {
            "output_dir": str(tmp_path / "out"),
            "max_steps": 2,
            "num_generations": 4,
            "per_device_train_batch_size": 4,
            "max_completion_length": 8,
            "logging_steps": 1,
            "save_strategy": "no",
            "report_to": "none",
            "use_cpu": True,
            "bf16": False,
        },
    }
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe))
    result = train(load_recipe(path))
    assert result.global_step == 2
    logged = result.log_history[0]
    assert {"rewards/exact/mean", "rewards/short/mean"} <= set(logged)
