"""The registry: decorator, duplicates, did-you-mean, plugins, module:function, and the safety wrapper."""

from __future__ import annotations

import pickle
import threading
import time

import pytest

from grpo_trl.rewards import SafeReward, get_reward, list_rewards, load_plugin, register_reward, unregister_reward
from grpo_trl.rewards.registry import RewardError, check_reward_args

BUILTINS = {
    "accuracy",
    "cosine",
    "countdown",
    "gsm8k",
    "length",
    "reasoning_accuracy",
    "reasoning_steps",
    "repetition_penalty",
    "soft_overlong",
    "tag_count",
    "think_format",
    "xml_format",
}


def test_builtins_listed_with_descriptions_and_args():
    infos = {i.name: i for i in list_rewards()}
    assert BUILTINS <= set(infos)
    assert all(infos[n].description for n in BUILTINS)
    assert infos["gsm8k"].params == {"exact": 2.0, "numeric": 1.5, "answer_tag": "answer", "require_answer_tag": True}
    assert "solution" not in infos["gsm8k"].params  # a column, not an argument


def test_decorator_plain_function_and_factory():
    @register_reward("t_plain")
    def plain(completions, bonus: float = 1.0, **kwargs):
        return [bonus] * len(completions)

    @register_reward("t_factory")
    class Factory:
        def __init__(self, scale: float):
            self.scale = scale

        def __call__(self, completions, **kwargs):
            return [self.scale] * len(completions)

    try:
        assert get_reward("t_plain", bonus=3.0)(["a", "b"]) == [3.0, 3.0]
        r = get_reward("t_factory", scale=2.0)
        assert r.__name__ == "t_factory" and r(["a"]) == [2.0]
        with pytest.raises(RewardError, match="needs argument"):
            get_reward("t_factory")
    finally:
        unregister_reward("t_plain")
        unregister_reward("t_factory")


@pytest.mark.parametrize("call", [None, 5], ids=["None", "int"])
def test_a_factory_class_whose_call_is_not_callable_is_refused_by_check(call):
    """``__call__ = None`` made check end in an internal error (exit 70) reading its signature."""
    register_reward("t_uncallable", factory=True)(type("Uncallable", (), {"__call__": call}))
    try:
        with pytest.raises(RewardError, match="defines no __call__, so its instances cannot score"):
            check_reward_args("t_uncallable", {})
    finally:
        unregister_reward("t_uncallable")


def test_duplicate_name_is_an_error():
    with pytest.raises(RewardError, match="already registered"):

        @register_reward("countdown")
        def other(completions, **kwargs):
            return [0.0] * len(completions)


def test_unknown_name_suggests():
    with pytest.raises(RewardError, match="did you mean 'countdown'"):
        get_reward("countdwn")


def test_unknown_argument_suggests():
    with pytest.raises(RewardError, match="did you mean 'exact'"):
        check_reward_args("gsm8k", {"exakt": 1})


def test_trl_kwargs_are_not_args():
    with pytest.raises(RewardError, match="passed by TRL"):
        check_reward_args("gsm8k", {"prompts": 1})


def test_alias_and_stable_names_pickle():
    r = get_reward("gsm8k", alias="gsm8k_strict", exact=1.0)
    assert r.__name__ == "gsm8k_strict"
    for name, args in [("gsm8k", {}), ("countdown", {}), ("accuracy", {}), ("cosine", {"max_len": 10})]:
        again = pickle.loads(pickle.dumps(SafeReward(get_reward(name, **args))))
        assert again.__name__ == name


def test_module_function_reference():
    r = get_reward("tests.rewards.plugin_module:shouts")
    assert r.__name__ == "shouts"
    assert r(["HEY", "hey"]) == [1.0, 0.0]


def test_plugin_file(tmp_path):
    plugin = tmp_path / "my_rewards.py"
    plugin.write_text(
        "from grpo_trl.rewards import register_reward\n"
        "@register_reward('t_plugin_len')\n"
        "def plugin_len(completions, **kwargs):\n"
        "    'Length of the completion.'\n"
        "    return [float(len(c)) for c in completions]\n"
    )
    try:
        load_plugin(plugin)
        load_plugin(plugin)  # loading twice is harmless
        assert get_reward("t_plugin_len")(["abc"]) == [3.0]
        assert "t_plugin_len" in {i.name for i in list_rewards()}
    finally:
        unregister_reward("t_plugin_len")


def test_plugin_errors(tmp_path):
    with pytest.raises(RewardError, match="does not exist"):
        load_plugin(tmp_path / "missing.py")
    bad = tmp_path / "bad.py"
    bad.write_text("import not_a_module_xyz\n")
    with pytest.raises(RewardError, match="failed to import: ModuleNotFoundError"):
        load_plugin(bad)


def _fake_log():
    logged = {}

    def log_metric(name, value):
        logged.setdefault(name, []).append(value)

    return logged, log_metric


def test_wrapper_wrong_length_gives_none_and_counts():
    logged, log_metric = _fake_log()
    wrapped = SafeReward(get_reward("tests.rewards.plugin_module:wrong_length"))
    assert wrapped(["a", "b", "c"], log_metric=log_metric) == [None, None, None]
    assert logged["reward_faults/wrong_length"] == [3.0]


def test_wrapper_exception_nan_and_non_numbers():
    logged, log_metric = _fake_log()
    raises = SafeReward(get_reward("tests.rewards.plugin_module:raises_on_boom"))
    assert raises(["ok", "boom", "ok"], log_metric=log_metric) == [1.0, None, 1.0]  # only the failing row
    assert logged["reward_faults/raises_on_boom"] == [1.0]
    odd = SafeReward(get_reward("tests.rewards.plugin_module:odd_values"))
    assert odd(["a"] * 5, log_metric=log_metric) == [1.0, None, None, None, None]
    assert logged["reward_faults/odd_values"] == [3.0]  # nan, inf and "1.0"; None is "not applicable"


def test_wrapper_timeout_from_a_worker_thread():
    wrapped = SafeReward(get_reward("tests.rewards.plugin_module:sleeps", seconds=5.0), timeout=0.3)
    result = {}

    def run():
        start = time.perf_counter()
        result["value"] = wrapped(["a", "b"])
        result["elapsed"] = time.perf_counter() - start

    t = threading.Thread(target=run)  # TRL may call rewards off the main thread
    t.start()
    t.join(10)
    assert result["value"] == [None, None]
    assert result["elapsed"] < 2.0


def test_wrapper_passes_both_completion_formats():
    wrapped = SafeReward(get_reward("think_format"))
    text = "<think>\nx\n</think>\n<answer>\n1\n</answer>"
    assert wrapped([text, [{"role": "assistant", "content": text}]]) == [1.0, 1.0]


@pytest.mark.parametrize("name", ["os:getcwd", "os:getpid", "builtins:print"])
def test_a_reward_trl_cannot_call_is_named_by_the_same_keyword_every_run(name):
    """The keyword named is TRL's first one the call cannot take, in TRL's order (a set's order, varying with
    PYTHONHASHSEED, named a different one each run)."""
    with pytest.raises(RewardError) as info:
        check_reward_args(name, {})
    message = str(info.value)
    assert "got an unexpected keyword argument 'prompts'" in message
    assert "TRL passes prompts, completions, completion_ids, trainer_state, log_extra, log_metric and" in message
