"""``accuracy`` beside TRL's own ``accuracy_reward`` on the same completions, in one run, with identical scores.

MATH- and GSM8K-style completions that end in ``\\boxed{}`` (where the two agree by design: ``require_answer_tag:
false``), golds written as worked solutions like open-r1's. TRL verifies in the calling process, one completion after
the other; grpo-trl spreads math-verify over worker processes (reused across calls) and caches parsed golds.
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
    for q in range(max(1, n // 8)):
        if q % 2 == 0:
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


def run(quick: bool = False) -> dict:
    import logging

    from trl.rewards import accuracy_reward

    from bench.timing import median_time
    from grpo_trl.rewards.math import Accuracy
    from grpo_trl.rewards.math_verifier import _POOL, default_workers

    logging.getLogger("math_verify").setLevel(logging.ERROR)
    n, repeats = (128, 1) if quick else (1024, 3)
    texts, golds = realistic_math(n)
    messages = [[{"role": "assistant", "content": t}] for t in texts]
    pooled = Accuracy(require_answer_tag=False)
    single = Accuracy(require_answer_tag=False, workers=1)
    ours = pooled(texts, solution=golds)  # also the warm-up: starts the worker processes, as a run's first step does
    theirs = accuracy_reward(messages, golds)
    differ = [i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b]
    assert not differ, f"accuracy and TRL's accuracy_reward differ on {len(differ)} of {n}: {texts[differ[0]][-80:]!r}"
    assert single(texts, solution=golds) == ours

    def timed(reward):
        def call():
            reward.verifier.clear_cache()  # no cached scores across repeats (workers keep parsed golds)
            reward(texts, solution=golds)

        return call

    trl_s = median_time(lambda: accuracy_reward(messages, golds), repeats)
    pooled_s = median_time(timed(pooled), repeats)
    single_s = median_time(timed(single), repeats)
    # CPU seconds for the same work, independent of how busy the machine is (ours: this process and its workers)
    start = time.process_time()
    accuracy_reward(messages, golds)
    trl_cpu = time.process_time() - start
    start, start_workers = time.process_time(), _POOL.cpu_seconds()
    timed(pooled)()
    ours_cpu = time.process_time() - start + _POOL.cpu_seconds() - start_workers
    result = {
        "completions": n,
        "workers": default_workers(),
        "right": sum(1 for s in ours if s == 1.0),
        "trl_per_s": n / trl_s,
        "ours_per_s": n / pooled_s,
        "ours_one_worker_per_s": n / single_s,
        "ratio": trl_s / pooled_s,
        "ratio_one_worker": trl_s / single_s,
        "trl_cpu_ms_per_completion": trl_cpu / n * 1e3,
        "ours_cpu_ms_per_completion": ours_cpu / n * 1e3,
        "cpu_ratio": trl_cpu / ours_cpu if ours_cpu else None,
        "scaling": single_s / pooled_s,  # workers-fold speed-up of the pool over one worker (linear: = workers)
    }
    result["rows"] = [
        f"| `accuracy` vs TRL's `accuracy_reward`, {n} MATH/GSM8K-style boxed completions, identical scores | "
        f"**{result['ratio']:.1f}x** with {result['workers']} worker processes ({result['ours_per_s']:,.0f} vs "
        f"{result['trl_per_s']:,.0f} /s); {result['ratio_one_worker']:.1f}x with one, so "
        f"{result['workers']} workers are {result['scaling']:.2f}x one (linear: {result['workers']}x); "
        f"CPU per completion "
        f"{result['ours_cpu_ms_per_completion']:.1f} vs {result['trl_cpu_ms_per_completion']:.1f} ms |"
    ]
    return result


if __name__ == "__main__":
    print("\n".join(run()["rows"]))
