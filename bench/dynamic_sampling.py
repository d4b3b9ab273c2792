"""Figures: ``data.sampler`` (zero-variance-aware sampling) and ``data.dynamic_sampling`` (DAPO refill) on the CPU
tiny model, each with and without, one run each.

The task models data where half the prompts teach nothing: :func:`half_format` scores the R1 tags (``xml_format``,
0.25 per tag) on Countdown prompts with an odd target and gives a constant 0 to the others, so their groups always
have zero variance. Same recipe, seed and number of steps for both runs; reported: TRL's ``frac_reward_zero_std``
averaged over the run, the training reward over the last quarter of the steps, and the format reward the trained
model reaches on unseen learnable prompts (odd targets, ``grpo-trl eval``, 16 prompts x 4).

``data.dynamic_sampling`` gets the same task and a fixed wall-clock budget instead of a fixed number of steps (refill
spends generations, so equal steps would not be equal cost): reported are the share of zero-variance groups in the
optimized batch (TRL's ``frac_reward_zero_std`` without, ``dynamic_sampling/zero_std_kept`` with), completions
generated per optimizer step, the steps the budget allowed, and the format reward on the unseen learnable prompts.
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_FORMAT = None


def half_format(completions: list, target: list, **kwargs) -> list[float]:
    """xml_format's score where the target is odd, a constant 0 (zero variance) where it is even."""
    global _FORMAT
    if _FORMAT is None:
        from grpo_trl.rewards import get_reward

        _FORMAT = get_reward("xml_format", tags=["think", "answer"], per_tag=0.25)
    scores = _FORMAT(completions)
    return [s if t % 2 else 0.0 for s, t in zip(scores, target)]


def _recipe(out: Path, steps: int, sampler: bool, refill: bool = False) -> dict:
    data = {"builder": "countdown", "source": "generate", "size": 8, "system_prompt": "r1", "seed": 1}
    if sampler:
        data["sampler"] = {"zero_variance_weight": 0.1, "cooldown_epochs": 2}
    if refill:
        data["dynamic_sampling"] = {"max_resample": 3}
    return {
        "model": {"name": "builtin:tiny", "dtype": "float32"},
        "data": data,
        "rewards": [{"name": "bench.dynamic_sampling:half_format"}],
        "trainer": {
            "output_dir": str(out),
            "max_steps": steps,
            "learning_rate": 1e-3,
            "num_generations": 8,
            "per_device_train_batch_size": 16,
            "max_completion_length": 24,
            "logging_steps": 1,
            "save_strategy": "no",
            "report_to": "none",
            "disable_tqdm": True,
            "seed": 0,
            "use_cpu": True,
            "bf16": False,
        },
    }


def _format_on_learnable(tmp: Path, name: str, steps: int) -> float:
    """The format reward the model trained as ``name`` reaches on the unseen learnable prompts."""
    import yaml

    from grpo_trl.check import load_recipe
    from grpo_trl.eval import evaluate

    learnable = {
        "builder": "files",
        "path": str(tmp / "odd.jsonl"),
        "columns": ["target"],
        "system_prompt": "r1",
        "eval_size": 16,
    }
    eval_path = tmp / f"{name}-eval.yaml"
    rewards = [{"name": "xml_format", "args": {"tags": ["think", "answer"], "per_tag": 0.25}}]
    eval_path.write_text(yaml.safe_dump({**_recipe(tmp / name, steps, False), "data": learnable, "rewards": rewards}))
    report = evaluate(load_recipe(eval_path), model=str(tmp / name), n=4, output_dir=str(tmp / f"{name}-eval"))
    return report["rewards"]["xml_format"]


def one(tmp: Path, steps: int, sampler: bool) -> dict:
    import yaml

    from grpo_trl.check import load_recipe
    from grpo_trl.train import run

    name = "with" if sampler else "without"
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(_recipe(tmp / name, steps, sampler)))
    result = run(load_recipe(path), overwrite=True)
    logs = [h for h in result.log_history if "frac_reward_zero_std" in h]
    tail = logs[-max(1, len(logs) // 4) :]
    return {
        "zero_std_share": statistics.mean(h["frac_reward_zero_std"] for h in logs),
        "reward_last_quarter": statistics.mean(h["reward"] for h in tail),
        "format_reward_learnable": _format_on_learnable(tmp, name, steps),
    }


def refill_one(tmp: Path, seconds: float, refill: bool) -> dict:
    """Train for ``seconds`` of wall clock (from the first step), with or without ``data.dynamic_sampling``."""
    import time

    import yaml
    from transformers import TrainerCallback

    from grpo_trl.check import load_recipe
    from grpo_trl.train import run

    class Budget(TrainerCallback):
        start = 0.0

        def on_train_begin(self, args, state, control, **kwargs):
            self.start = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            control.should_training_stop = control.should_training_stop or time.perf_counter() - self.start > seconds

    name = "refill" if refill else "no-refill"
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(_recipe(tmp / name, 100_000, False, refill)))
    result = run(load_recipe(path), overwrite=True, extra_callbacks=[Budget()])
    logs = [h for h in result.log_history if "frac_reward_zero_std" in h]
    batch = 16  # per_device_train_batch_size x 1 process: completions TRL generates per step
    kept = "dynamic_sampling/zero_std_kept" if refill else "frac_reward_zero_std"
    generations = [h.get("dynamic_sampling/generations", batch) for h in logs]
    return {
        "steps": len(logs),
        "zero_std_in_batch": statistics.mean(h[kept] for h in logs),
        "generations_per_step": statistics.mean(generations),
        "format_reward_learnable": _format_on_learnable(tmp, name, 1),
    }


def _odd_prompts(tmp: Path) -> None:
    """The learnable prompts (odd targets) as a file, for the evaluation after training."""
    import json

    from grpo_trl.data import build_dataset

    rows = build_dataset({"builder": "countdown", "source": "generate", "size": 64, "system_prompt": "r1", "seed": 2})
    with (tmp / "odd.jsonl").open("w") as fh:
        for row in rows.train:
            if row["target"] % 2:
                fh.write(json.dumps({"question": row["prompt"][-1]["content"], "target": row["target"]}) + "\n")


def run(quick: bool) -> dict:
    steps = 2 if quick else 32  # 8 prompts, 2 a step: an epoch every 4 steps
    seconds = 1.0 if quick else 30.0
    tmp = Path(tempfile.mkdtemp(prefix="grpo-bench-sampler-"))
    _odd_prompts(tmp)
    without, with_ = one(tmp, steps, False), one(tmp, steps, True)
    no_refill, refill = refill_one(tmp, seconds, False), refill_one(tmp, seconds, True)
    label = f"data.sampler on half zero-variance prompts ({steps} steps, tiny model): without -> with"
    value = (
        f"zero-std groups {without['zero_std_share']:.0%} -> {with_['zero_std_share']:.0%}; "
        f"train reward (last quarter) {without['reward_last_quarter']:.3f} -> {with_['reward_last_quarter']:.3f}; "
        f"format reward learned {without['format_reward_learnable']:.3f} -> {with_['format_reward_learnable']:.3f}"
    )
    refill_label = (
        f"data.dynamic_sampling on half zero-variance prompts ({seconds:.0f} s budget, tiny model): without -> with"
    )
    refill_value = (
        f"zero-std groups in the optimized batch {no_refill['zero_std_in_batch']:.0%} -> "
        f"{refill['zero_std_in_batch']:.0%}; completions per step {no_refill['generations_per_step']:.1f} -> "
        f"{refill['generations_per_step']:.1f}; steps in the budget {no_refill['steps']} -> {refill['steps']}; "
        f"format reward learned {no_refill['format_reward_learnable']:.3f} -> {refill['format_reward_learnable']:.3f}"
    )
    return {
        "steps": steps,
        "without": without,
        "with": with_,
        "refill": {"seconds": seconds, "without": no_refill, "with": refill},
        "rows": [f"| {label} | {value} |", f"| {refill_label} | {refill_value} |"],
    }
