"""``code_tests`` throughput: sandboxed test runs per second (MBPP-style asserts and stdin/stdout pairs)."""

from __future__ import annotations

import json
import os
import time

SOLUTION = (
    "```python\ndef add(a, b):\n    return a + b\n\n"
    "if __name__ == '__main__':\n    print(add(*map(int, input().split())))\n```"
)


def run(quick: bool = False) -> dict:
    from grpo_trl.rewards import get_reward

    n = 16 if quick else 128
    asserts = json.dumps({"asserts": [f"assert add({i}, {i}) == {2 * i}" for i in range(3)]})
    io = json.dumps({"io": [{"input": f"{i} {i}", "output": str(2 * i)} for i in range(3)]})
    cores = len(os.sched_getaffinity(0))
    reward = get_reward("code_tests", max_workers=cores)
    reward([SOLUTION], tests=[asserts])  # first run: the sandbox finds its interpreter
    result = {"cores": cores}
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
    return result


if __name__ == "__main__":
    print("\n".join(run()["rows"]))
