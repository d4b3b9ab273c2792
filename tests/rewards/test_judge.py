"""The ``judge`` reward against tests/fake_openai.py, a local fake of an EXTERNAL OpenAI-compatible server (a real
one cannot run in this test's budget; tests/test_vllm_cpu.py has the real-vLLM happy path): template, score reading,
async concurrency, every failure class costing only its rows, the disk cache, and check's probe. All traffic goes to
127.0.0.1; every loop is bounded."""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import time

import pytest

from grpo_trl.check.rewards import build_rewards
from grpo_trl.rewards import get_reward
from grpo_trl.rewards.judge import Judge
from grpo_trl.rewards.registry import RewardError, check_reward_args
from tests.fake_openai import FakeOpenAI

pytest.importorskip("openai")

PROMPT = "Q: {{ prompt }}\nA: {{ completion }}\nScore:"
WITH_SOLUTION = "Q: {{ prompt }}\nA: {{ completion }}\nRef: {{ solution }}\nScore:"


def echo_score(body: dict) -> str:
    """The fake judge answers with the score written after 'score=' in the completion (expected values are known)."""
    text = body["messages"][-1]["content"]
    found = re.search(r"score=(\S+)", text)
    return f"Reasoning... final score: {found.group(1) if found else 'none'}"


def call(judge, completions, **columns):
    prompts = columns.pop("prompts", [[{"role": "user", "content": f"q{i}"}] for i in range(len(completions))])
    return asyncio.run(judge(completions, prompts=prompts, **columns))


def make(server, **args):
    return Judge(
        base_url=server.base_url, model="judge-m", prompt=args.pop("prompt", PROMPT), **{"retries": 0, **args}
    )


def test_is_async_and_registered():
    assert inspect.iscoroutinefunction(Judge.__call__)
    with FakeOpenAI(models=["judge-m"]) as server:
        named = get_reward("judge", base_url=server.base_url, model="judge-m", prompt=PROMPT)
        assert isinstance(named.func, Judge)


def test_template_columns_and_score_mapping():
    with FakeOpenAI(models=["judge-m"], reply=echo_score) as server:
        judge = make(server, prompt=WITH_SOLUTION, score_range=[0, 10], system="You are strict.")
        out = call(judge, ["score=10", "score=5", "score=0", "score=7.5"], solution=["s0", "s1", "s2", "s3"])
    assert out == [1.0, 0.5, 0.0, 0.75]
    # requests run concurrently, so they arrive in any order: find the first row's
    body = next(r["body"] for r in server.requests if "Q: q0" in r["body"]["messages"][1]["content"])
    assert body["messages"][0] == {"role": "system", "content": "You are strict."}
    assert body["messages"][1]["content"] == "Q: q0\nA: score=10\nRef: s0\nScore:"
    assert body["model"] == "judge-m" and body["temperature"] == 0.0


def test_score_field_and_regex_shapes():
    with FakeOpenAI(models=["judge-m"]) as server:
        judge = make(server, score_field="verdict.score", score_range=[1, 5])
        assert judge.score_of('blah {"verdict": {"score": 5}} done') == 1.0
        assert judge.score_of('{"verdict": {"score": 1}}') == 0.0
        deep = '{"verdict": ' + "[" * 5000 + "]" * 5000 + "}"  # a judge's answer nested past json's recursion limit
        bad_scores = ['{"verdict": {}}', "no json", '{"verdict": {"score": 9}}', '{"verdict": {"score": "x"}}', "{]"]
        for bad in [*bad_scores, deep]:
            assert judge.score_of(bad) is None
        judge = make(server, score_regex=r"SCORE=(\d)", score_range=[0, 4])
        assert judge.score_of("SCORE=1 then SCORE=3") == 0.75  # the last match
        assert judge.score_of("score 3") is None


@pytest.mark.parametrize(
    ("script", "why"),
    [
        (["500"], "HTTP 500"),
        (["429:0"], "rate limited"),
        (["malformed"], "not OpenAI-compatible"),
        (["close"], "cannot reach"),
        (["hang"], "no answer"),
        (["trickle:0.1"], "no answer"),  # one byte every 0.1 s: cut at timeout (1 s), not kept alive by each byte
        (["endless"], "longer than 16 MiB"),  # a body that never ends: cut at 16 MiB, not the run's memory
    ],
)
def test_each_failure_costs_only_its_row(script, why, caplog):
    with FakeOpenAI(models=["judge-m"], script=script, reply=echo_score, hang_limit=5) as server:
        judge = make(server, timeout=1.0, max_concurrency=1)
        start = time.monotonic()
        out = call(judge, ["score=3", "score=4", "score=5"])
    assert out == [None, 0.4, 0.5]  # the first request met the fault; the others were answered
    assert time.monotonic() - start < 10
    assert judge.failures == 1 and why in caplog.text


def test_unreadable_and_out_of_range_scores_are_none():
    with FakeOpenAI(models=["judge-m"], reply=echo_score) as server:
        out = call(make(server), ["score=11", "score=-1", "no score", "score=abc", "score=2"])
    assert out == [None, None, None, None, 0.2]


def test_retry_after_is_honoured_and_then_scored():
    with FakeOpenAI(models=["judge-m"], script=["429:1"], reply=echo_score) as server:
        judge = make(server, retries=1)
        start = time.monotonic()
        assert call(judge, ["score=6"]) == [0.6]
    assert time.monotonic() - start >= 0.9 and len(server.requests) == 2


def test_slow_server_runs_requests_concurrently():
    with FakeOpenAI(models=["judge-m"], default="slow:1.0", reply=echo_score) as server:
        judge = make(server, max_concurrency=8)
        start = time.monotonic()
        assert call(judge, [f"score={i}" for i in range(8)]) == [i / 10 for i in range(8)]
        elapsed = time.monotonic() - start
    # 8 x 1 s would be 8 s one at a time; the margin is for the client's start on a busy machine (CI: 1.7 s)
    assert elapsed < 6.0 and server.max_in_flight >= 4


def test_disk_cache_means_a_resumed_run_does_not_pay_twice(tmp_path):
    cache = tmp_path / "judge.sqlite"
    with FakeOpenAI(models=["judge-m"], reply=echo_score) as server:
        first = call(make(server, cache=str(cache)), ["score=1", "score=2"])
        again = call(make(server, cache=str(cache)), ["score=1", "score=2", "score=3"])  # a new process would do this
    assert first == [0.1, 0.2] and again == [0.1, 0.2, 0.3]
    assert len(server.requests) == 3  # only the new row was asked
    with FakeOpenAI(models=["judge-m"], default="500") as server:  # failures are not cached
        assert call(make(server, cache=str(cache)), ["score=1", "score=9"]) == [0.1, None]


def test_template_naming_a_missing_column_costs_its_rows(caplog):
    with FakeOpenAI(models=["judge-m"], reply=echo_score) as server:
        judge = make(server, prompt="{{ completion }} {{ missing_column }}")
        assert call(judge, ["score=1"]) == [None]
    assert "missing_column" in caplog.text and not server.requests


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ({"prompt": "{{ completion "}, "not a valid Jinja template"),
        ({"prompt": ""}, "must be a Jinja template"),
        ({"score_regex": "(", "prompt": PROMPT}, "not a valid regex"),
        ({"score_regex": "x", "score_field": "y", "prompt": PROMPT}, "not both"),
        ({"score_range": [5, 1], "prompt": PROMPT}, "low < high"),
        ({"score_range": [0], "prompt": PROMPT}, "low < high"),
    ],
)
def test_bad_arguments_are_check_errors(args, match):
    with FakeOpenAI(models=["judge-m"]) as server:
        with pytest.raises(RewardError, match=match):
            check_reward_args("judge", {"base_url": server.base_url, "model": "judge-m", **args})


def test_check_probes_the_endpoint_and_model_in_seconds():
    with FakeOpenAI(models=["judge-m", "other"]) as server:
        check_reward_args("judge", {"base_url": server.base_url, "model": "judge-m", "prompt": PROMPT})
        with pytest.raises(RewardError, match="model 'judge-n' is not served.*did you mean 'judge-m'"):
            check_reward_args("judge", {"base_url": server.base_url, "model": "judge-n", "prompt": PROMPT})
    start = time.monotonic()
    with pytest.raises(RewardError, match="cannot reach"):
        check_reward_args("judge", {"base_url": server.base_url, "model": "judge-m", "prompt": PROMPT})
    assert time.monotonic() - start < 7


def test_api_key_comes_from_the_named_variable_and_is_never_shown(monkeypatch, caplog):
    monkeypatch.setenv("JUDGE_TEST_KEY", "sk-very-secret")
    with FakeOpenAI(models=["judge-m"], default="401") as server:
        judge = make(server, api_key_env="JUDGE_TEST_KEY")
        assert call(judge, ["score=1"]) == [None]
        assert "sk-very-secret" not in caplog.text and "sk-very-secret" not in repr(judge.endpoint)
    assert server.requests[0]["headers"]["authorization"] == "Bearer sk-very-secret"
    with pytest.raises(Exception, match="NAME of an environment variable"):
        make(server, api_key_env="sk-very-secret")


def test_results_are_json_serialisable_floats_or_none():
    with FakeOpenAI(models=["judge-m"], reply=echo_score) as server:
        out = call(make(server), ["score=3", "x"])
    assert json.loads(json.dumps(out)) == [0.3, None]


def test_grpo_trl_check_probes_the_judge(make_recipe, capsys):
    from grpo_trl.cli import main as cli_main

    def recipe(url):
        judge = {"name": "judge", "args": {"base_url": url, "model": "judge-m", "prompt": PROMPT, "timeout": 5}}
        return make_recipe(rewards=[judge])

    with FakeOpenAI(models=["judge-m"]) as server:
        assert cli_main(["check", str(recipe(server.base_url))]) == 0
    capsys.readouterr()
    start = time.monotonic()
    assert cli_main(["check", str(recipe(server.base_url))]) == 1  # the server is gone now
    err = capsys.readouterr().err
    assert time.monotonic() - start < 30
    assert "error:" in err and "rewards" in err and "cannot reach" in err and "Traceback" not in err


def test_failed_judge_rows_are_counted_as_reward_faults_like_any_other(make_recipe, caplog):
    """As training runs it: the recipe's judge inside the safety wrapper, called with TRL's keywords."""
    from grpo_trl.check import load_recipe
    from grpo_trl.monitor.callbacks import Alerts
    from grpo_trl.rewards.call import call_sync

    with FakeOpenAI(models=["judge-m"], script=["ok", "500"], reply=echo_score) as server:  # ok: the probe
        judge = {"name": "judge", "args": {"base_url": server.base_url, "model": "judge-m", "prompt": PROMPT}}
        judge["args"].update(retries=0, max_concurrency=1)
        recipe = load_recipe(make_recipe(rewards=[judge]), validate=False)
        (wrapped,), _ = build_rewards(recipe)
        logged: dict[str, float] = {}
        completions = [[{"role": "assistant", "content": f"score={s}"}] for s in (3, 4, 99)]
        with caplog.at_level("WARNING"):
            out = call_sync(
                wrapped,
                prompts=[[{"role": "user", "content": f"q{i}"}] for i in range(3)],
                completions=completions,
                completion_ids=[[1], [2], [3]],
                log_metric=logged.__setitem__,
            )
    assert out == [None, 0.4, None]  # the failed request, and an answer out of score_range
    assert logged["reward_faults/judge"] == 2.0 and logged["reward_none_frac/judge"] == 2 / 3
    assert wrapped.faults == 2 and wrapped.cause.startswith("request failed: ") and "HTTP 500" in wrapped.cause
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings == [  # the wrapper's one line, as for any fault, and no second line from the judge
        f"reward 'judge' {wrapped.cause}; 2 of 3 row(s) scored None (counted in reward_faults/judge)"
    ]
    alerts = Alerts("/nonexistent", rewards=[wrapped])._check({"reward_none_frac/judge": 1.0})
    assert f"first cause: {wrapped.cause}" in alerts["reward_none:judge"]
