"""The rewards benchmark of ``make bench`` (bench/run.py): completions scored per second for every built-in reward on
realistic completions, and ``countdown`` / ``accuracy`` against the naive references in ``tests/naive_rewards.py``
(scores must be equal). ``realistic_*`` also feed bench/isolation.py.
"""

from __future__ import annotations

import random


def realistic_countdown(n: int, seed: int = 0) -> tuple[list[str], list, list]:
    from grpo_trl.data.countdown import generate_problems

    rng = random.Random(seed)
    problems = generate_problems(n, seed=seed)
    texts = []
    for p in problems:
        kind = rng.random()
        eq = p["reference_equation"]
        if kind < 0.3:
            body = f"{eq} = {p['target']}"  # right
        elif kind < 0.6:
            body = f"{' + '.join(map(str, p['nums']))} = {p['target']}"  # wrong value
        elif kind < 0.8:
            body = f"{p['nums'][0]} * {p['nums'][1]} = {p['target']}"  # numbers missing
        else:
            body = "I cannot find it"
        think = " ".join(f"({a} + {b}) = {a + b}" for a, b in zip(p["nums"], p["nums"][1:]))
        texts.append(f"<think>\nLet me try: {think}\n</think>\n<answer>{body}</answer>")
    return texts, [p["nums"] for p in problems], [p["target"] for p in problems]


def realistic_gsm8k(n: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """GSM8K-style numeric answers: G=8 completions per question, mostly integers, some "$1,234" / "18.0" / words."""
    rng = random.Random(seed)
    texts, golds = [], []
    for _ in range(n // 8):
        gold = rng.randint(1, 5000)
        for _ in range(8):
            r = rng.random()
            if r < 0.45:
                ans = str(gold)
            elif r < 0.75:
                ans = str(gold + rng.randint(-20, 20))
            elif r < 0.85:
                ans = f"${gold:,}"
            elif r < 0.92:
                ans = f"{gold}.0"
            else:
                ans = f"{gold} apples"
            texts.append(
                f"<reasoning>\nStep 1: add the numbers.\nStep 2: {gold} is the total.\n</reasoning>\n"
                f"<answer>{ans}</answer>"
            )
            golds.append(str(gold))
    return texts, golds


def bench_rewards(n: int, repeats: int) -> dict:
    """Completions scored per second for each built-in reward, and countdown / accuracy against naive references."""
    from bench.timing import median_time
    from grpo_trl.rewards import get_reward
    from tests.naive_rewards import naive_accuracy, naive_countdown

    cd_texts, nums, targets = realistic_countdown(n)
    gsm_texts, golds = realistic_gsm8k(n)
    columns = {"nums": nums, "target": targets}
    out: dict = {"completions": n, "per_reward": {}}
    args = {"cosine": {"max_len": 256}, "soft_overlong": {"max_completion_len": 256, "soft_punish_cache": 64}}
    for name in [
        "countdown",
        "think_format",
        "tag_count",
        "reasoning_steps",
        "xml_format",
        "gsm8k",
        "accuracy",
        "cosine",
        "length",
        "repetition_penalty",
        "soft_overlong",
    ]:
        texts, cols = (cd_texts, columns) if name in ("countdown",) else (gsm_texts, {"solution": golds})

        reward = get_reward(name, **args.get(name, {}))  # one instance, as in training
        verifier = getattr(reward.func, "verifier", None)
        if verifier is not None:
            reward(
                ["<answer>x+1</answer>"], solution=["x+1"]
            )  # start math-verify's process, as a run's first step does

        def score(reward=reward, verifier=verifier, texts=texts, cols=cols):
            if verifier is not None:
                verifier.clear_cache()  # no cached scores across repeats
            reward(texts, **cols)

        seconds = median_time(score, repeats)
        out["per_reward"][name] = {"completions_per_s": n / seconds}

    ours_cd = get_reward("countdown")(cd_texts, **columns)
    assert ours_cd == naive_countdown(cd_texts, **columns), "countdown scores differ from the naive reference"
    naive_cd_s = median_time(lambda: naive_countdown(cd_texts, **columns), repeats)
    ours_cd_s = median_time(lambda: get_reward("countdown")(cd_texts, **columns), repeats)

    acc = get_reward("accuracy")
    assert acc(gsm_texts, solution=golds) == naive_accuracy(gsm_texts, golds), "accuracy scores differ from naive"

    def ours_acc():
        acc.func.verifier.clear_cache()
        acc(gsm_texts, solution=golds)

    naive_acc_s = median_time(lambda: naive_accuracy(gsm_texts, golds), max(1, repeats // 2))
    ours_acc_s = median_time(ours_acc, repeats)
    out["countdown_vs_naive"] = {
        "ours_per_s": n / ours_cd_s,
        "naive_per_s": n / naive_cd_s,
        "ratio": naive_cd_s / ours_cd_s,
    }
    out["accuracy_vs_naive"] = {
        "ours_per_s": n / ours_acc_s,
        "naive_per_s": n / naive_acc_s,
        "ratio": naive_acc_s / ours_acc_s,
    }
    return out


def table_rows(rw: dict) -> list[str]:
    """The markdown rows of ``bench_rewards``'s result."""
    rows = [
        f"| reward `{name}` ({rw['completions']} completions) | {v['completions_per_s']:,.0f} /s |"
        for name, v in rw["per_reward"].items()
    ]
    for key in ("countdown_vs_naive", "accuracy_vs_naive"):
        v = rw[key]
        rows.append(
            f"| `{key.split('_')[0]}` vs naive reference (same scores) | {v['ratio']:.1f}x "
            f"({v['ours_per_s']:,.0f} vs {v['naive_per_s']:,.0f} /s) |"
        )
    return rows
