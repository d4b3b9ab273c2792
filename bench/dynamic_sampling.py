"""Figure: ``data.sampler`` (zero-variance-aware sampling) on the CPU tiny model, with and without, one run each.

The task models data where half the prompts teach nothing: :func:`half_format` scores the R1 tags (``xml_format``,
0.25 per tag) on Countdown prompts with an odd target and gives a constant 0 to the others, so their groups always
have zero variance. Same recipe, seed and number of steps for both runs; reported: TRL's ``frac_reward_zero_std``
averaged over the run, the training reward over the last quarter of the steps, and the format reward the trained
model reaches on unseen learnable prompts (odd targets, ``grpo-trl eval``, 16 prompts x 4).
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


def _recipe(out: Path, steps: int, sampler: bool) -> dict:
    data = {"builder": "countdown", "source": "generate", "size": 8, "system_prompt": "r1", "seed": 1}
    if sampler:
        data["sampler"] = {"zero_variance_weight": 0.1, "cooldown_epochs": 2}
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


def one(tmp: Path, steps: int, sampler: bool) -> dict:
    import yaml

    from grpo_trl.check import load_recipe
    from grpo_trl.eval import evaluate
    from grpo_trl.train import run

    name = "with" if sampler else "without"
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(_recipe(tmp / name, steps, sampler)))
    result = run(load_recipe(path), overwrite=True)
    logs = [h for h in result.log_history if "frac_reward_zero_std" in h]
    tail = logs[-max(1, len(logs) // 4) :]
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
    return {
        "zero_std_share": statistics.mean(h["frac_reward_zero_std"] for h in logs),
        "reward_last_quarter": statistics.mean(h["reward"] for h in tail),
        "format_reward_learnable": report["rewards"]["xml_format"],
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
    tmp = Path(tempfile.mkdtemp(prefix="grpo-bench-sampler-"))
    _odd_prompts(tmp)
    without, with_ = one(tmp, steps, False), one(tmp, steps, True)
    label = f"data.sampler on half zero-variance prompts ({steps} steps, tiny model): without -> with"
    value = (
        f"zero-std groups {without['zero_std_share']:.0%} -> {with_['zero_std_share']:.0%}; "
        f"train reward (last quarter) {without['reward_last_quarter']:.3f} -> {with_['reward_last_quarter']:.3f}; "
        f"format reward learned {without['format_reward_learnable']:.3f} -> {with_['format_reward_learnable']:.3f}"
    )
    return {"steps": steps, "without": without, "with": with_, "rows": [f"| {label} | {value} |"]}
