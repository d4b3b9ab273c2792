"""``grpo-trl train`` (and ``python -m grpo_trl.train``): train from the parsed arguments, then the summary; Ctrl-C
names the last checkpoint and the command that resumes from it."""

from __future__ import annotations

import argparse
import logging
import shlex
import sys
from typing import Any


def print_summary(result: Any) -> None:
    """What ``grpo-trl train`` prints at the end: steps, the reward trend, rows scored None, alerts."""
    from grpo_trl.report.page import none_shares, trend_text

    print(f"\ngrpo-trl: trained {result.global_step} steps; results in {result.output_dir}/")
    if trend := trend_text(result.log_history):  # the window really averaged, as report.html names it
        print(f"grpo-trl: {trend}")
    if shares := none_shares(result.log_history):
        listed = ", ".join(f"{name} {share:.1%}" for name, share in shares.items())
        print(f"grpo-trl: rows scored None (skipped by TRL) per reward: {listed}")
    for name, cause in getattr(result, "none_causes", {}).items():  # the why, not only the share
        print(f"grpo-trl: reward {name!r} scored None on most rows; first cause: {cause}")
    for alert in result.alerts:
        print(f"grpo-trl: ALERT ({alert['kind']}) at step {alert['step']}: {alert['message']}")
    print(f"grpo-trl: plots and samples: grpo-trl report {result.output_dir}")


def run_cli(args: argparse.Namespace) -> int:
    """``grpo-trl train``; Ctrl-C names the last checkpoint and the command that resumes."""
    logging.getLogger("grpo_trl").setLevel(logging.INFO)  # our progress notes (dataset size, resuming from...)
    from grpo_trl.cli.threads import set_cpu_threads, wait_policy

    busy = wait_policy()  # before torch loads (the imports below load it)
    from grpo_trl.check import load_recipe
    from grpo_trl.rewards.stray_threads import exit_if_stray_threads
    from grpo_trl.run.resume import checkpoints
    from grpo_trl.run.session import is_main_process
    from grpo_trl.train import run

    recipe = None
    try:
        recipe = load_recipe(args.recipe, args.overrides)
        tuner = set_cpu_threads(recipe.model, gpu_allowed=not recipe.trainer.get("use_cpu"), busy=busy)
        if tuner and is_main_process():
            print(tuner.line)
        tuners = [tuner] if tuner else None  # times thread counts during training, keeps the fastest
        kwargs = {"resume": args.resume, "overwrite": args.overwrite, "verbose": args.verbose}
        result = run(recipe, **kwargs, extra_callbacks=tuners)
    except KeyboardInterrupt:
        sets = "".join(f" --set {shlex.quote(o)}" for o in args.overrides)
        line = "interrupted"
        if recipe is not None and (saved := checkpoints(recipe.to_grpo_config().output_dir)):
            line += f"; last checkpoint: {saved[0]}; continue with: grpo-trl train {args.recipe}{sets} --resume"
        elif recipe is not None:
            line += " before the first checkpoint was saved: nothing to resume (trainer.save_steps sets when)"
        print(line, file=sys.stderr)
        return 130
    if is_main_process():  # RANK was read (and checked) by the run
        print_summary(result)
    exit_if_stray_threads(0)  # a reward's non-daemon thread must not keep the process alive after saving
    return 0
