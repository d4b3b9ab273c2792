"""Alerts name only what exists for the reward they are about: ``reward_zero`` hints list that reward's real
arguments, ``reward_none`` gives the first cause the safety wrapper recorded (fed real logs, no trainer)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from grpo_trl.check import load_recipe
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
    reward = SafeReward(get_reward("tests.monitor.test_alerts:graded"))
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


def _rigged(entropies: list[float], rewards: list[float], std: float = 0.2) -> list[dict]:
    return [
        {"loss": 0.1, "entropy": e, "reward": r, "reward_std": std} for e, r in zip(entropies, rewards, strict=True)
    ]


def _feed(alerts: Alerts, logs: list[dict]) -> list[dict]:
    for step, entry in enumerate(logs, 1):
        alerts.on_log(None, SimpleNamespace(global_step=step, is_world_process_zero=True), None, logs=entry)
    return alerts.fired


def test_entropy_collapse_fires_after_patience_logs_with_a_flat_reward_and_reaches_report_and_card(tmp_path, caplog):
    from grpo_trl.report.card import card_text
    from grpo_trl.report.page import write_report
    from tests.conftest import tiny_recipe

    # a rigged run: entropy 1.2 -> 0.05 over 20 logs while the reward wanders around 0.3
    entropies = [1.2, 1.1, 1.2, 1.0, 0.8, 0.6, 0.4] + [0.05] * 13
    rewards = [0.30, 0.28, 0.32] + [0.3 + 0.02 * ((i % 3) - 1) for i in range(17)]
    alerts = Alerts(str(tmp_path), patience=4)
    with caplog.at_level("WARNING", logger="grpo_trl"):
        fired = _feed(alerts, _rigged(entropies, rewards))
    assert [(a["kind"], a["step"]) for a in fired] == [("entropy_collapse", 11)]  # 0.05 < 0.2 x 1.167 from log 8
    assert "ALERT at step 11 (entropy_collapse)" in caplog.text  # the console line
    assert (tmp_path / "alerts.jsonl").read_text().count("entropy_collapse") == 1
    history = [{**h, "step": i} for i, h in enumerate(_rigged(entropies, rewards), 1)]
    (tmp_path / "trainer_state.json").write_text(json.dumps({"log_history": history, "global_step": 20}))
    write_report(tmp_path)
    assert "entropy_collapse" in (tmp_path / "report" / "report.html").read_text()
    (tmp_path / "r").mkdir()
    recipe = load_recipe(tiny_recipe(tmp_path / "r", "unused"))
    assert "`entropy_collapse` entropy fell to 0.05" in card_text(recipe, tmp_path)


@settings(max_examples=60, deadline=None)
@given(
    early=st.floats(0.1, 5.0),
    drop=st.floats(0.0, 1.0),
    gain=st.floats(-1.0, 1.0),
    std=st.floats(0.01, 1.0),
    patience=st.integers(1, 6),
)
def test_entropy_collapse_rule_holds_for_every_level_drop_and_reward(
    tmp_path_factory, early, drop, gain, std, patience
):
    """Every run of this shape: 3 early logs, then ``patience + 2`` logs at ``drop`` x the early entropy, the reward
    ``gain`` above its early level. It fires exactly when drop < 0.2 and gain < the early reward_std."""
    assume(abs(drop - 0.2) > 1e-6 and abs(gain - std) > 1e-6)  # not on the boundary, where rounding decides
    logs = _rigged([early] * 3 + [early * drop] * (patience + 2), [0.5] * 3 + [0.5 + gain] * (patience + 2), std)
    fired = _feed(Alerts(str(tmp_path_factory.mktemp("a")), patience=patience), logs)
    expected = drop < 0.2 and gain < std
    assert [a["kind"] for a in fired] == (["entropy_collapse"] if expected else [])
    if expected:
        assert fired[0]["step"] == 3 + patience


def test_entropy_collapse_streak_resets_when_entropy_recovers_and_survives_resume(tmp_path):
    low, high = 0.1, 1.0
    logs = _rigged([1.0] * 3 + [low, low, high, low, low, low], [0.3] * 9)
    assert _feed(Alerts(str(tmp_path / "a"), patience=3), logs[:8]) == []  # the recovery broke the streak
    resumed = Alerts(str(tmp_path), patience=3)
    resumed.restore(logs[:8], [])  # a resumed run continues the streak its checkpoint's logs built
    state = SimpleNamespace(global_step=9, is_world_process_zero=True)
    resumed.on_log(None, state, None, logs=logs[8])
    assert [a["kind"] for a in resumed.fired] == ["entropy_collapse"]
