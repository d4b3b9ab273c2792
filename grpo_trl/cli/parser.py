"""Every ``grpo-trl`` subcommand and flag, in one place (the commands themselves are in ``commands.py``)."""

from __future__ import annotations

import argparse
import sys
import typing

from grpo_trl.cli import commands

IMPORT_HELP = "translate a flat TRL (`trl grpo --config`) or open-r1 GRPO config into a grpo-trl recipe"


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


def add_recipe_arguments(parser: argparse.ArgumentParser, optional: bool = False) -> argparse.ArgumentParser:
    """The recipe path and ``--set`` overrides, shared by every command that takes a recipe."""
    parser.add_argument("recipe", nargs="?" if optional else None, help="path to the recipe YAML")
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


def add_eval_arguments(
    p: argparse.ArgumentParser, *, split_help: str = "dataset split (default: the recipe's eval split)"
) -> argparse.ArgumentParser:
    """The generation options ``eval`` and ``filter`` share."""
    from grpo_trl.eval.backends import BACKENDS

    p.add_argument(
        "--backend", default="transformers", choices=BACKENDS, help="how to generate (default: %(default)s)"
    )
    p.add_argument(
        "--model",
        default=None,
        help="model path, checkpoint or LoRA adapter folder (default: the recipe's output_dir); with --backend "
        "endpoint: the served name",
    )
    p.add_argument("--split", default=None, help=split_help)
    p.add_argument("--n", type=int, default=8, help="completions per prompt (default: %(default)s)")
    p.add_argument("--limit", type=int, default=None, help="only the first N prompts")
    p.add_argument("--batch-size", type=int, default=16, help="prompts per generate() call (transformers)")
    p.add_argument("--max-new-tokens", type=int, default=None, help="default: trainer.max_completion_length")
    p.add_argument("--temperature", type=float, default=None, help="default: trainer.temperature; 0 is greedy")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--base-url", default=None, help="endpoint: the API root, e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--api", default="completions", help="endpoint: completions (rendered prompt) or chat")
    p.add_argument("--api-key-env", default=None, help="endpoint: NAME of the environment variable holding the key")
    p.add_argument("--max-concurrency", type=int, default=16, help="endpoint: requests in flight at once")
    p.add_argument("--timeout", type=float, default=120.0, help="endpoint: seconds per attempt")
    p.add_argument("--retries", type=int, default=3, help="endpoint: extra attempts on 429/5xx/timeouts")
    return p


def add_filter_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    add_eval_arguments(p, split_help="dataset split to score (default: the recipe's training data)")
    p.add_argument("--output", default=None, help="the pass-rate file (default: beside the data, else the recipe)")
    return p


def add_import_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("config", help="the TRL / open-r1 YAML config")
    parser.add_argument("-o", "--output", default=None, help="write the recipe here (default: print it)")
    parser.add_argument("--force", action="store_true", help="replace --output if it exists")
    parser.add_argument(
        "--from", dest="flavour", choices=("trl", "open-r1"), default=None, help="config kind (default: detected)"
    )
    parser.add_argument(
        "--trl-version",
        default=None,
        help="the TRL release the config was written for, whose defaults are kept (default: 0.18 for open-r1, "
        "the pin of its recipes; 1.0 for TRL)",
    )
    parser.set_defaults(func=commands.cmd_import)
    return parser


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
    p.set_defaults(func=commands.cmd_check)

    help_text = "train with GRPO (also: accelerate launch -m grpo_trl.train RECIPE)"
    p = add_train_arguments(sub.add_parser("train", help=help_text, description=help_text))
    p.set_defaults(func=commands.cmd_train)

    p = sub.add_parser("rewards", help="list the registered rewards and their arguments")
    p.add_argument("--plugin", dest="plugins", action="append", default=[], help="also load this reward file")
    p.set_defaults(func=commands.cmd_rewards)

    p = recipe_cmd("data", "build the recipe's dataset and print prompts exactly as the model sees them")
    p.add_argument("-n", type=positive_int, default=2, help="prompts to show")
    p.set_defaults(func=commands.cmd_data)

    help_text = (
        "generate n completions per prompt, score them with the recipe's rewards (or --benchmark), report pass@k"
    )
    p = add_recipe_arguments(sub.add_parser("eval", help=help_text, description=help_text), optional=True)
    add_eval_arguments(p)
    p.add_argument("--output-dir", default=None, help="where eval.json goes (default: the model folder)")
    p.add_argument("--benchmark", default=None, help="a standard benchmark instead of the recipe's eval split")
    p.add_argument("--data", default=None, help="--benchmark: a local copy of its data (default: the Hub)")
    p.set_defaults(n=None)  # a benchmark's own n unless given; 8 for a recipe
    p.set_defaults(func=commands.cmd_eval)

    p = recipe_cmd("filter", "measure each training prompt's pass rate, for the data.pass_rate band")
    add_filter_arguments(p)
    p.set_defaults(func=commands.cmd_filter)

    help_text = "merge a LoRA run's adapter into its base model (with the tokenizer) for serving"
    p = sub.add_parser("export", help=help_text, description=help_text)
    p.add_argument("output_dir", help="the LoRA run's output_dir (or one of its checkpoints)")
    p.add_argument("--to", default=None, metavar="DIR", help="a new or empty folder (default: OUTPUT_DIR-merged)")
    p.set_defaults(func=commands.cmd_export)

    p = sub.add_parser("schema", help="write the recipe JSON Schema (editor completion and checking)")
    p.add_argument("-o", "--output", default=None, help="file to write (default: print it)")
    p.set_defaults(func=commands.cmd_schema)

    p = sub.add_parser("report", help="plots + report.html from a training output_dir (more: drawn over it)")
    p.add_argument("output_dir")
    p.add_argument("others", nargs="*", metavar="OTHER_RUN", help="output_dirs of runs to overlay on the same plots")
    p.set_defaults(func=commands.cmd_report)

    p = recipe_cmd("serve", "start TRL's vLLM server for the recipe's model (server mode); prints the command")
    p.add_argument("--dry-run", action="store_true", help="print the command and exit")
    p.epilog = "Arguments after -- go to vllm serve as they are."
    p.set_defaults(func=commands.cmd_serve)

    add_import_arguments(sub.add_parser("import", help=IMPORT_HELP, description=IMPORT_HELP))
    return parser
