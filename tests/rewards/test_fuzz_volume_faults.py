"""At volume: N generated hostile completions through every built-in reward (N = GRPO_TRL_FUZZ_N, 10,000 under
`make faults`, smaller inside `make test`): no exceptions, no result outside the documented range, time reported."""

from __future__ import annotations

import os
import random
import time

import pytest

from grpo_trl.rewards import get_reward

pytestmark = pytest.mark.fault  # a fault probe: `make faults` selects it

N = int(os.environ.get("GRPO_TRL_FUZZ_N", "2000"))

# documented range of each built-in: (low, high, may return None)
RANGES = {
    "countdown": (0.0, 1.0, False),
    "think_format": (0.0, 1.0, False),
    "tag_count": (0.0, 1.0, False),
    "reasoning_steps": (0.0, 1.0, False),
    "gsm8k": (0.0, 2.0, False),
    "xml_format": (0.0, 0.8, False),
    "accuracy": (0.0, 1.0, True),
    "reasoning_accuracy": (0.0, 1.0, True),
    "cosine": (-1.0, 1.0, True),
    "length": (-0.5, 0.5, True),
    "repetition_penalty": (-1.0, 0.0, False),
    "soft_overlong": (-1.0, 0.0, False),
}
ARGS = {
    "cosine": {"max_len": 256, "timeout": 1.0},
    "accuracy": {"timeout": 1.0},
    "reasoning_accuracy": {"timeout": 1.0},
    "length": {"timeout": 1.0},
    "soft_overlong": {"max_completion_len": 256, "soft_punish_cache": 64},
}
FRAGMENTS = [
    "<think>",
    "</think>",
    "<answer>",
    "</answer>",
    "\n",
    "9**9**9**9",
    "__import__('os').system('id')",
    "(((((",
    ")))))",
    "\\boxed{",
    "}",
    "####",
    "1,000",
    "$",
    "٣",
    "①",
    "1/0",
    "-",
    "+",
    "*",
    "/",
    "=",
    "Step 1:",
    "First,",
    "\\frac{1}{0}",
    "x^x^x^x",
    "1e308*1e308",
    "\x00",
    "😀",
    "lambda: 0",
    "eval(",
    "0" * 400,
    "9" * 60,
    " ",
    "\\sqrt{-1}",
    "nan",
    "inf",
    "'''",
    "<answer>\n",
    "\n</answer>",
    "(1+2)*3",
    "58",
    "9",
    "78",
    "44",
]


def hostile_completions(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        parts = rng.choices(FRAGMENTS, k=rng.randint(1, 30))
        if rng.random() < 0.05:
            parts.append("A" * rng.randint(10_000, 200_000))  # long inputs too
        out.append("".join(parts))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(RANGES))
def test_hostile_volume(name, record_property):
    texts = hostile_completions(N)
    reward = get_reward(name, **ARGS.get(name, {}))
    columns = {"solution": ["73"] * N, "nums": [[58, 9, 78, 44]] * N, "target": [73] * N}
    reward(["<answer>x+1</answer>"], **{k: v[:1] for k, v in columns.items()})  # warm-up: starts math-verify
    worst = 0.0
    results = []
    for i, text in enumerate(texts):  # one at a time, so the slowest single completion is measured
        start = time.perf_counter()
        values = reward([text], **{k: v[i : i + 1] for k, v in columns.items()})
        worst = max(worst, time.perf_counter() - start)
        results += values
    low, high, may_none = RANGES[name]
    assert len(results) == N
    for text, v in zip(texts, results):
        if v is None:
            assert may_none, (name, text[:80])
            continue
        assert isinstance(v, float) and low - 1e-9 <= v <= high + 1e-9, (name, v, text[:80])
    # math-verify rewards: the item's timeout, plus what the next completion may wait for the replacement worker's
    # start-up (importing sympy: about a second, several on a shared, busy machine)
    limit = ARGS[name]["timeout"] + 4.0 if "timeout" in ARGS.get(name, {}) else 0.25
    assert worst < limit, f"{name}: slowest completion took {worst:.3f} s"
    record_property("max_seconds_per_completion", worst)
    print(f"\n{name}: {N} hostile completions, 0 exceptions, slowest completion {worst * 1e3:.2f} ms")
