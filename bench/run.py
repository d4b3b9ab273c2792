"""``make bench``: the project's figures, each a ratio measured side by side in one run (medians of repeats).

Writes ``bench/results.json`` and prints a markdown table. ``--quick`` runs everything at a small size (used by
``make test`` so the benchmark cannot rot); the README quotes a full run.

- wrapper overhead: the demo recipe through ``grpo_trl.train.run`` vs the same model, data, rewards and GRPOConfig
  through a plain ``trl.GRPOTrainer``; per-step time (TRL's ``step_time``) ratio;
- start-up: ``grpo-trl --help`` and ``grpo-trl check`` vs ``python -c "import trl"`` wall time;
- rewards: completions scored per second for every built-in on 4,096 realistic completions, and the ratio of
  ``countdown`` and ``accuracy`` against the naive references in ``tests/naive_rewards.py`` (scores must be equal);
- GPU (only with CUDA): step time, generation tokens/s, peak memory for a Qwen2.5-0.5B-shaped random model.
"""

from __future__ import annotations

import argparse
import importlib
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Benchmarks in their own bench/<name>.py, each with run(quick: bool) -> {..., "rows": [markdown table rows]}.
EXTRA = ("isolation", "accuracy_trl", "code_tests", "eval_backends", "dynamic_sampling", "data_filter")
sys.path.insert(0, str(ROOT))


def _median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


# ------------------------------------------------------------------------------------------------ rewards
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

        seconds = _median_time(score, repeats)
        out["per_reward"][name] = {"completions_per_s": n / seconds}

    ours_cd = get_reward("countdown")(cd_texts, **columns)
    assert ours_cd == naive_countdown(cd_texts, **columns), "countdown scores differ from the naive reference"
    naive_cd_s = _median_time(lambda: naive_countdown(cd_texts, **columns), repeats)
    ours_cd_s = _median_time(lambda: get_reward("countdown")(cd_texts, **columns), repeats)

    acc = get_reward("accuracy")
    assert acc(gsm_texts, solution=golds) == naive_accuracy(gsm_texts, golds), "accuracy scores differ from naive"

    def ours_acc():
        acc.func.verifier.clear_cache()
        acc(gsm_texts, solution=golds)

    naive_acc_s = _median_time(lambda: naive_accuracy(gsm_texts, golds), max(1, repeats // 2))
    ours_acc_s = _median_time(ours_acc, repeats)
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


# ------------------------------------------------------------------------------------------------ start-up
def bench_startup(repeats: int) -> dict:
    exe = Path(sys.executable)
    cli = [str(exe), "-m", "grpo_trl.cli"]

    def run(cmd):
        subprocess.run(cmd, cwd=ROOT, capture_output=True, check=True)

    help_s = _median_time(lambda: run([*cli, "--help"]), repeats)
    check_s = _median_time(lambda: run([*cli, "check", "recipes/demo/tiny-cpu.yaml"]), repeats)
    trl_s = _median_time(lambda: run([str(exe), "-c", "import trl"]), repeats)
    grpo_config_s = _median_time(lambda: run([str(exe), "-c", "from trl import GRPOConfig"]), repeats)
    return {
        "help_s": help_s,
        "check_s": check_s,
        "import_trl_s": trl_s,
        "import_grpoconfig_s": grpo_config_s,
        "help_vs_import_trl": help_s / trl_s,
        "check_vs_import_grpoconfig": check_s / grpo_config_s,
    }


# ------------------------------------------------------------------------------------------------ overhead
def bench_overhead(steps: int, repeats: int) -> dict:
    import logging
    import warnings

    from datasets.utils.logging import disable_progress_bar
    from transformers.utils import logging as hf_logging
    from trl import GRPOTrainer

    from grpo_trl.data import build_dataset
    from grpo_trl.recipe import load_recipe
    from grpo_trl.train import load_tokenizer, resolve_model, run

    warnings.filterwarnings("ignore")
    disable_progress_bar()
    hf_logging.set_verbosity_error()
    logging.getLogger("grpo_trl").setLevel(logging.ERROR)
    tmp = Path(tempfile.mkdtemp(prefix="grpo-bench-"))
    base = ["trainer.save_strategy=no", f"trainer.max_steps={steps}", "trainer.disable_tqdm=true"]

    def ours(i: int) -> list[float]:
        recipe = load_recipe(ROOT / "recipes/demo/tiny-cpu.yaml", [*base, f"trainer.output_dir={tmp / f'ours{i}'}"])
        result = run(recipe, overwrite=True)
        return [h["step_time"] for h in result.log_history if "step_time" in h]

    def plain(i: int) -> list[float]:
        recipe = load_recipe(ROOT / "recipes/demo/tiny-cpu.yaml", [*base, f"trainer.output_dir={tmp / f'plain{i}'}"])
        config = recipe.to_grpo_config()
        model = resolve_model(recipe, config.output_dir)
        tokenizer = load_tokenizer(recipe, model)
        data = build_dataset(recipe.dataset, tokenizer=tokenizer).train
        funcs, _ = recipe.build_rewards()
        raw = [f.reward for f in funcs]  # the bare reward callables, no safety wrapper, no callbacks
        trainer = GRPOTrainer(
            model=model, reward_funcs=raw, args=config, train_dataset=data, processing_class=tokenizer
        )
        trainer.train()
        return [h["step_time"] for h in trainer.state.log_history if "step_time" in h]

    ours_t, plain_t, ratios = [], [], []
    for i in range(repeats):  # interleaved, order alternating, so drift and warm-up hit both alike
        first, second = (plain, ours) if i % 2 == 0 else (ours, plain)
        a, b = statistics.median(first(i)[2:]), statistics.median(second(i)[2:])
        p_i, o_i = (a, b) if first is plain else (b, a)
        plain_t.append(p_i)
        ours_t.append(o_i)
        ratios.append(o_i / p_i)
    o, p = statistics.median(ours_t), statistics.median(plain_t)
    return {
        "steps": steps,
        "repeats": repeats,
        "ours_step_s": o,
        "plain_step_s": p,
        "ratio": statistics.median(ratios),
        "ratios": ratios,
    }


# ------------------------------------------------------------------------------------------------ GPU
def bench_gpu() -> dict:
    from bench.gpu import run_gpu_bench  # skips itself without CUDA

    return run_gpu_bench()


def table(results: dict) -> str:
    rows = ["| figure | value |", "|---|---|"]
    ov = results.get("overhead")
    if ov:
        rows.append(
            f"| wrapper overhead: per-step time, grpo-trl / plain TRL ({ov['steps']} steps x {ov['repeats']}) | "
            f"{ov['ratio']:.3f} ({ov['ours_step_s'] * 1e3:.0f} ms vs {ov['plain_step_s'] * 1e3:.0f} ms) |"
        )
    st = results.get("startup")
    if st:
        rows.append(f"| `grpo-trl --help` | {st['help_s']:.2f} s ({st['help_vs_import_trl']:.2f}x `import trl`) |")
        rows.append(
            f"| `grpo-trl check recipes/demo/tiny-cpu.yaml` | {st['check_s']:.2f} s "
            f"({st['check_vs_import_grpoconfig']:.2f}x `from trl import GRPOConfig`, "
            f"{st['import_grpoconfig_s']:.2f} s) |"
        )
    rw = results.get("rewards")
    if rw:
        for name, v in rw["per_reward"].items():
            rows.append(f"| reward `{name}` ({rw['completions']} completions) | {v['completions_per_s']:,.0f} /s |")
        for key in ("countdown_vs_naive", "accuracy_vs_naive"):
            v = rw[key]
            rows.append(
                f"| `{key.split('_')[0]}` vs naive reference (same scores) | {v['ratio']:.1f}x "
                f"({v['ours_per_s']:,.0f} vs {v['naive_per_s']:,.0f} /s) |"
            )
    for name in EXTRA:  # each in bench/<name>.py: run(quick) -> {..., "rows": [markdown rows]}
        rows += results.get(name, {}).get("rows", [])
    from bench.gpu import table_rows as gpu_rows

    rows += gpu_rows(results.get("gpu", {"skipped": "not run"}))
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (inside make test)")
    parser.add_argument("--only", nargs="*", default=None, help="overhead startup rewards gpu " + " ".join(EXTRA))
    parser.add_argument("--output", default=str(ROOT / "bench" / "results.json"))
    args = parser.parse_args(argv)
    quick = args.quick
    parts = args.only or ["rewards", "startup", "overhead", "gpu", *EXTRA]
    results: dict = {"quick": quick}
    if "rewards" in parts:
        results["rewards"] = bench_rewards(512 if quick else 4096, 2 if quick else 5)
    if "startup" in parts:
        results["startup"] = bench_startup(2 if quick else 5)
    if "overhead" in parts:
        results["overhead"] = bench_overhead(10 if quick else 40, 1 if quick else 4)
    if "gpu" in parts:
        results["gpu"] = bench_gpu()
    for name in EXTRA:
        if name in parts:
            results[name] = importlib.import_module(f"bench.{name}").run(quick)
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(results, indent=2))
    print(table(results))
    print(f"\nresults: {args.output}")
    return results


if __name__ == "__main__":
    main()
