"""The reward call contract, without a trainer: every call shape TRL supports, async staying async, what results are
accepted, input isolation, SystemExit / KeyboardInterrupt, and the causes recorded for rows scored None.
(The same shapes in a real GRPOTrainer run: test_trl_contract.py.)"""

from __future__ import annotations

import asyncio
import copy
import inspect
import logging
import math
import pickle
import sys
import time
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_trl.rewards import NamedReward, SafeReward, get_reward
from grpo_trl.rewards.call import call_sync
from tests.fake_openai import FakeOpenAI
from tests.rewards import trl_doc_rewards as docs

M = "tests.rewards.trl_doc_rewards:"


def trl_kwargs(n: int = 4, **columns) -> tuple[dict, dict]:
    """Keywords exactly as GRPOTrainer._calculate_rewards passes them, and what log_metric received."""
    logged: dict[str, list[float]] = {}
    prompts = [[{"role": "system", "content": "sys"}, {"role": "user", "content": f"q{i // 2}"}] for i in range(n)]
    completions = [[{"role": "assistant", "content": f"<answer>{i}</answer>"}] for i in range(n)]
    kwargs = {
        "prompts": prompts,
        "completions": completions,
        "completion_ids": [list(range(i + 3)) for i in range(n)],
        "solution": [str(i) for i in range(n)],
        **columns,
        "trainer_state": object(),
        "log_extra": lambda column, values: None,
        "log_metric": lambda name, value: logged.setdefault(name, []).append(value),
    }
    return kwargs, logged


def score(reward, **kwargs):
    return call_sync(reward, **kwargs)


# ------------------------------------------------------------------------------------------------ call shapes
@pytest.mark.parametrize("name", docs.SHAPES)
def test_every_trl_call_shape_is_scored(name):
    kwargs, logged = trl_kwargs()
    wrapped = SafeReward(get_reward(M + name))
    out = score(wrapped, **kwargs)
    assert len(out) == 4 and all(isinstance(v, float) for v in out), out
    assert logged[f"reward_faults/{name}"] == [0.0] and logged[f"reward_none_frac/{name}"] == [0.0]


def test_async_rewards_stay_async_for_trl_and_pickle():
    from trl.trainer.utils import is_async_callable

    for name, expect in [("length_reward", False), ("ids_only", False), ("async_judge", True), ("async_rubric", True)]:
        named = get_reward(M + name)
        wrapped = SafeReward(named, timeout=5)
        assert is_async_callable(named) is expect and is_async_callable(wrapped) is expect, name
        again = pickle.loads(pickle.dumps(wrapped))
        assert is_async_callable(again) is expect and again.timeout == 5 and again.__name__ == name


def test_async_rewards_run_concurrently_on_one_loop():
    kwargs, _ = trl_kwargs()
    rewards = [SafeReward(get_reward(M + n)) for n in ("async_judge", "async_rubric")]

    async def both():
        return await asyncio.gather(*(r(**kwargs) for r in rewards))

    start = time.perf_counter()
    results = asyncio.run(both())
    assert time.perf_counter() - start < 0.39  # two 0.2 s sleeps, overlapped
    assert all(len(r) == 4 and None not in r for r in results)


def test_async_timeout_cancels_and_scores_none():
    kwargs, logged = trl_kwargs()
    wrapped = SafeReward(get_reward(M + "slow_judge"), timeout=0.3)
    start = time.perf_counter()
    assert score(wrapped, **kwargs) == [None] * 4
    assert time.perf_counter() - start < 2
    assert "did not return within 0.3 s" in wrapped.cause and logged["reward_faults/slow_judge"] == [4.0]


def test_bound_args_arrive_as_keywords_with_ids_first():
    def scaled_ids(completion_ids, scale, **kwargs):
        return [scale * len(ids) for ids in completion_ids]

    kwargs, _ = trl_kwargs(n=2)
    assert SafeReward(NamedReward("s", scaled_ids, {"scale": 2.0}))(**kwargs) == [6.0, 8.0]


def test_a_reward_own_timeout_error_is_retried_row_by_row():
    def flaky(completions, **kwargs):
        if len(completions) > 1:
            raise TimeoutError("the judge timed out")
        return [1.0]

    kwargs, _ = trl_kwargs(n=3)
    wrapped = SafeReward(NamedReward("flaky", flaky))
    assert wrapped(**kwargs) == [1.0, 1.0, 1.0]


# ------------------------------------------------------------------------------------------------ results
class _Iterable:
    """A result type that is neither a Sequence nor an Iterator, only iterable, as TRL's loop needs."""

    def __init__(self, values):
        self.values = values

    def __iter__(self):
        return iter(self.values)


@pytest.mark.parametrize(
    "raw",
    [
        [1, 0.5, True],
        (1, 0.5, True),
        np.array([1.0, 0.5, 1.0]),
        np.array([1, 0, 1], dtype=np.int8),
        [np.float32(1.0), np.float64(0.5), np.int64(1)],
        torch.tensor([1.0, 0.5, 1.0]),
        torch.tensor([1.0, 0.5, 1.0], dtype=torch.bfloat16),
        [torch.tensor(1.0), torch.tensor(0.5), np.array(1.0)],
        (x for x in [1.0, 0.5, 1.0]),
        {"a": 1.0, "b": 0.5, "c": 1.0}.values(),  # TRL iterates whatever it gets
        map(float, [1, 0.5, 1]),
        _Iterable([1.0, 0.5, 1.0]),
    ],
    ids=lambda r: type(r).__name__,
)
def test_every_sequence_trl_accepts_is_accepted(raw):
    kwargs, logged = trl_kwargs(n=3)
    out = SafeReward(NamedReward("r", lambda **kw: raw))(**kwargs)
    assert [float(v) for v in out] == [1.0, 0.5 if out[1] != 0 else 0.0, 1.0] and logged["reward_faults/r"] == [0.0]


@pytest.mark.parametrize(
    ("raw", "cause"),
    [
        ([1.0, 2.0], "returned 2 values for 3 completions"),
        (np.ones((3, 1)), "2-D ndarray"),
        ("abc", "not a list of 3 numbers"),
        ({"a": 1, "b": 2, "c": 3}, "not a list of 3 numbers"),
        ({"a": 1, "b": 2, "c": 3}.keys(), "not a list of 3 numbers"),  # TRL would score the keys
        ({1.0, 0.5, 2.0}, "not a list of 3 numbers"),  # TRL would score in hash order
        (1.0, "not a list of 3 numbers"),
        (None, "not a list of 3 numbers"),
    ],
)
def test_results_trl_would_reject_make_every_row_none_with_a_cause(raw, cause):
    kwargs, logged = trl_kwargs(n=3)
    wrapped = SafeReward(NamedReward("r", lambda **kw: raw))
    assert wrapped(**kwargs) == [None] * 3
    assert cause in wrapped.cause and logged["reward_none_frac/r"] == [1.0]


def test_float32_overflow_and_nan_become_none_and_are_counted():
    kwargs, logged = trl_kwargs(n=5)
    wrapped = SafeReward(NamedReward("big", lambda **kw: [1e308, -1e39, math.nan, 10**400, 3.0e38]))
    assert wrapped(**kwargs) == [None, None, None, None, 3.0e38]
    assert logged["reward_faults/big"] == [4.0] and "beyond float32" in wrapped.cause


VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**400), max_value=10**400),
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(width=32).map(np.float32),
    st.floats().map(np.float64),
    st.text(max_size=5),
    st.complex_numbers(max_magnitude=10),
    st.just(object()),
)
CONTAINERS = st.sampled_from([list, tuple, lambda v: (x for x in v), lambda v: np.array(v, dtype=object)])


def expected(v):
    """The score TRL can store for one returned value, or None."""
    if v is None or isinstance(v, (str, complex)) or type(v) is object:
        return None
    try:
        f = float(v)
    except OverflowError:
        return None
    return f if math.isfinite(f) and abs(f) <= 3.4028234663852886e38 else None


@settings(max_examples=300, deadline=None)
@given(values=st.lists(VALUES, min_size=1, max_size=8), container=CONTAINERS, extra=st.integers(-1, 1))
def test_any_result_gives_trl_storable_scores(values, container, extra):
    n = len(values) + extra if len(values) + extra > 0 else len(values)
    kwargs, logged = trl_kwargs(n=n)
    out = SafeReward(NamedReward("h", lambda **kw: container(values)))(**kwargs)
    assert len(out) == n
    # what TRL does with it: None -> NaN, then a float32 tensor; nothing else may be non-finite
    stored = torch.tensor([r if r is not None else torch.nan for r in out], dtype=torch.float32)
    assert torch.isfinite(stored[[r is not None for r in out]]).all()
    if n != len(values):
        assert out == [None] * n
    else:
        assert out == [expected(v) for v in values]
    assert logged["reward_none_frac/h"] == [sum(r is None for r in out) / n]


@settings(max_examples=100, deadline=None)
@given(values=st.lists(st.floats(width=32, allow_nan=False, allow_infinity=False), min_size=1, max_size=8))
def test_float_tensors_and_arrays_keep_their_values(values):
    kwargs, _ = trl_kwargs(n=len(values))
    for raw in (torch.tensor(values), np.array(values, dtype=np.float32), [np.float32(v) for v in values]):
        assert SafeReward(NamedReward("t", lambda raw=raw, **kw: raw))(**kwargs) == values


def test_a_sync_function_returning_a_coroutine_is_a_fault_without_warnings():
    async def judge(completions, **kwargs):
        return [1.0] * len(completions)

    def forgot_await(completions, **kwargs):
        return judge(completions)

    kwargs, _ = trl_kwargs(n=2)
    wrapped = SafeReward(NamedReward("forgot_await", forgot_await))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "coroutine ... was never awaited" would be a RuntimeWarning
        assert wrapped(**kwargs) == [None, None]
    assert "returned a coroutine" in wrapped.cause


# ------------------------------------------------------------------------------------------------ exits
def test_sys_exit_and_exit_are_faults_of_their_rows(caplog):
    def exits_on_two(completions, **kwargs):
        if any("2" in c[0]["content"] for c in completions):
            sys.exit(3)
        return [1.0] * len(completions)

    def calls_exit(completions, **kwargs):
        exit()  # noqa: PLR1722 - the builtin a plugin might call

    kwargs, logged = trl_kwargs(n=4)
    with caplog.at_level(logging.WARNING):
        a = SafeReward(NamedReward("exits_on_two", exits_on_two))
        assert a(**kwargs) == [1.0, 1.0, None, 1.0]
        b = SafeReward(NamedReward("calls_exit", calls_exit))
        assert b(**kwargs) == [None] * 4
    assert a.cause.startswith("SystemExit: exit(3)") and __file__ in a.cause
    assert __file__ in b.cause  # the caller's line, not site.py's
    assert "'exits_on_two'" in caplog.text and "'calls_exit'" in caplog.text


def test_keyboard_interrupt_still_stops_the_run():
    def interrupted(completions, **kwargs):
        raise KeyboardInterrupt

    kwargs, _ = trl_kwargs(n=2)
    with pytest.raises(KeyboardInterrupt):
        SafeReward(NamedReward("ki", interrupted))(**kwargs)


def test_exception_cause_names_type_message_and_line():
    def broken(completions, **kwargs):
        raise ValueError("bad gold answer")

    kwargs, _ = trl_kwargs(n=3)
    wrapped = SafeReward(NamedReward("broken", broken))
    assert wrapped(**kwargs) == [None] * 3
    line = inspect.getsourcelines(broken)[1] + 1
    assert wrapped.cause == f"ValueError: bad gold answer at {__file__}:{line}"


# ------------------------------------------------------------------------------------------------ isolation
def vandal(prompts, completions, completion_ids, solution, **kwargs):
    """Mutates everything it is given, the ways a careless reward would."""
    completions[0][0]["content"] = "EDITED"
    completions[1].append({"role": "assistant", "content": "extra"})
    completions.pop()
    prompts[0][0].pop("content")
    completion_ids[0].clear()
    solution.append("99")
    solution[0] = "wrong"
    return [0.0] * (len(completions) + 1)


_EXPECTED: list = []  # what reader must see; set before the calls, so a forked (timed) reward's child has it too


def reader(prompts, completions, completion_ids, solution, **kwargs):
    """1.0 per row where it saw the untouched inputs, else 0.0 (it may run in a forked child: the score says it)."""
    return [float((prompts, completions, completion_ids, solution) == _EXPECTED[0])] * len(completions)


@pytest.mark.parametrize("timeout", [None, 5.0])
def test_in_place_mutation_is_invisible_to_other_rewards_and_to_trl(timeout):
    kwargs, _ = trl_kwargs(n=4)
    kwargs["trainer_state"] = object()
    before = copy.deepcopy({k: kwargs[k] for k in ("prompts", "completions", "completion_ids", "solution")})
    held = kwargs["completions"][0][0]  # TRL's logs hold the same message dicts
    _EXPECTED[:] = [tuple(before[k] for k in ("prompts", "completions", "completion_ids", "solution"))]
    for _ in range(2):
        assert SafeReward(NamedReward("vandal", vandal), timeout=timeout)(**kwargs) == [0.0] * 4
        assert SafeReward(NamedReward("reader", reader), timeout=timeout)(**kwargs) == [1.0] * 4
    assert {k: kwargs[k] for k in before} == before
    # its own copy: the originals were never touched
    assert held == {"role": "assistant", "content": "<answer>0</answer>"} and kwargs["completions"][0][0] is held


def test_an_edited_message_stays_the_same_dict():
    def editor(completions, **kwargs):
        completions[1][0]["content"] = "EDITED"
        del completions[2][0]["role"]
        return [0.0] * len(completions)

    kwargs, _ = trl_kwargs(n=3)
    held = [c[0] for c in kwargs["completions"]]  # what TRL's completion log holds
    SafeReward(NamedReward("editor", editor))(**kwargs)
    assert [c[0] for c in kwargs["completions"]] == held and all(
        a is c[0] for a, c in zip(held, kwargs["completions"])
    )
    assert held[1]["content"] == "<answer>1</answer>" and held[2]["role"] == "assistant"


def test_async_rewards_get_their_own_copies():
    async def async_vandal(**kwargs):
        await asyncio.sleep(0.05)
        return vandal(**kwargs)

    async def async_reader(**kwargs):
        await asyncio.sleep(0.1)  # reads after the vandal ran
        return reader(**kwargs)

    kwargs, _ = trl_kwargs(n=4)
    before = copy.deepcopy({k: kwargs[k] for k in ("prompts", "completions", "completion_ids", "solution")})
    _EXPECTED[:] = [tuple(before[k] for k in ("prompts", "completions", "completion_ids", "solution"))]
    rewards = [SafeReward(NamedReward("v", async_vandal)), SafeReward(NamedReward("r", async_reader))]

    async def both():
        return await asyncio.gather(*(r(**kwargs) for r in rewards))

    assert asyncio.run(both()) == [[0.0] * 4, [1.0] * 4]  # the reader's 1.0s: it saw the untouched inputs
    assert {k: kwargs[k] for k in before} == before


def test_row_by_row_retry_gets_copies_too():
    def vandal_then_raise(completions, solution, **kwargs):
        solution.append("x")
        completions[0][0]["content"] = "EDITED"
        if len(completions) > 1:
            raise RuntimeError("whole batch fails")
        return [1.0]

    kwargs, _ = trl_kwargs(n=3)
    before = copy.deepcopy((kwargs["completions"], kwargs["solution"]))
    assert SafeReward(NamedReward("vr", vandal_then_raise))(**kwargs) == [1.0] * 3
    assert (kwargs["completions"], kwargs["solution"]) == before


# ------------------------------------------------------------------------------------------------ built-ins
def test_builtins_leave_their_inputs_alone_so_they_may_skip_the_guard():
    """Built-ins skip the input guard (its cost); this is what makes that safe, for every registered built-in."""
    from bench.isolation import BUILTIN_ARGS, trl_batch
    from grpo_trl.rewards.registry import list_rewards

    batch = trl_batch(64)
    batch["completions"][3] = [{"role": "assistant", "content": "<think>\n" + "x" * 5000 + "\n</think>"}]
    batch["completion_ids"][5] = []
    before = copy.deepcopy({k: v for k, v in batch.items() if isinstance(v, list)})
    builtins = [info for info in list_rewards() if info.source.startswith("grpo_trl.rewards.")]
    assert len(builtins) >= 11
    # the judge needs a server: tests/fake_openai.py stands in for the external one (it answers "Score: 7")
    with FakeOpenAI(models=["m"], reply=lambda body: "Score: 7") as server:
        args = {**BUILTIN_ARGS, "judge": {"base_url": server.base_url, "model": "m", "prompt": "{{ completion }}"}}
        for info in builtins:
            wrapped = SafeReward(get_reward(info.name, **args.get(info.name, {})))
            assert wrapped.read_only, info.name
            score(wrapped, **batch)
            assert {k: batch[k] for k in before} == before, info.name
    assert not SafeReward(NamedReward("v", vandal)).read_only
    assert not SafeReward(get_reward("tests.rewards.plugin_module:shouts")).read_only


# ------------------------------------------------------------------------------------------------ reported faults
def _reports_odd_rows(completions, solution, **kwargs):
    """None for odd solutions, reported as faults; None for solution '0', the reward's own verdict (not a fault)."""
    from grpo_trl.rewards.results import report_fault

    out = []
    for s in solution:
        if int(s) % 2:
            report_fault(f"row {s} failed")
            out.append(None)
        else:
            out.append(None if s == "0" else 1.0)
    return out


@pytest.mark.parametrize("timeout", [None, 5.0])  # in the caller's thread, and in the worker thread of timeout:
def test_reported_faults_are_counted_and_the_reward_own_none_is_not(timeout, caplog):
    kwargs, logged = trl_kwargs(n=4)  # solutions 0..3: '0' own None, '1' and '3' reported
    wrapped = SafeReward(NamedReward("reports", _reports_odd_rows), timeout=timeout)
    with caplog.at_level(logging.WARNING):
        assert wrapped(**kwargs) == [None, None, 1.0, None]
    assert logged["reward_faults/reports"] == [2.0] and logged["reward_none_frac/reports"] == [0.75]
    assert wrapped.faults == 2 and wrapped.cause == "row 1 failed"
    assert "reward 'reports' row 1 failed; 2 of 4 row(s) scored None (counted in reward_faults/reports)" in caplog.text


def test_reported_faults_count_once_per_none_row_and_outside_a_call_are_not_counted():
    from grpo_trl.rewards.results import report_fault

    def over_reports(completions, **kwargs):
        for _ in range(5):
            report_fault("again")
        return [None, 1.0, 1.0]

    kwargs, logged = trl_kwargs(n=3)
    wrapped = SafeReward(NamedReward("over", over_reports))
    wrapped(**kwargs)
    assert logged["reward_faults/over"] == [1.0]  # one None row: one fault, however often it was reported
    assert report_fault("nobody listens") is False
    wrapped(**kwargs)
    assert logged["reward_faults/over"] == [1.0, 1.0]  # nothing leaked from outside or from the previous call


def test_reported_faults_are_counted_row_by_row_and_from_async_rewards():
    from grpo_trl.rewards.results import report_fault

    def raises_on_batches(completions, solution, **kwargs):
        if len(completions) > 1:
            report_fault("not a row fault: the batch raised")
            raise RuntimeError("batch")
        return _reports_odd_rows(completions, solution)

    async def async_reports(completions, solution, **kwargs):
        await asyncio.sleep(0)
        return _reports_odd_rows(completions, solution)

    for name, func in (("rows", raises_on_batches), ("areports", async_reports)):
        kwargs, logged = trl_kwargs(n=4)
        wrapped = SafeReward(NamedReward(name, func), timeout=5.0 if name == "areports" else None)
        assert score(wrapped, **kwargs) == [None, None, 1.0, None]
        assert logged[f"reward_faults/{name}"] == [2.0], name


def test_a_reported_reason_is_one_printable_line_whatever_the_reward_passes():
    from grpo_trl.rewards.results import collecting_faults, report_fault

    class Unprintable:
        def __str__(self):
            raise RuntimeError("no str")

    with collecting_faults() as reported:
        for why in ("judge said:\nno score\r\n", 42, None, Unprintable(), "x" * 5000):
            assert report_fault(why) is True
    assert reported[:4] == ["judge said: no score", "42", "None", "(an unprintable Unprintable)"]
    assert all("\n" not in r and "\r" not in r and len(r) <= 300 for r in reported)


def test_a_generator_that_raises_midway_is_retried_row_by_row():
    def lazy(completions, **kwargs):
        return (1 / ("bad" not in completion_text(c)) for c in completions)

    from grpo_trl.rewards import completion_text

    kwargs, logged = trl_kwargs(n=3)
    kwargs["completions"] = ["ok", "bad", "ok"]
    wrapped = SafeReward(NamedReward("lazy", lazy))
    assert wrapped(**kwargs) == [1.0, None, 1.0]
    assert logged["reward_faults/lazy"] == [1.0] and "ZeroDivisionError" in wrapped.cause
