"""What isolating the reward inputs costs, on one realistic TRL batch: each user reward is called with its own copy
(``grpo_trl.rewards.inputs.private``), against the time the built-ins take on the same batch (all of them, and the
demo recipe's three); the built-ins, verified read-only, read the originals. Best of repeats: other processes on the
CPU only ever add time.

The batch is what ``GRPOTrainer._calculate_rewards`` hands each reward: conversational prompts (system + user turn,
the same prompt G=8 times as separate objects), conversational completions, completion ids and the dataset columns.
"""

from __future__ import annotations

import time

BUILTIN_ARGS = {
    "cosine": {"max_len": 256},
    "soft_overlong": {"max_completion_len": 256, "soft_punish_cache": 64},
    "xml_format": {"tags": ["think", "answer"], "per_tag": 0.25},
}
DEMO = ("xml_format", "countdown", "soft_overlong")  # recipes/demo/tiny-cpu.yaml


def trl_batch(n: int) -> dict:
    from bench.rewards import realistic_countdown, realistic_gsm8k
    from grpo_trl.data.options import resolve_system_prompt

    cd_texts, nums, targets = realistic_countdown(n)
    gsm_texts, golds = realistic_gsm8k(n)
    system = resolve_system_prompt("countdown")
    texts = [a if i % 2 else b for i, (a, b) in enumerate(zip(cd_texts, gsm_texts))]
    return {
        "prompts": [
            [{"role": "system", "content": system}, {"role": "user", "content": f"Use {nums[i // 8 * 8]}."}]
            for i in range(n)
        ],
        "completions": [[{"role": "assistant", "content": t}] for t in texts],
        "completion_ids": [[ord(ch) % 1000 for ch in t[:200]] for t in texts],
        "nums": nums,
        "target": targets,
        "solution": golds,
        "trainer_state": object(),
        "log_extra": lambda column, values: None,
        "log_metric": lambda name, value: None,
    }


def bench_isolation(n: int, repeats: int) -> dict:
    from grpo_trl.errors import GrpoTrlError
    from grpo_trl.rewards import SafeReward, get_reward
    from grpo_trl.rewards.inputs import private
    from grpo_trl.rewards.registry import list_rewards

    rewards = {}
    for info in list_rewards():
        try:  # built-ins that need something this benchmark lacks (judge: a server and its args) are left out
            rewards[info.name] = SafeReward(get_reward(info.name, **BUILTIN_ARGS.get(info.name, {})))
        except GrpoTrlError:
            continue
    names = list(rewards)
    for r in rewards.values():  # start math-verify's process, as a run's first step does
        r(["<answer>1</answer>"], solution=["1"], nums=[[1]], target=[1])
    kwargs = trl_batch(n)
    samples: dict[str, list[float]] = {k: [] for k in ["copy", *names]}
    for _ in range(repeats):
        for name, reward in rewards.items():
            verifier = getattr(reward.reward.func, "verifier", None)
            if verifier is not None:
                verifier.clear_cache()  # no cached scores across repeats
            start = time.perf_counter()
            reward(**kwargs)
            samples[name].append(time.perf_counter() - start)
        start = time.perf_counter()
        private(kwargs)
        samples["copy"].append(time.perf_counter() - start)
    best = {k: min(v) for k, v in samples.items()}  # on a shared CPU, interference only adds time

    def user_share(keys) -> float:
        return best["copy"] / sum(best[k] for k in keys)

    return {
        "completions": n,
        "repeats": repeats,
        "copy_us_per_completion": best["copy"] / n * 1e6,
        "reward_us_per_completion": {k: best[k] / n * 1e6 for k in names},
        "user_reward_vs_all_builtins": user_share(names),
        "user_reward_vs_demo_rewards": user_share(DEMO),
    }


def rows(result: dict) -> list[str]:
    r = result
    per = r["reward_us_per_completion"]
    return [
        f"| input isolation for one user reward: its own copy of the TRL batch ({r['completions']} completions, "
        f"{r['copy_us_per_completion']:.2f} µs/completion); the built-ins, tested read-only, read the originals | "
        f"{r['user_reward_vs_all_builtins']:.1%} of all built-ins' reward time; "
        f"{r['user_reward_vs_demo_rewards']:.1%} of the demo's ({', '.join(DEMO)}: "
        f"{sum(per[k] for k in DEMO):.1f} µs/completion) |",
    ]


def run(quick: bool = False) -> dict:
    """The isolation figures for ``bench.run`` (the common ``run(quick)`` entry of a benchmark module)."""
    result = bench_isolation(512 if quick else 4096, 3 if quick else 7)
    return {**result, "rows": rows(result)}
