"""The training entry point, top to bottom: recipe -> dataset, rewards, GRPOConfig -> ``trl.GRPOTrainer.train()``.

Run it as ``grpo-trl train RECIPE`` or, under accelerate (one process per GPU, any engine accelerate knows)::

    accelerate launch --config_file recipes/accelerate/zero3.yaml \\
        -m grpo_trl.train recipes/gsm8k/qwen2.5-1.5b-instruct.yaml

Example (Python API):
    >>> from grpo_trl import load_recipe, train
    >>> result = train(load_recipe("recipes/demo/tiny-cpu.yaml", ["trainer.max_steps=2"]))  # doctest: +SKIP
    >>> result.output_dir  # doctest: +SKIP
    'outputs/tiny-cpu'
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grpo_trl.recipe import BUILTIN_TINY, Problem, Recipe, RecipeError, load_recipe

logger = logging.getLogger("grpo_trl")

MIN_FREE_MB = int(os.environ.get("GRPO_TRL_MIN_FREE_MB", "200"))


@dataclass
class TrainResult:
    """What ``train`` returns: where everything went and how the reward moved."""

    output_dir: str
    global_step: int
    log_history: list[dict] = field(default_factory=list)
    alerts: list[dict] = field(default_factory=list)

    def reward_trend(self, window: int = 20, key: str = "reward") -> tuple[float, float] | None:
        """Mean of ``key`` over the first and last ``window`` logged steps (``None`` if nothing was logged)."""
        values = [h[key] for h in self.log_history if h.get(key) is not None and "loss" in h]
        if not values:
            return None
        w = min(window, max(1, len(values) // 2))
        return sum(values[:w]) / w, sum(values[-w:]) / w


def check_output_dir(path: str | Path, min_free_mb: int | None = None) -> None:
    """Fail before training when ``path`` cannot be written or its disk has less than ``min_free_mb`` free."""
    min_free_mb = MIN_FREE_MB if min_free_mb is None else min_free_mb
    p = Path(path)
    try:
        p.mkdir(parents=True, exist_ok=True)
        probe = p / ".grpo_trl_write_test"
        probe.write_bytes(b"\0" * 1024)
        probe.unlink()
    except OSError as exc:
        raise RecipeError(
            [
                Problem(
                    "trainer",
                    "output_dir",
                    f"{str(p)!r} is not writable ({exc.strerror or exc}); "
                    "choose another with --set trainer.output_dir=DIR",
                )
            ]
        ) from exc
    free_mb = shutil.disk_usage(p).free / 2**20
    if free_mb < min_free_mb:
        raise RecipeError(
            [
                Problem(
                    "trainer",
                    "output_dir",
                    f"only {free_mb:.0f} MB free on the disk of {str(p)!r}, checkpoints need at least "
                    f"{min_free_mb} MB; "
                    "free space or point trainer.output_dir elsewhere (GRPO_TRL_MIN_FREE_MB sets the threshold)",
                )
            ]
        )


def last_complete_checkpoint(output_dir: str | Path) -> str | None:
    """The newest ``checkpoint-N`` whose ``trainer_state.json`` (written last by the Trainer) is complete.

    A run killed while saving leaves a partial folder; resuming from it would fail, so it is skipped.
    """
    folder = Path(output_dir)
    if not folder.is_dir():
        return None
    found = [p for p in folder.glob("checkpoint-*") if p.is_dir() and p.name.split("-")[-1].isdigit()]
    for path in sorted(found, key=lambda p: int(p.name.split("-")[-1]), reverse=True):
        try:
            json.loads((path / "trainer_state.json").read_text())
        except (OSError, ValueError):
            logger.warning("skipping incomplete checkpoint %s (no readable trainer_state.json)", path)
            continue
        return str(path)
    return None


RUN_LOGS = ("completions.jsonl", "alerts.jsonl", "trainer_state.json")


def clear_previous_run(output_dir: str | Path) -> None:
    """A fresh (not resumed) run: drop the previous run's checkpoints and logs so they cannot mix with the new ones."""
    folder = Path(output_dir)
    for path in folder.glob("checkpoint-*"):
        if path.is_dir():
            shutil.rmtree(path)
    for name in RUN_LOGS:
        (folder / name).unlink(missing_ok=True)


def resolve_model(recipe: Recipe, output_dir: str) -> str:
    """The model path to load: ``builtin:tiny`` is built (once) into ``<output_dir>/tiny-model``."""
    name = recipe.model["name"]
    if name != BUILTIN_TINY:
        return name
    from grpo_trl.testing import build_tiny_model

    path = Path(output_dir) / "tiny-model"
    if not (path / "config.json").exists():
        build_tiny_model(path, **(recipe.model.get("tiny") or {}))
    return str(path)


def load_tokenizer(recipe: Recipe, model_path: str):
    """The model's tokenizer, with ``model.chat_template`` (file or text) applied when given."""
    from transformers import AutoTokenizer

    model = recipe.model
    kwargs = {k: model[k] for k in ("revision", "trust_remote_code") if model.get(k) is not None}
    tokenizer = AutoTokenizer.from_pretrained(model_path, **kwargs)
    template = model.get("chat_template")
    if template:
        path = recipe.base_dir / str(template)
        tokenizer.chat_template = path.read_text() if "{" not in str(template) and path.is_file() else template
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def check_reward_columns(recipe: Recipe, rewards: list, columns: list[str]) -> None:
    """Raise ``RecipeError`` when a reward reads a column the built dataset lacks."""
    problems = recipe.column_problems(rewards, columns)
    if problems:
        raise RecipeError(problems)


def run(
    recipe: Recipe, *, resume: bool = False, overwrite: bool = False, extra_callbacks: list | None = None
) -> TrainResult:
    """Train with the recipe. ``resume``: continue from the last checkpoint in ``output_dir``."""
    from trl import GRPOTrainer

    from grpo_trl.callbacks import Alerts, CompletionSamples, GenerationTimer
    from grpo_trl.data import build_dataset
    from grpo_trl.generation import preflight

    config = recipe.to_grpo_config()
    output_dir = config.output_dir
    check_output_dir(output_dir)
    last = last_complete_checkpoint(output_dir)
    if last and not resume and not overwrite:
        raise RecipeError(
            [
                Problem(
                    recipe.file,
                    "trainer.output_dir",
                    f"{output_dir!r} already holds {Path(last).name}; pass --resume to continue it, --overwrite to "
                    "start again, or --set trainer.output_dir=NEW_DIR",
                )
            ]
        )
    preflight(recipe, config)  # vLLM installed, server reachable: fail in seconds, not after loading the model
    if not resume:
        clear_previous_run(output_dir)

    rewards, _weights = recipe.build_rewards()
    model_path = resolve_model(recipe, output_dir)
    tokenizer = load_tokenizer(recipe, model_path)
    data = build_dataset(recipe.dataset, tokenizer=tokenizer, base_dir=recipe.base_dir)
    check_reward_columns(recipe, rewards, data.train.column_names)
    logger.info("dataset: %s", data.summary())

    trainer = GRPOTrainer(
        model=model_path,
        reward_funcs=rewards,
        args=config,
        train_dataset=data.train,
        eval_dataset=data.eval if config.eval_strategy != "no" else None,
        processing_class=tokenizer,
        peft_config=recipe.lora_config(),
    )
    log_cfg = recipe.logging
    alerts = (
        Alerts(output_dir, patience=int(log_cfg.get("alert_patience", 10))) if log_cfg.get("alerts", True) else None
    )
    callbacks = [
        CompletionSamples(
            trainer, every=log_cfg.get("completions_every", 10), samples=log_cfg.get("completions_samples", 4)
        ),
        GenerationTimer(trainer),
        *([alerts] if alerts else []),
        *(extra_callbacks or []),
    ]
    for cb in callbacks:
        trainer.add_callback(cb)
    if trainer.accelerator.is_main_process:
        (Path(output_dir) / "recipe.yaml").write_text(recipe.to_yaml())

    resume_from = None
    if resume:
        resume_from = last
        if resume_from is None:
            logger.warning("--resume: no checkpoint in %s, starting from step 0", output_dir)
        else:
            logger.info("resuming from %s", resume_from)
    trainer.train(resume_from_checkpoint=resume_from)
    trainer.save_model(output_dir)
    trainer.save_state()
    return TrainResult(
        output_dir, trainer.state.global_step, list(trainer.state.log_history), alerts.fired if alerts else []
    )


def print_summary(result: TrainResult) -> None:
    trend = result.reward_trend()
    print(f"\ngrpo-trl: trained {result.global_step} steps; results in {result.output_dir}/")
    if trend:
        print(f"grpo-trl: reward mean, first vs last 20 logged steps: {trend[0]:.3f} -> {trend[1]:.3f}")
    for alert in result.alerts:
        print(f"grpo-trl: ALERT ({alert['kind']}) at step {alert['step']}: {alert['message']}")
    print(f"grpo-trl: plots and samples: grpo-trl report {result.output_dir}")


def train(recipe: Recipe | str, overrides: list[str] | tuple = (), **kwargs: Any) -> TrainResult:
    """Python API: train from a ``Recipe`` or a recipe path (with ``--set``-style overrides)."""
    if not isinstance(recipe, Recipe):
        recipe = load_recipe(recipe, overrides)
    return run(recipe, **kwargs)


def add_recipe_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The recipe path and ``--set`` overrides, shared by every command that takes a recipe."""
    parser.add_argument("recipe", help="path to the recipe YAML")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a recipe value, e.g. --set trainer.learning_rate=1e-6 (repeatable)",
    )
    return parser


def add_train_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    add_recipe_arguments(parser)
    parser.add_argument("--resume", action="store_true", help="continue from the last checkpoint in output_dir")
    parser.add_argument(
        "--overwrite", action="store_true", help="start from step 0, deleting the checkpoints and logs in output_dir"
    )
    return parser


def run_cli(args: argparse.Namespace) -> int:
    """Train from parsed arguments (``grpo-trl train`` and ``python -m grpo_trl.train``): errors are one line each."""
    warnings.filterwarnings("ignore", category=FutureWarning)  # deprecation chatter from transformers/TRL
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("grpo_trl").setLevel(logging.INFO)  # our progress notes (dataset size, resuming from...)
    from grpo_trl.data.registry import DataError
    from grpo_trl.rewards.registry import RewardError

    try:
        recipe = load_recipe(args.recipe, args.overrides)
        result = run(recipe, resume=args.resume, overwrite=args.overwrite)
    except RecipeError as exc:
        for problem in exc.problems:
            print(f"error: {problem}", file=sys.stderr)
        return 1
    except (DataError, RewardError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if int(os.environ.get("RANK", "0")) == 0:
        print_summary(result)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="grpo-trl train", description="Train a model with GRPO from a YAML recipe.")
    return run_cli(add_train_arguments(parser).parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
