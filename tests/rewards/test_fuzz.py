"""Every built-in returns a float or None for any text, quickly; hostile inputs score 0 and return fast."""

from __future__ import annotations

import math
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_trl.rewards import get_reward
from grpo_trl.rewards.math_verifier import number, same_number
from grpo_trl.rewards.text import _NUMBER, extract_boxed, last_number

COLUMNS = {"solution": "72", "nums": [1, 2, 3], "target": 6}
MATH_TIMEOUT = 1.0  # seconds per item for the math-verify rewards in these tests
ARGS = {
    "cosine": {"max_len": 64, "timeout": MATH_TIMEOUT},
    "accuracy": {"timeout": MATH_TIMEOUT},
    "reasoning_accuracy": {"timeout": MATH_TIMEOUT},
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
MATH = [
    "accuracy",
    "cosine",
    "length",
    "reasoning_accuracy",
]  # go through math-verify (a child process) for non-integer answers

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
    expected = float(
        verify(parse(gold, parsing_timeout=None), parse(answer, parsing_timeout=None), timeout_seconds=None)
    )
    assert same_number(number(gold, gold=True), number(answer)) == expected  # decided in-process, never None


# ------------------------------------------------------------------------------------------------ linear time
# Patterns that made regex-based rewards quadratic or slow (repeated tags, separators, markers, numbers, braces).
LINEAR_PATTERNS = {
    "letters": "a",
    "words": "ab ",
    "digits": "9",
    "comma_numbers": "1,",
    "decimals": "12.5 ",
    "minus_runs": "1-",
    "think_open": "<think>\n",
    "think_sep": "\n</think>\n<answer>\n",
    "answer_open": "<answer>",
    "answer_close": "</answer>",
    "answer_pairs": "<answer>1</answer>",
    "layout": "<think>\nx\n</think>\n<answer>\n1\n</answer>",
    "boxed": "\\boxed{",
    "braces": "{",
    "hashes": "####",
    "steps": "Step 1",
    "numbered": "\n1.",
    "parens": "(",
}
LONG_PATTERNS = {"letters", "comma_numbers", "think_sep", "answer_pairs", "boxed", "braces", "numbered", "words"}
MS_PER_100KB = 10.0
# TRL's own repetition penalty (wrapped, not rewritten) builds every n-gram tuple: ~250 ns per token, so 10-17 ms per
# 100 KB on the densest text (a token per 2-3 characters); still linear, checked at both sizes.
BUDGET = {"repetition_penalty": 25.0}


def _cpu_seconds(fn, repeats: int = 2) -> float:
    """Least CPU time of this thread over repeats (the machine may be shared: wall time would measure the others)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.thread_time()
        fn()
        best = min(best, time.thread_time() - start)
    return best


@pytest.mark.parametrize("name", FAST + MATH)
def test_every_builtin_is_linear_in_input_length(name):
    """<= 10 ms per 100 KB at 100 KB and at 1 MB, on every pattern, with and without a leading <think>.

    The math-verify rewards are measured in this process (answer location and bounding): the math-verify work itself
    happens in worker processes on at most 2,000 characters per answer, under the per-item timeout.
    """
    worst = (0.0, "")
    cases = [(p, 100_000, prefix) for p in LINEAR_PATTERNS for prefix in ("", "<think>\n")]
    cases += [(p, 1_000_000, "") for p in LINEAR_PATTERNS if p in LONG_PATTERNS]
    for pattern_name, size, prefix in cases:
        pattern = LINEAR_PATTERNS[pattern_name]
        text = prefix + (pattern * (size // len(pattern) + 1))[:size]
        if name in MATH:
            _call(name, [text])  # math-verify's work happens in worker processes and is cached; not measured here
        per_100kb = _cpu_seconds(lambda text=text: _call(name, [text])) * 1e3 * 100_000 / len(text)
        worst = max(worst, (per_100kb, f"{pattern_name} x {size} {'after <think>' if prefix else ''}"))
    budget = BUDGET.get(name, MS_PER_100KB)
    assert worst[0] <= budget, f"{name}: {worst[0]:.2f} ms per 100 KB on {worst[1]}"


def _last_number_by_scan(text: str) -> str | None:
    found = None
    for m in _NUMBER.finditer(text):
        found = m.group(0)
    return found


def _boxed_by_scan(text: str) -> str | None:
    start = text.rfind("\\boxed{")
    if start < 0:
        return None
    depth, i = 1, start + len("\\boxed{")
    for j in range(i, len(text)):
        depth += {"{": 1, "}": -1}.get(text[j], 0)
        if depth == 0:
            return text[i:j].strip()
    return None


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(["1", "22", "333", ",", ".", "-", " ", "a", "\n", ",000", "4.5"]), max_size=30))
def test_last_number_equals_a_full_left_to_right_scan(pieces):
    text = "".join(pieces)
    assert last_number(text) == _last_number_by_scan(text)


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(["\\boxed{", "{", "}", "a", " ", "\\frac{1}{2}", "\\boxed"]), max_size=20))
def test_extract_boxed_equals_a_character_scan(pieces):
    text = "".join(pieces)
    assert extract_boxed(text) == _boxed_by_scan(text)
