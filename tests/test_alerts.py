"""Alerts name only what exists for the reward they are about: ``reward_zero`` hints list that reward's real
arguments, ``reward_none`` gives the first cause the safety wrapper recorded (fed real logs, no trainer)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from grpo_trl.monitor.callbacks import Alerts
from grpo_trl.rewards import SafeReward, get_reward


def fire(alerts: Alerts, logs: dict, steps: int) -> dict[str, str]:
    for step in range(1, steps + 1):
        state = SimpleNamespace(global_step=step, is_world_process_zero=True)
        alerts.on_log(None, state, None, logs={"loss": 0.1, **logs})
    return {a["kind"]: a["message"] for a in alerts.fired}


@pytest.mark.parametrize(
    ("name", "args", "named", "absent"),
    [
        ("countdown", {}, "tolerance=1e-05", "prefilled_think"),
        ("think_format", {}, "prefilled_think=False", "tolerance"),
        ("xml_format", {"per_tag": 0.3}, "per_tag=0.3", "prefilled_think"),
        ("tests.rewards.plugin_module:zero", {}, "takes no args", "prefilled_think"),
    ],
)
def test_reward_zero_hint_names_only_that_rewards_options(tmp_path, name, args, named, absent):
    reward = SafeReward(get_reward(name, **args))
    alerts = Alerts(str(tmp_path), patience=2, rewards=[reward])
    message = fire(alerts, {f"rewards/{reward.__name__}/mean": 0.0}, 2)[f"reward_zero:{reward.__name__}"]
    assert named in message and absent not in message


def graded(completions, solution=None, bonus: float = 0.5, **kwargs):
    """Reads the dataset column ``solution`` (optional, so it has a default) and takes one real arg, ``bonus``."""
    return [0.0 for _ in completions]


def test_reward_zero_hint_leaves_out_parameters_that_are_dataset_columns(tmp_path):
    reward = SafeReward(get_reward("tests.test_alerts:graded"))
    alerts = Alerts(str(tmp_path), patience=2, rewards=[reward], columns=["prompt", "solution"])
    message = fire(alerts, {"rewards/graded/mean": 0.0}, 2)["reward_zero:graded"]
    assert "bonus=0.5" in message
    assert "solution" not in message  # binding it in args is what `check` refuses: it would hide the column


def test_reward_none_alert_carries_the_first_cause(tmp_path):
    reward = SafeReward(get_reward("tests.rewards.plugin_module:wrong_length"))
    reward(["a", "b", "c"])
    alerts = Alerts(str(tmp_path), patience=3, rewards=[reward])
    assert fire(alerts, {"reward_none_frac/wrong_length": 1.0}, 2) == {}  # not before alert_patience steps
    message = fire(alerts, {"reward_none_frac/wrong_length": 1.0}, 1)["reward_none:wrong_length"]
    assert "scored None on every row" in message and "returned 4 values for 3 completions" in message
    assert (tmp_path / "alerts.jsonl").read_text().count("reward_none:wrong_length") == 1


def test_partly_none_rewards_do_not_alert(tmp_path):
    alerts = Alerts(str(tmp_path), patience=2, rewards=[])
    assert fire(alerts, {"reward_none_frac/accuracy": 0.99}, 5) == {}


def test_tools_failing_on_most_calls_alert_with_the_first_error(tmp_path):
    from grpo_trl.tools.registry import bounded
    from tests.tools.tool_plugin import explode

    tool = bounded(explode)
    with pytest.raises(RuntimeError):
        tool(x=1)
    alerts = Alerts(str(tmp_path), patience=2, rewards=[], tools=[tool])
    assert fire(alerts, {"tools/call_frequency": 1.0, "tools/failure_frequency": 0.5}, 3) == {}  # half is not most
    message = fire(alerts, {"tools/call_frequency": 1.0, "tools/failure_frequency": 1.0}, 2)["tools_failing"]
    assert "most tool calls fail" in message and "explode: RuntimeError: tool exploded" in message
    assert (
        fire(Alerts(str(tmp_path), patience=1), {"tools/call_frequency": 0.0, "tools/failure_frequency": 0.0}, 2) == {}
    )
