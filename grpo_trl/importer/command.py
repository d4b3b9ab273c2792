"""The ``grpo-trl import`` command: arguments and what it prints.

Example::

    grpo-trl import open-r1-config.yaml -o recipe.yaml     # then: grpo-trl check recipe.yaml
    grpo-trl import trl-config.yaml                        # the recipe on stdout, notes on stderr
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from grpo_trl.check.validate import validate

HELP = "translate a flat TRL (`trl grpo --config`) or open-r1 GRPO config into a grpo-trl recipe"


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
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
    parser.set_defaults(func=run)
    return parser


def run(args: argparse.Namespace) -> int:
    from grpo_trl.importer import import_config
    from grpo_trl.recipe import Recipe, RecipeError

    out = Path(args.output) if args.output else None
    if out is not None and out.exists() and not args.force:
        print(f"error: {out}: -o: exists; choose another path or pass --force to replace it", file=sys.stderr)
        return 1
    if out is not None and out.resolve() == Path(args.config).resolve():
        print(f"error: {out}: -o: is the config being imported; write the recipe elsewhere", file=sys.stderr)
        return 1
    try:
        result = import_config(
            args.config,
            flavour=args.flavour,
            trl_version=args.trl_version,
            out_dir=(out.resolve().parent if out else Path.cwd()),
        )
    except RecipeError as exc:
        for problem in exc.problems:
            print(f"error: {problem}", file=sys.stderr)
        return 1
    for line in result.warnings:
        print(f"warning: {args.config}: {line}", file=sys.stderr)
    for line in result.imported.changed_defaults:
        print(f"note: {args.config}: default changed since TRL {result.imported.baseline}: {line}", file=sys.stderr)
    if out is None:
        sys.stdout.write(result.text)
        return 0
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(result.text)
    except OSError as exc:
        print(f"error: {out}: -o: cannot write ({exc.strerror or exc})", file=sys.stderr)
        return 1
    problems = validate(Recipe(data=result.recipe, path=out))
    print(f"wrote {out} ({len(result.unmapped)} setting(s) not mapped, listed at its top)")
    if problems:
        print(f"`grpo-trl check {out}` will report:", file=sys.stderr)
        for problem in problems:
            print(f"  {problem}", file=sys.stderr)
    else:
        print(f"next: grpo-trl check {out}")
    return 0
