"""``make bench``: the project's figures, each a ratio measured side by side in one run (medians of repeats).

Writes ``bench/results.json`` and prints a markdown table. ``--quick`` runs everything at a small size (used by
``make test`` so the benchmark cannot rot); docs/figures.md quotes a full run.

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
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Benchmarks in their own bench/<name>.py, each with run(quick: bool) -> {..., "rows": [markdown table rows]}.
EXTRA = ("isolation", "accuracy_trl", "code_tests", "eval_backends", "dynamic_sampling", "data_filter", "threads")
sys.path.insert(0, str(ROOT))

from bench.rewards import bench_rewards, realistic_countdown, realistic_gsm8k  # noqa: E402
from bench.rewards import table_rows as reward_rows  # noqa: E402
from bench.timing import median_time  # noqa: E402
from grpo_trl.check.rewards import build_rewards  # noqa: E402


# ------------------------------------------------------------------------------------------------ start-up
def bench_startup(repeats: int) -> dict:
    exe = Path(sys.executable)
    cli = [str(exe), "-m", "grpo_trl.cli"]

    def run(cmd):
        subprocess.run(cmd, cwd=ROOT, capture_output=True, check=True)

    help_s = median_time(lambda: run([*cli, "--help"]), repeats)
    check_s = median_time(lambda: run([*cli, "check", "recipes/demo/tiny-cpu.yaml"]), repeats)
    trl_s = median_time(lambda: run([str(exe), "-c", "import trl"]), repeats)
    grpo_config_s = median_time(lambda: run([str(exe), "-c", "from trl import GRPOConfig"]), repeats)
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

    from grpo_trl.check import load_recipe
    from grpo_trl.data import build_dataset
    from grpo_trl.models.load import load_tokenizer, resolve_model
    from grpo_trl.train import run

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
        model = resolve_model(recipe.model, config.output_dir)
        tokenizer = load_tokenizer(recipe.model, model, recipe.file, recipe.base_dir)
        data = build_dataset(recipe.dataset, tokenizer=tokenizer).train
        funcs, _ = build_rewards(recipe)
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
    if results.get("rewards"):
        rows += reward_rows(results["rewards"])
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
        results["startup"] = bench_startup(1 if quick else 5)  # quick: each command once (the code path)
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


# bench/isolation.py takes its realistic completions from here
__all__ = [
    "bench_gpu",
    "bench_overhead",
    "bench_rewards",
    "bench_startup",
    "main",
    "realistic_countdown",
    "realistic_gsm8k",
    "table",
]

if __name__ == "__main__":
    main()
