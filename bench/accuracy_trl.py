"""``accuracy`` beside TRL's ``accuracy_reward`` on the same completions, with identical scores, at the call shapes a
GRPO run makes: batches of 8 to 256 fresh completions per call (a new seed each call), and the cold first call.

MATH- and GSM8K-style completions that end in ``\\boxed{}`` (where the two agree by design: ``require_answer_tag:
false``), golds written as worked solutions like open-r1's.
"""

from __future__ import annotations

import random
import time

# (gold, equivalent answers, wrong answers): MATH-style LaTeX and GSM8K-style integers
ANSWERS = [
    ("2\\sqrt{3}", ["2\\sqrt{3}", "\\sqrt{12}"], ["2", "3\\sqrt{2}"]),
    ("\\frac{\\sqrt{3}}{2}", ["\\frac{\\sqrt{3}}{2}", "\\frac{1}{2}\\sqrt{3}"], ["\\frac{1}{2}", "\\sqrt{3}"]),
    ("3\\pi", ["3\\pi", "\\pi \\cdot 3"], ["3", "\\frac{3}{\\pi}"]),
    ("(-\\infty, 3]", ["(-\\infty, 3]", "(-\\infty,3]"], ["(-\\infty, 3)", "[3, \\infty)"]),
    ("\\frac{7}{12}", ["\\frac{7}{12}", "\\dfrac{7}{12}"], ["\\frac{12}{7}", "0.5"]),
    ("x^2 + 2x + 1", ["(x+1)^2", "x^2+2x+1"], ["x^2+1", "(x-1)^2"]),
    ("\\{1, 2, 3\\}", ["\\{3, 2, 1\\}", "\\{1,2,3\\}"], ["\\{1, 2\\}", "\\{0\\}"]),
]


def realistic_math(n: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """``n`` completions, 8 per question: right (in several forms), wrong, or without a boxed answer."""
    rng = random.Random(seed)
    texts, golds = [], []
    for _ in range(max(1, n // 8)):
        if rng.random() < 0.5:
            gold, right, wrong = rng.choice(ANSWERS)
        else:
            value = rng.randint(2, 5000)
            gold, right = str(value), [str(value), f"{value}.0", f"{value:,}"]
            wrong = [str(rng.randint(2, 5000)) for _ in range(8)]  # wrong answers rarely agree with each other
        for _ in range(8):
            steps = " ".join(
                f"Step {i}: we have ${rng.randint(1, 99)} + {rng.randint(1, 99)}$ so far."
                for i in range(rng.randint(3, 30))
            )
            r = rng.random()
            if r < 0.5:
                final = f"The answer is $\\boxed{{{rng.choice(right)}}}$."
            elif r < 0.9:
                final = f"The answer is $\\boxed{{{rng.choice(wrong)}}}$."
            else:
                final = "I could not finish."
            texts.append(f"{steps}\n{final}")
            golds.append(f"Working through it, the result is $\\boxed{{{gold}}}$.")
    return texts, golds


SHAPES = (8, 16, 64, 256)
COLD = """
import json, logging, sys, time
logging.getLogger("math_verify").setLevel(logging.ERROR)
from bench.accuracy_trl import realistic_math
from trl.rewards import accuracy_reward
from grpo_trl.rewards.math import Accuracy
texts, golds = realistic_math(64, seed=10_000)
reward = Accuracy(require_answer_tag=False)
time.sleep(float(sys.argv[1]))  # what a trainer does between building its rewards and its first step
start = time.perf_counter()
ours = reward(texts, solution=golds)
ours_s = time.perf_counter() - start
start = time.perf_counter()
theirs = accuracy_reward([[{"role": "assistant", "content": t}] for t in texts], golds)
print(json.dumps({"ours_s": ours_s, "trl_s": time.perf_counter() - start, "same": ours == theirs}))
"""


def cold(delay: float = 0.0) -> dict:
    """The first call of a fresh process (64 completions), ``delay`` seconds after the reward is built (it starts its
    worker processes then; a trainer loads its model and generates in between)."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    command = [sys.executable, "-c", COLD, str(delay)]
    out = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(quick: bool = False) -> dict:
    import logging

    from trl.rewards import accuracy_reward

    from grpo_trl.rewards.math import Accuracy

    logging.getLogger("math_verify").setLevel(logging.ERROR)
    first = cold()
    later = first if quick else cold(5.0)
    assert first["same"] and later["same"], "accuracy and TRL's accuracy_reward differ on the cold call"
    reward = Accuracy(require_answer_tag=False)
    reward(*realistic_math(64, seed=-1)[:1], solution=realistic_math(64, seed=-1)[1])  # workers started (warm)
    seed, shapes = 0, {}
    for size in SHAPES:
        ours_s = trl_s = 0.0
        calls = max(2, (128 if quick else 1024) // size)
        for _ in range(calls):
            seed += 1
            texts, golds = realistic_math(size, seed)
            messages = [[{"role": "assistant", "content": t}] for t in texts]
            start = time.perf_counter()
            ours = reward(messages, solution=golds)
            ours_s += time.perf_counter() - start
            start = time.perf_counter()
            theirs = accuracy_reward(messages, golds)
            trl_s += time.perf_counter() - start
            differ = [i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b]
            assert not differ, f"accuracy and TRL's accuracy_reward differ: {texts[differ[0]][-80:]!r}"
        shapes[size] = {
            "calls": calls,
            "ours_ms": ours_s / calls * 1e3,
            "trl_ms": trl_s / calls * 1e3,
            "ratio": trl_s / ours_s,
        }
    result = {"shapes": shapes, "cold": first, "cold_after_5s": later, "cold_ratio": first["trl_s"] / first["ours_s"]}
    cells = " / ".join(f"{v['ratio']:.1f}x" for v in shapes.values())
    ms = "; ".join(f"{k}: {v['ours_ms']:.0f} vs {v['trl_ms']:.0f} ms" for k, v in shapes.items())
    result["rows"] = [
        f"| `accuracy` vs TRL's `accuracy_reward`, fresh MATH/GSM8K-style boxed completions per call, batches of "
        f"{' / '.join(map(str, SHAPES))}, identical scores | **{cells}** ({ms} per call); cold first call (64): "
        f"{first['ours_s']:.2f} vs {first['trl_s']:.2f} s right after construction, {later['ours_s']:.2f} vs "
        f"{later['trl_s']:.2f} s 5 s after it (a trainer's model load) |"
    ]
    return result


if __name__ == "__main__":
    print("\n".join(run()["rows"]))
