"""Every built-in returns a float or None for any text, quickly; hostile inputs score 0 and return fast."""

from __future__ import annotations

import math
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_trl.rewards import get_reward
from grpo_trl.rewards.math import _PLAIN_INT

COLUMNS = {"solution": "72", "nums": [1, 2, 3], "target": 6}
MATH_TIMEOUT = 1.0  # seconds per item for the math-verify rewards in these tests
ARGS = {
    "cosine": {"max_len": 64, "timeout": MATH_TIMEOUT},
    "accuracy": {"timeout": MATH_TIMEOUT},
    "length": {"timeout": MATH_TIMEOUT},
    "soft_overlong": {"max_completion_len": 64, "soft_punish_cache": 16},
}
_INSTANCES: dict = {}  # one reward object per name: the math-verify child process is started once
FAST = [
    "countdown",
    "think_format",
    "tag_count",
    "reasoning_steps",
    "gsm8k",
    "xml_format",
    "repetition_penalty",
    "soft_overlong",
]
MATH = ["accuracy", "cosine", "length"]  # go through math-verify (a child process) for non-integer answers

HOSTILE = [
    "<answer>9**9**9**9</answer>",
    "<answer>__import__('os').system('echo hi')</answer>",
    "<answer>" + "(" * 5000 + "1" + ")" * 5000 + "</answer>",
    "<answer>" + "9" * 100_000 + "</answer>",
    "<answer>١٢٣ + ٤</answer>",
    "<answer>" + "1+" * 200_000 + "1</answer>",
    "x" * 1_000_000,
    "<answer>" * 10_000 + "</answer>" * 10_000,
    "<think>\n" + "a" * 500_000,
    "\\boxed{" * 50_000,
]


def _call(name, texts):
    if name not in _INSTANCES:
        _INSTANCES[name] = get_reward(name, **ARGS.get(name, {}))
    reward = _INSTANCES[name]
    cols = {k: [v] * len(texts) for k, v in COLUMNS.items()}
    return reward(texts, **cols)


def _check(values, n):
    assert len(values) == n
    for v in values:
        assert v is None or (isinstance(v, float) and math.isfinite(v))


@pytest.mark.parametrize("name", FAST + MATH)
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(st.text(max_size=300), min_size=1, max_size=4))
def test_any_text_gives_float_or_none(name, texts):
    _check(_call(name, texts), len(texts))


@pytest.mark.parametrize("name", FAST + MATH)
@settings(max_examples=40, deadline=None)
@given(body=st.text(alphabet="0123456789+-*/() .=\\{}<>abx^", max_size=80))
def test_answer_shaped_text(name, body):
    _check(_call(name, [f"<think>\n{body}\n</think>\n<answer>\n{body}\n</answer>"]), 1)


@pytest.mark.parametrize("name", FAST + MATH)
@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_inputs_score_zero_fast(name, text):
    start = time.perf_counter()
    values = _call(name, [text])
    elapsed = time.perf_counter() - start
    _check(values, 1)
    if name in ("countdown", "accuracy", "gsm8k"):
        assert values[0] in (0.0, None) or name == "gsm8k"
    _call(name, ["warm-up"])  # the first math-verify call starts the child process
    start = time.perf_counter()
    _call(name, [text + " "])  # a new text, so no cached score
    elapsed = time.perf_counter() - start
    assert elapsed < (MATH_TIMEOUT + 1.5 if name in MATH else 1.0), f"{name} took {elapsed:.2f}s"


def test_countdown_hostile_is_microseconds():
    reward = get_reward("countdown")
    texts = HOSTILE * 10
    start = time.perf_counter()
    out = reward(texts, nums=[[9, 9, 9, 9]] * len(texts), target=[1] * len(texts))
    per_item = (time.perf_counter() - start) / len(texts)
    assert out == [0.0] * len(texts)
    assert per_item < 5e-3


@settings(max_examples=200, deadline=None)
@given(a=st.integers(-(10**15) + 1, 10**15 - 1), b=st.integers(-(10**15) + 1, 10**15 - 1), same=st.booleans())
def test_integer_fast_path_agrees_with_math_verify(a, b, same):
    """The in-process integer comparison gives exactly what math-verify gives (so no score changes)."""
    from math_verify import parse, verify

    gold, answer = str(a), str(a if same else b)
    assert _PLAIN_INT.match(gold) and _PLAIN_INT.match(answer)
    expected = float(
        verify(parse(gold, parsing_timeout=None), parse(answer, parsing_timeout=None), timeout_seconds=None)
    )
    assert (1.0 if int(gold) == int(answer) else 0.0) == expected
