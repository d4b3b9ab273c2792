"""Every ``grpo-trl`` subcommand and flag, in one place (``commands.py`` runs them); heavy libraries are imported by
the commands only, so ``--help`` answers at once."""

from __future__ import annotations

import argparse
import sys
import typing

from grpo_trl.cli import commands as c
from grpo_trl.cli.train import run_cli


class _Parser(argparse.ArgumentParser):
    """argparse with grpo-trl's error format: ``error: command line: <what> (see ... --help)`` and exit 1."""

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
    if text.strip().isdecimal() and int(text) >= 1:
        return int(text)
    raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")


def _generation(p: argparse.ArgumentParser, split_help: str, n: int | None = 8) -> None:
    """The generation options ``eval`` and ``filter`` share."""
    from grpo_trl.eval.backends import BACKENDS

    p.add_argument(
        "--backend", default="transformers", choices=BACKENDS, help="how to generate (default: %(default)s)"
    )
    p.add_argument("--model", help="model path, checkpoint or LoRA adapter folder (default: the recipe's output_dir); "
                   "with --backend endpoint: the served name")  # fmt: skip
    p.add_argument("--split", help=split_help)
    default = "8; a benchmark: its own" if n is None else "%(default)s"
    p.add_argument("--n", type=int, default=n, help=f"completions per prompt (default: {default})")
    p.add_argument("--limit", type=int, help="only the first N prompts")
    p.add_argument("--batch-size", type=int, default=16, help="prompts per generate() call (transformers)")
    p.add_argument("--max-new-tokens", type=int, help="default: trainer.max_completion_length")
    p.add_argument("--temperature", type=float, help="default: trainer.temperature; 0 is greedy")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--base-url", help="endpoint: the API root, e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--api", default="completions", help="endpoint: completions (rendered prompt) or chat")
    p.add_argument("--api-key-env", help="endpoint: NAME of the environment variable holding the key")
    p.add_argument("--max-concurrency", type=int, default=16, help="endpoint: requests in flight at once")
    p.add_argument("--timeout", type=float, default=120.0, help="endpoint: seconds per attempt")
    p.add_argument("--retries", type=int, default=3, help="endpoint: extra attempts on 429/5xx/timeouts")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="grpo-trl", description="GRPO training on TRL from YAML recipes.")
    parser.add_argument("--debug", action="store_true", help="print the full traceback of an unexpected error")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def command(name: str, func: typing.Callable, help: str, recipe: str | None = "") -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help, description=help)
        p.set_defaults(func=func)
        if recipe is not None:  # "?": optional
            p.add_argument("recipe", nargs=recipe or None, help="path to the recipe YAML")
            what = "override a recipe value, e.g. --set trainer.learning_rate=1e-6 (repeatable)"
            p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE", help=what)
        return p

    p = command("check", c.cmd_check, "validate a recipe (no model is loaded) and print the training plan")
    p.add_argument("--world-size", type=positive_int, help="training processes to plan for (default: "
                   "launch.num_processes or 1)")  # fmt: skip
    p.add_argument("--show-config", action="store_true", help="print the resolved recipe too")
    p.add_argument("--gpu-memory", type=memory_size, help="GPU memory to plan for, e.g. 80GiB (default: detected)")

    p = command("train", run_cli, "train with GRPO (also: accelerate launch -m grpo_trl.train RECIPE)")
    mode = p.add_mutually_exclusive_group()  # both at once: one would be silently ignored
    mode.add_argument("--resume", action="store_true", help="continue from the last checkpoint in output_dir")
    mode.add_argument("--overwrite", action="store_true", help="start from step 0, removing what grpo-trl wrote in "
                      "output_dir (nothing else)")  # fmt: skip
    p.add_argument("--verbose", action="store_true", help="print TRL's whole metrics dict at every log step")

    p = command("rewards", c.cmd_rewards, "list the registered rewards and their arguments", recipe=None)
    p.add_argument("--plugin", dest="plugins", action="append", default=[], help="also load this reward file")

    p = command("data", c.cmd_data, "build the recipe's dataset and print prompts exactly as the model sees them")
    p.add_argument("-n", type=positive_int, default=2, help="prompts to show")

    what = "generate n completions per prompt, score them with the recipe's rewards (or --benchmark), report pass@k"
    p = command("eval", c.cmd_eval, what, recipe="?")
    _generation(p, "dataset split (default: the recipe's eval split)", n=None)  # a benchmark's own n unless given
    p.add_argument("--output-dir", help="where eval.json goes (default: the model folder)")
    p.add_argument("--benchmark", help="a standard benchmark instead of the recipe's eval split")
    p.add_argument("--data", help="--benchmark: a local copy of its data (default: the Hub)")

    p = command("filter", c.cmd_filter, "measure each training prompt's pass rate, for the data.pass_rate band")
    _generation(p, "dataset split to score (default: the recipe's training data)")
    p.add_argument("--output", help="the pass-rate file (default: beside the data, else the recipe)")

    what = "merge a LoRA run's adapter into its base model (with the tokenizer) for serving"
    p = command("export", c.cmd_export, what, recipe=None)
    p.add_argument("output_dir", help="the LoRA run's output_dir (or one of its checkpoints)")
    p.add_argument("--to", metavar="DIR", help="a new or empty folder (default: OUTPUT_DIR-merged)")

    p = command("schema", c.cmd_schema, "write the recipe JSON Schema (editor completion and checking)", recipe=None)
    p.add_argument("-o", "--output", help="file to write (default: print it)")

    what = "plots + report.html from a training output_dir (more: drawn over it)"
    p = command("report", c.cmd_report, what, recipe=None)
    p.add_argument("output_dir")
    p.add_argument("others", nargs="*", metavar="OTHER_RUN", help="output_dirs of runs to overlay on the same plots")

    what = "start TRL's vLLM server for the recipe's model (server mode); prints the command"
    p = command("serve", c.cmd_serve, what)
    p.add_argument("--dry-run", action="store_true", help="print the command and exit")
    p.epilog = "Arguments after -- go to vllm serve as they are."

    what = "translate a flat TRL (`trl grpo --config`) or open-r1 GRPO config into a grpo-trl recipe"
    p = command("import", c.cmd_import, what, recipe=None)
    p.add_argument("config", help="the TRL / open-r1 YAML config")
    p.add_argument("-o", "--output", help="write the recipe here (default: print it)")
    p.add_argument("--force", action="store_true", help="replace --output if it exists")
    p.add_argument("--from", dest="flavour", choices=("trl", "open-r1"), help="config kind (default: detected)")
    p.add_argument("--trl-version", help="the TRL release the config was written for, whose defaults are kept "
                   "(default: 0.18 for open-r1, the pin of its recipes; 1.0 for TRL)")  # fmt: skip
    return parser
