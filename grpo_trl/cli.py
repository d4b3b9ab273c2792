"""``grpo-trl``: check, train, rewards, data, eval, filter, report, serve. Heavy libraries are imported inside
commands, so ``grpo-trl --help`` answers at once.

Example::

    grpo-trl check recipes/demo/tiny-cpu.yaml
    grpo-trl train recipes/demo/tiny-cpu.yaml --set trainer.max_steps=50
    grpo-trl report outputs/tiny-cpu
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import traceback
import typing
import warnings
from typing import TYPE_CHECKING

from grpo_trl.errors import GrpoTrlError, format_error_lines
from grpo_trl.eval.filter import add_filter_arguments
from grpo_trl.eval.run import add_eval_arguments

if TYPE_CHECKING:
    from grpo_trl.train import TrainResult

BUG_EXIT = 70  # EX_SOFTWARE: an exception grpo-trl did not expect, i.e. a bug


class _Parser(argparse.ArgumentParser):
    """argparse with grpo-trl's error format: ``error: <command line>: <what> (<fix>)`` and exit 1."""

    def error(self, message: str) -> typing.NoReturn:
        if len(message) > 300:  # a 4,400-digit --n is quoted back in full by argparse
            message = f"{message[:200]}... ({len(message)} characters)"
        print(f"error: command line: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(1)


def memory_size(text: str) -> float:
    """An argparse type: ``80GiB``, ``24GB``... in bytes."""
    from grpo_trl.check.memory import parse_size

    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def positive_int(text: str) -> int:
    """An argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def cmd_check(args: argparse.Namespace) -> int:
    """Validate a recipe and print the plan."""
    from datasets.utils.logging import disable_progress_bar

    from grpo_trl.data.sources import without_cache

    disable_progress_bar()  # check reads small local files at most: keep its output to the verdict
    with without_cache():  # check writes nothing: local data is read into memory, not into the datasets cache
        return _check(args)


def _check(args: argparse.Namespace) -> int:
    from grpo_trl.check import load_recipe
    from grpo_trl.check.plan import format_plan, make_plan
    from grpo_trl.check.validate import validate
    from grpo_trl.recipe import RecipeError

    recipe = load_recipe(args.recipe, args.overrides, validate=False)
    problems = validate(recipe, world_size=args.world_size)
    if problems:
        raise RecipeError(problems)
    plan = make_plan(recipe, world_size=args.world_size)
    print(f"recipe {args.recipe}: OK")
    if args.show_config:
        print(recipe.to_yaml())
    for line in format_plan(recipe, plan, world_size_given=bool(args.world_size)):
        print(line)
    from grpo_trl.check.memory import check_lines  # expected peak memory per GPU (issue 15 part 3)

    for line in check_lines(recipe, plan.config, plan.world_size, args.gpu_memory):
        print(line, file=sys.stderr if line.startswith("warning:") else sys.stdout)
    from grpo_trl.check.extras import (
        describe_extras,  # tools, environment, QLoRA: a line each, warnings for this machine
    )

    for line in describe_extras(recipe):
        print(line, file=sys.stderr if line.startswith("warning:") else sys.stdout)
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    """Write the recipe JSON Schema (editors: ``# yaml-language-server: $schema=PATH`` on a recipe's first line)."""
    from grpo_trl.recipe.jsonschema import write_schema

    text = write_schema(args.output)
    if args.output:
        print(
            f"schema written to {args.output}; first line of a recipe: # yaml-language-server: $schema={args.output}"
        )
    else:
        print(text, end="")
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    return run_cli(args)


def print_summary(result: TrainResult) -> None:
    """What ``grpo-trl train`` prints at the end: steps, the reward trend, rows scored None, alerts."""
    from grpo_trl.report.page import none_shares, trend_label

    trend = result.reward_trend()
    print(f"\ngrpo-trl: trained {result.global_step} steps; results in {result.output_dir}/")
    if trend:  # the window really averaged (fewer than 20 on a short run), as report.html names it
        print(f"grpo-trl: reward mean, {trend_label(result.log_history)}: {trend[0]:.3f} -> {trend[1]:.3f}")

    shares = none_shares(result.log_history)
    if shares:
        listed = ", ".join(f"{name} {share:.1%}" for name, share in shares.items())
        print(f"grpo-trl: rows scored None (skipped by TRL) per reward: {listed}")
    for alert in result.alerts:
        print(f"grpo-trl: ALERT ({alert['kind']}) at step {alert['step']}: {alert['message']}")
    print(f"grpo-trl: plots and samples: grpo-trl report {result.output_dir}")


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
    mode = parser.add_mutually_exclusive_group()  # both at once: one would be silently ignored
    mode.add_argument("--resume", action="store_true", help="continue from the last checkpoint in output_dir")
    mode.add_argument(
        "--overwrite",
        action="store_true",
        help="start from step 0, removing what grpo-trl wrote in output_dir (nothing else)",
    )
    parser.add_argument("--verbose", action="store_true", help="print TRL's whole metrics dict at every log step")
    return parser


def run_cli(args: argparse.Namespace) -> int:
    """Train from parsed arguments (``grpo-trl train`` and ``python -m grpo_trl.train``): errors are one line each."""
    warnings.filterwarnings("ignore", category=FutureWarning)  # deprecation chatter from transformers/TRL
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("grpo_trl").setLevel(logging.INFO)  # our progress notes (dataset size, resuming from...)
    from grpo_trl.check import load_recipe
    from grpo_trl.run.session import is_main_process
    from grpo_trl.train import run

    try:
        recipe = load_recipe(args.recipe, args.overrides)
        result = run(recipe, resume=args.resume, overwrite=args.overwrite, verbose=args.verbose)
    except GrpoTrlError as exc:
        for line in format_error_lines(exc, file=args.recipe):
            print(line, file=sys.stderr)
        return 1
    if is_main_process():  # RANK was read (and checked) by the run
        print_summary(result)
    from grpo_trl.rewards.stray_threads import exit_if_stray_threads

    exit_if_stray_threads(0)  # a reward's non-daemon thread must not keep the process alive after saving
    return 0


def train_main(argv: list[str] | None = None) -> int:
    """``python -m grpo_trl.train`` (``accelerate launch -m grpo_trl.train RECIPE``): the ``train`` command alone."""
    parser = argparse.ArgumentParser(prog="grpo-trl train", description="Train a model with GRPO from a YAML recipe.")
    code = run_cli(add_train_arguments(parser).parse_args(argv))
    if argv is None:  # the program (accelerate launch -m grpo_trl.train): nothing left running keeps it alive
        from grpo_trl.rewards.stray_threads import exit_if_stray_threads

        exit_if_stray_threads(code, everything=True)
    return code


def cmd_rewards(args: argparse.Namespace) -> int:
    import inspect

    from grpo_trl.rewards.registry import list_rewards, load_plugin

    for plugin in args.plugins:
        load_plugin(plugin)
    for info in list_rewards():
        params = ", ".join(k if v is inspect.Parameter.empty else f"{k}={v!r}" for k, v in info.params.items())
        print(f"{info.name:20s} {info.description}")
        if params:
            print(f"{'':20s} args: {params}")
    return 0


def cmd_data(args: argparse.Namespace) -> int:
    from grpo_trl.check import load_recipe
    from grpo_trl.data import build_dataset
    from grpo_trl.data.render import recipe_rendering
    from grpo_trl.models.load import load_tokenizer, resolve_model

    recipe = load_recipe(args.recipe, args.overrides)
    model_path = resolve_model(recipe.model)  # builtin:tiny: a cache, not the output_dir
    tokenizer = load_tokenizer(recipe.model, model_path, recipe.file, recipe.base_dir)
    rendering = recipe_rendering(recipe, tokenizer)  # the prompt as GRPOTrainer renders it, tools included
    result = build_dataset(recipe.dataset, tokenizer=tokenizer, base_dir=recipe.base_dir, rendering=rendering)
    print(f"dataset: {result.summary()}")
    print(f"columns: {', '.join(result.train.column_names)}")
    for i in range(min(args.n, len(result.train))):
        row = result.train[i]
        prompt = row["prompt"]  # a plain string (TRL's standard format) reaches the model as it is
        text = (
            prompt
            if isinstance(prompt, str)
            else tokenizer.apply_chat_template(
                prompt, tokenize=False, add_generation_prompt=True, **rendering.kwargs_for(row.get("environment"))
            )
        )
        extra = {k: v for k, v in row.items() if k != "prompt"}
        print(
            f"\n--- prompt {i} as the model sees it ---\n{text}\n"
            f"--- reward columns: {json.dumps(extra, default=str)[:300]}"
        )
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from grpo_trl.check import load_recipe
    from grpo_trl.eval.run import eval_kwargs, evaluate

    recipe = load_recipe(args.recipe, args.overrides)
    report = evaluate(recipe, **eval_kwargs(args))
    print(json.dumps({k: v for k, v in report.items() if k != "per_prompt"}, indent=2))
    return 0


def cmd_filter(args: argparse.Namespace) -> int:
    from grpo_trl.check import load_recipe
    from grpo_trl.eval.filter import filter_kwargs, filter_prompts

    summary = filter_prompts(load_recipe(args.recipe, args.overrides), **filter_kwargs(args))
    snippet = summary.pop("snippet")
    print(json.dumps(summary, indent=2))
    print(f"keep the prompts that teach: add under data: (or a mixture part)\n  {snippet}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from grpo_trl.report.page import write_report

    try:
        path = write_report(args.output_dir)
    except FileNotFoundError as exc:
        raise GrpoTrlError(str(exc), file=args.output_dir) from None
    print(f"report written to {path}")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from grpo_trl.check import load_recipe
    from grpo_trl.generation import format_command, serve_command, vllm_installed

    recipe = load_recipe(args.recipe, args.overrides)
    argv, env = serve_command(recipe, args.extra)
    print(format_command(argv, env), flush=True)
    if args.dry_run:
        return 0
    if not vllm_installed():
        raise GrpoTrlError(
            "vllm is not installed", key="serve", fix="pip install 'grpo-trl[vllm]' on the machine that serves"
        )
    os.execve(argv[0], argv, {**os.environ, **env})
    return 0  # pragma: no cover


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="grpo-trl", description="GRPO training on TRL from YAML recipes.")
    parser.add_argument("--debug", action="store_true", help="print the full traceback of an unexpected error")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def recipe_cmd(name: str, help_text: str) -> argparse.ArgumentParser:
        return add_recipe_arguments(sub.add_parser(name, help=help_text, description=help_text))

    p = recipe_cmd("check", "validate a recipe (no model is loaded) and print the training plan")
    p.add_argument(
        "--world-size",
        type=positive_int,
        default=None,
        help="training processes to plan for (default: launch.num_processes or 1)",
    )
    p.add_argument("--show-config", action="store_true", help="print the resolved recipe too")
    p.add_argument(
        "--gpu-memory", type=memory_size, default=None, help="GPU memory to plan for, e.g. 80GiB (default: detected)"
    )
    p.set_defaults(func=cmd_check)

    help_text = "train with GRPO (also: accelerate launch -m grpo_trl.train RECIPE)"
    p = add_train_arguments(sub.add_parser("train", help=help_text, description=help_text))
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("rewards", help="list the registered rewards and their arguments")
    p.add_argument("--plugin", dest="plugins", action="append", default=[], help="also load this reward file")
    p.set_defaults(func=cmd_rewards)

    p = recipe_cmd("data", "build the recipe's dataset and print prompts exactly as the model sees them")
    p.add_argument("-n", type=positive_int, default=2, help="prompts to show")
    p.set_defaults(func=cmd_data)

    p = recipe_cmd("eval", "generate n completions per prompt, score them with the recipe's rewards, report pass@k")
    add_eval_arguments(p)
    p.add_argument("--output-dir", default=None, help="where eval.json goes (default: the model folder)")
    p.set_defaults(func=cmd_eval)

    p = recipe_cmd("filter", "measure each training prompt's pass rate, for the data.pass_rate band")
    add_filter_arguments(p)
    p.set_defaults(func=cmd_filter)

    p = sub.add_parser("schema", help="write the recipe JSON Schema (editor completion and checking)")
    p.add_argument("-o", "--output", default=None, help="file to write (default: print it)")
    p.set_defaults(func=cmd_schema)

    p = sub.add_parser("report", help="plots + report.html from a training output_dir")
    p.add_argument("output_dir")
    p.set_defaults(func=cmd_report)

    p = recipe_cmd("serve", "start TRL's vLLM server for the recipe's model (server mode); prints the command")
    p.add_argument("--dry-run", action="store_true", help="print the command and exit")
    p.epilog = "Arguments after -- go to vllm serve as they are."
    p.set_defaults(func=cmd_serve)

    from grpo_trl.importer.command import HELP, add_arguments

    add_arguments(sub.add_parser("import", help=HELP, description=HELP))
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run a command. Expected failures: ``error:`` lines and exit 1. Anything else is a bug: one line, exit 70.

    Run as the program (``argv`` None), it ends even when user code left a non-daemon thread or process running:
    ``grace`` seconds for them, then a warning and the exit (``grpo_trl.rewards.stray_threads``).
    """
    if argv is None:  # from here on Ctrl-C is KeyboardInterrupt, answered below ("interrupted", 130)
        import signal

        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        code = _main(list(sys.argv[1:] if argv is None else argv))
    except KeyboardInterrupt:  # while the parser is built (subcommand modules import)
        print("interrupted", file=sys.stderr)
        code = 130
    if argv is None:
        from grpo_trl.rewards.stray_threads import exit_if_stray_threads

        exit_if_stray_threads(code, everything=True)
    return code


def _main(argv: list[str]) -> int:
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    debug = "--debug" in argv
    argv = [a for a in argv if a != "--debug"]
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error already printed (1)
        return exc.code if isinstance(exc.code, int) else 1
    args.extra = extra
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    warnings.filterwarnings("ignore", category=FutureWarning)  # deprecation chatter from transformers/TRL
    try:
        return args.func(args)
    except GrpoTrlError as exc:
        for line in format_error_lines(exc, file=getattr(args, "recipe", "") or ""):
            print(line, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - a bug: say so in one line, the traceback only when asked
        if debug:
            traceback.print_exc()
        print(
            f"grpo-trl: internal error ({type(exc).__name__}: {str(exc)[:200]}). This is a bug in grpo-trl: please "
            "report it with the command and the recipe" + ("" if debug else " (add --debug for the traceback)"),
            file=sys.stderr,
        )
        return BUG_EXIT


if __name__ == "__main__":
    raise SystemExit(main())
