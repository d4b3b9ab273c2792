"""code_tests and code_format: every test shape, partial credit, pass/fail, and what does not count as a pass."""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_trl.rewards import get_reward
from grpo_trl.rewards.code import _passed_asserts, extract_code, parse_tests

ADD = "```python\ndef add(a, b):\n    return a + b\n```"
ADD_WRONG = "```python\ndef add(a, b):\n    return a - b if a > 2 else a + b\n```"
ASSERTS = ["assert add(1, 2) == 3", "assert add(0, 0) == 0", "assert add(5, 1) == 6"]
ECHO = "Here:\n```python\nn = int(input())\nprint(n * 2)\n```"
IO = [{"input": "2\n", "output": "4\n"}, {"input": "5", "output": " 10 "}, {"input": "0", "output": "1"}]


@pytest.fixture(scope="module")
def code_tests():
    return get_reward("code_tests", timeout=5.0)


def test_three_test_shapes_and_partial_credit(code_tests):
    mbpp = {"test_list": [ASSERTS] * 2, "test_setup_code": ["", ""]}
    assert code_tests([ADD, ADD_WRONG], **mbpp) == [1.0, pytest.approx(2 / 3)]
    ours = {"tests": [json.dumps({"asserts": ASSERTS}), {"io": IO}]}
    assert code_tests([ADD, ECHO], **ours) == [1.0, pytest.approx(2 / 3)]
    info = {"verification_info": [{"language": "python", "test_cases": [{**c, "type": "stdin_stdout"} for c in IO]}]}
    assert code_tests([ECHO], **info) == [pytest.approx(2 / 3)]
    binary = get_reward("code_tests", binary=True, timeout=5.0)
    assert binary([ADD, ADD_WRONG], **mbpp) == [1.0, 0.0]


def test_what_scores_zero_or_none(code_tests):
    tests = {"tests": [json.dumps({"asserts": ASSERTS})] * 6 + [json.dumps({"asserts": []})]}
    texts = [
        "no code at all",
        "```bash\nls\n```",
        "```python\nimport sys\nsys.exit(0)\ndef add(a, b): return a + b\n```",  # exits before any test: no pass
        "```python\nimport os\nos._exit(0)\n```",
        "```python\nprint('\\nadd:0')\ndef add(a, b): return -1\n```",  # printing a guessed marker does not pass
        "```python\ndef add(a, b):\n    while True: pass\n```",  # cut at the timeout
        ADD,  # a row without tests: not applicable
    ]
    start = time.monotonic()
    out = get_reward("code_tests", timeout=2.0)(texts, **tests)
    assert out == [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, None]
    assert time.monotonic() - start < 15


def test_setup_code_and_imports_are_run_before_the_solution(code_tests):
    out = code_tests(
        ["```python\ndef f():\n    return CONST + math.floor(1.5)\n```"],
        test_list=[["assert f() == 42"]],
        test_setup_code=["CONST = 41"],
        test_imports=[["import math"]],
    )
    assert out == [1.0]


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("```python\nx\n```", "x\n"),
        ("```\nx\n```", "x\n"),
        ("```Python3 \nx\n```", "x\n"),
        ("```python\na\n``` and then ```python\nb\n```", "b\n"),
        ("```js\nx\n```", None),
        ("```python x```", None),  # no newline after the tag
        ("```python\nunclosed", None),
        ("", None),
        ("```python\n" + "x" * 200_000 + "\n```", None),  # too long to run
    ],
)
def test_extract_code(text, code):
    assert extract_code(text) == code


@pytest.mark.parametrize(
    "row",
    [
        {},
        {"tests": json.dumps({"asserts": [], "io": []})},
        {"verification_info": {"language": "python", "test_cases": [{"input": "1", "output": "1", "type": "fn"}]}},
    ],
)
def test_rows_without_runnable_tests(row):
    assert parse_tests(row) is None


def test_code_format():
    reward = get_reward("code_format")
    texts = [ADD, "```python\ndef (:\n```", "text", "```python\n" + "(" * 500 + "\n```", "```py\n\x00\n```"]
    assert reward(texts) == [1.0, 0.5, 0.0, 0.5, 0.5]


@pytest.mark.parametrize("bad", [{"timeout": 0}, {"timeout": -1.0}, {"memory_mb": 63}, {"max_workers": 0},
                                 {"max_workers": -1}])  # fmt: skip
def test_bad_arguments_are_refused_when_the_reward_is_built(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        get_reward("code_tests", **bad)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(max_size=40),
            st.builds(lambda i: f"{'a' * 32}:{i}", st.integers(-5, 10**6)),
            st.builds(
                lambda i: f"{'a' * 32}:{i}", st.sampled_from(["", "0x1", " 1", "1 ", "١", "²", "01", "9" * 5000])
            ),
        ),
        max_size=60,
    ),
    st.integers(0, 8),
)
def test_passed_asserts_counts_each_test_at_most_once(lines, total):
    """Whatever the run printed, the parent counts each assert index in range(total) once: score in [0, 1]."""
    passed = _passed_asserts("\n".join(lines), "a" * 32, total)
    assert 0 <= passed <= total
    counted = [x[33:] for x in lines if x[:33] == "a" * 32 + ":" and x[33:].isascii() and x[33:].isdigit()]
    expected = {int(x) for x in counted if len(x) < 10}
    assert passed == len({i for i in expected if i < total})


@pytest.mark.parametrize("value", ["maybe", 1.5, None, [True]])
def test_check_refuses_a_network_arg_that_is_not_a_bool(value):
    """``network`` reaches recipes as ``memory_mb`` does (code_tests' signature), so ``check`` types it."""
    from grpo_trl.check.rewards import typed_args_problems

    (problem,) = typed_args_problems("code_tests", {"network": value}, "r.yaml", "rewards.0.args")
    assert problem.key == "rewards.0.args.network" and "bool" in str(problem), problem
    assert typed_args_problems("code_tests", {"network": True, "memory_mb": 256}, "r.yaml", "rewards.0.args") == []
