"""The ``code`` builder on small files in MBPP's and open-r1's shapes (written here, no network), end to end with
``code_tests``."""

from __future__ import annotations

import json

import pytest

from grpo_trl.data import DataError, build_dataset
from grpo_trl.rewards import get_reward

MBPP = [
    {
        "task_id": 2,
        "text": "Write a function to find the shared elements from the given two lists.",
        "code": "def similar_elements(a, b):\n    return tuple(set(a) & set(b))",
        "test_list": [
            "assert set(similar_elements((3, 4, 5, 6), (5, 7, 4, 10))) == set((4, 5))",
            "assert set(similar_elements((1, 2, 3, 4), (5, 4, 3, 7))) == set((3, 4))",
        ],
        "test_setup_code": "",
        "challenge_test_list": [],
    },
    {
        "task_id": 3,
        "text": "Write a python function to identify non-prime numbers.",
        "code": "import math\ndef is_not_prime(n):\n    return any(n % i == 0 for i in range(2, math.isqrt(n) + 1))",
        "test_list": ["assert is_not_prime(2) == False", "assert is_not_prime(10) == True"],
        "test_setup_code": "",
        "challenge_test_list": [],
    },
]
OPEN_R1 = [
    {
        "problem": "Read n and print n squared.",
        "verification_info": json.dumps(
            {"language": "python", "test_cases": [{"input": "3\n", "output": "9\n", "type": "stdin_stdout"}]}
        ),
    },
    {
        "problem": "A C++ only problem.",
        "verification_info": json.dumps({"language": "cpp", "test_cases": [{"input": "1", "output": "1"}]}),
    },
]


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_mbpp_shape_end_to_end(tmp_path):
    data = build_dataset({"builder": "code", "path": _write(tmp_path / "mbpp.jsonl", MBPP)}).train
    assert len(data) == 2
    row = data[0]
    assert row["prompt"][0]["role"] == "system" and "```python" in row["prompt"][0]["content"]
    assert "similar_elements((3, 4, 5, 6)" in row["prompt"][-1]["content"]  # the asserts are shown
    reference = [f"```python\n{r['code']}\n```" for r in MBPP]
    assert get_reward("code_tests")(reference, tests=data["tests"]) == [1.0, 1.0]
    assert get_reward("code_tests")(
        ["```python\ndef similar_elements(a, b): return ()\n```"] * 2, tests=data["tests"]
    )[0] == pytest.approx(0.0)


def test_open_r1_shape_drops_what_cannot_run(tmp_path):
    data = build_dataset(
        {"builder": "code", "path": _write(tmp_path / "r1.jsonl", OPEN_R1), "system_prompt": "none"}
    ).train
    assert len(data) == 1  # the C++ row has nothing runnable here
    assert data[0]["prompt"] == [{"role": "user", "content": "Read n and print n squared."}]
    assert get_reward("code_tests")(["```python\nprint(int(input()) ** 2)\n```"], tests=data["tests"]) == [1.0]


@pytest.mark.parametrize(
    ("rows", "extra", "match"),
    [
        ([{"text": "x", "answer": "1"}], {}, "needs a test_list column"),
        ([{"body": "x", "test_list": ["assert True"]}], {}, "no problem column"),
        ([{"text": "x", "test_list": ["assert True"]}], {"problem_column": "nope"}, "set data.problem_column"),
    ],
)
def test_clear_errors(tmp_path, rows, extra, match):
    with pytest.raises(DataError, match=match):
        build_dataset({"builder": "code", "path": _write(tmp_path / "bad.jsonl", rows), **extra})
