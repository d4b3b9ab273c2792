"""What each ``grpo-trl`` subcommand does with its parsed arguments (``parser.py`` declares them). Heavy libraries
are imported inside the commands, so ``grpo-trl --help`` answers at once."""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import shlex
import sys
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grpo_trl.errors import GrpoTrlError, format_error_lines, redact
from grpo_trl.io import writable, write

if TYPE_CHECKING:
    from grpo_trl.train import TrainResult


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
        print(redact(recipe.to_yaml()))  # the one redaction: no password in a URL on the console
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
    for name, cause in getattr(result, "none_causes", {}).items():  # the why, not only the share
        print(f"grpo-trl: reward {name!r} scored None on most rows; first cause: {cause}")
    for alert in result.alerts:
        print(f"grpo-trl: ALERT ({alert['kind']}) at step {alert['step']}: {alert['message']}")
    print(f"grpo-trl: plots and samples: grpo-trl report {result.output_dir}")


def run_cli(args: argparse.Namespace) -> int:
    """Train from parsed arguments (``grpo-trl train`` and ``python -m grpo_trl.train``): errors are one line each."""
    warnings.filterwarnings("ignore", category=FutureWarning)  # deprecation chatter from transformers/TRL
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("grpo_trl").setLevel(logging.INFO)  # our progress notes (dataset size, resuming from...)
    from grpo_trl.cli.threads import cpu_threads, wait_policy

    busy = wait_policy()  # before torch loads (the imports below load it)
    from grpo_trl.check import load_recipe
    from grpo_trl.run.session import is_main_process
    from grpo_trl.train import run

    recipe = None
    try:
        recipe = load_recipe(args.recipe, args.overrides)
        tuner = cpu_threads(recipe, gpu_allowed=not recipe.trainer.get("use_cpu"), busy=busy)
        if tuner and is_main_process():
            print(tuner.line)
        tuners = [tuner] if tuner else None  # times thread counts during training, keeps the fastest
        kwargs = {"resume": args.resume, "overwrite": args.overwrite, "verbose": args.verbose}
        result = run(recipe, **kwargs, extra_callbacks=tuners)
    except GrpoTrlError as exc:
        for line in format_error_lines(exc, file=args.recipe):
            print(line, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(interrupted_line(recipe, args), file=sys.stderr)
        return 130
    if is_main_process():  # RANK was read (and checked) by the run
        print_summary(result)
    from grpo_trl.rewards.stray_threads import exit_if_stray_threads

    exit_if_stray_threads(0)  # a reward's non-daemon thread must not keep the process alive after saving
    return 0


def interrupted_line(recipe: Any, args: argparse.Namespace) -> str:
    """What Ctrl-C during ``train`` prints: the last checkpoint saved and the command that resumes from it."""
    from grpo_trl.run.resume import checkpoints

    if recipe is None:
        return "interrupted"
    saved = checkpoints(recipe.to_grpo_config().output_dir)
    if not saved:
        return "interrupted before the first checkpoint was saved: nothing to resume (trainer.save_steps sets when)"
    sets = "".join(f" --set {shlex.quote(o)}" for o in args.overrides)
    return f"interrupted; last checkpoint: {saved[0]}; continue with: grpo-trl train {args.recipe}{sets} --resume"


ABBREVIATIONS = "".join(rf"(?<!\b{a})" for a in ("App", "Eq", "Fig", "Sec", "vs", r"e\.g", r"i\.e", "cf"))


def first_sentence(text: str) -> str:
    """A reward description's first sentence, RST markup removed, never cut mid-sentence.

    >>> first_sentence("Scores ``<answer>`` tags (App. C.1), e.g. 1.0. More text.")
    'Scores <answer> tags (App. C.1), e.g. 1.0.'
    """
    text = " ".join(text.split())
    if not text:
        return "(no description)"
    match = re.search(rf"{ABBREVIATIONS}(?<!\.)[.!?](?=\s+[A-Z(`]|$)", text)  # a code name may start one
    return (text[: match.end()] if match else text).replace("`", "")


def cmd_rewards(args: argparse.Namespace) -> int:
    import inspect

    from grpo_trl.registry import load_plugin
    from grpo_trl.rewards.registry import REWARDS, list_rewards

    for plugin in args.plugins:
        load_plugin(plugin)
    for info in list_rewards():
        params = ", ".join(k if v is inspect.Parameter.empty else f"{k}={v!r}" for k, v in info.params.items())
        doc = (inspect.getdoc(REWARDS.get(info.name).obj) or info.description).split("\n\n")[0]
        print(f"{info.name:20s} {first_sentence(doc)}")
        if params:
            print(f"{'':20s} args: {params}")
    return 0


def cmd_data(args: argparse.Namespace) -> int:
    from grpo_trl.check import load_recipe
    from grpo_trl.data import build_dataset
    from grpo_trl.data.image_tokens import as_trainer_prompt
    from grpo_trl.data.render import recipe_rendering
    from grpo_trl.models.load import load_processing_class, resolve_model

    recipe = load_recipe(args.recipe, args.overrides)
    model_path = resolve_model(recipe.model)  # builtin:tiny: a cache, not the output_dir
    tokenizer = load_processing_class(recipe.model, model_path, recipe.file, recipe.base_dir)  # a VLM: its processor
    rendering = recipe_rendering(recipe, tokenizer)  # the prompt as GRPOTrainer renders it, tools included
    from grpo_trl.check.rewards import planned_rewards
    from grpo_trl.data.rows import needing, reward_columns

    with needing(reward_columns(planned_rewards(recipe))):  # rows without what a reward reads: counted, dropped
        result = build_dataset(recipe.dataset, tokenizer=tokenizer, base_dir=recipe.base_dir, rendering=rendering)
    print(f"dataset: {result.summary()}")
    from itertools import islice

    from grpo_trl.data.sources import column_names

    print(f"columns: {', '.join(column_names(result.train))}")
    for i, row in enumerate(islice(result.train, args.n)):  # a streamed dataset (data.streaming) too
        prompt = as_trainer_prompt(tokenizer, row)  # a plain string (TRL's standard format) reaches the model as is
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
    from grpo_trl.cli.threads import cpu_threads, wait_policy

    own = args.recipe and not (args.benchmark or args.data) and args.backend == "transformers"
    busy = wait_policy() if own else 0.0  # before torch loads (the imports below load it)
    from grpo_trl.check import load_recipe
    from grpo_trl.eval.run import evaluate
    from grpo_trl.eval.summary import format_summary

    if args.benchmark or args.data or not args.recipe:  # a standard benchmark: no recipe
        from grpo_trl.eval.benchmarks import summary_lines
        from grpo_trl.eval.benchmarks_run import run_benchmark

        kwargs = {k: v for k, v in eval_kwargs(args).items() if k not in ("model", "split")}
        report = run_benchmark(args.benchmark or "", args.model, data=args.data, **kwargs)
        print("\n".join(summary_lines(report)))
        return 0
    recipe = load_recipe(args.recipe, args.overrides)
    if args.backend == "transformers" and (tuner := cpu_threads(recipe, gpu_allowed=True, busy=busy)):
        print(tuner.line)
    start = time.perf_counter()
    report = evaluate(recipe, **eval_kwargs(args))
    print(format_summary(report, time.perf_counter() - start))
    return 0


def cmd_filter(args: argparse.Namespace) -> int:
    from grpo_trl.check import load_recipe
    from grpo_trl.eval.filter import filter_prompts

    summary = filter_prompts(load_recipe(args.recipe, args.overrides), **filter_kwargs(args))
    snippet = summary.pop("snippet")
    print(json.dumps(summary, indent=2))
    print(f"keep the prompts that teach: add under data: (or a mixture part)\n  {snippet}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from grpo_trl.report.page import write_report

    try:
        path = write_report(args.output_dir, args.others)
    except FileNotFoundError as exc:
        raise GrpoTrlError(str(exc), file=args.output_dir) from None
    print(f"report written to {path}" + (f" ({len(args.others) + 1} runs overlaid)" if args.others else ""))
    from grpo_trl.report.card import refresh_card

    if card := refresh_card(args.output_dir):  # grpo-trl's own README.md: now with the report and eval.json
        print(f"model card updated: {card}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from grpo_trl.run.export import export_merged

    print(f"merged model written to {export_merged(args.output_dir, args.to)}")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from grpo_trl.check import load_recipe
    from grpo_trl.generation import format_command, serve_command, vllm_installed

    recipe = load_recipe(args.recipe, args.overrides)
    from grpo_trl.recipe.async_grpo import serve_extras  # async_grpo: with LoRA adds vLLM's adapter flags

    extra, more_env = serve_extras(recipe, args.extra)
    argv, env = serve_command(recipe, extra)
    env.update(more_env)
    print(format_command(argv, env), flush=True)
    if args.dry_run:
        return 0
    if not vllm_installed():
        raise GrpoTrlError(
            "vllm is not installed", key="serve", fix="pip install 'grpo-trl[vllm]' on the machine that serves"
        )
    os.execve(argv[0], argv, {**os.environ, **env})
    return 0  # pragma: no cover


def endpoint_options(args: argparse.Namespace) -> dict:
    return {
        "base_url": args.base_url,
        "api": args.api,
        "api_key_env": args.api_key_env,
        "max_concurrency": args.max_concurrency,
        "timeout": args.timeout,
        "retries": args.retries,
    }


def eval_kwargs(args: argparse.Namespace) -> dict:
    """``evaluate`` keyword arguments from the parsed command line."""
    return {
        "model": args.model,
        "split": args.split,
        "n": args.n,
        "limit": args.limit,
        "output_dir": getattr(args, "output_dir", None),
        "max_new_tokens": args.max_new_tokens,
        "batch_size": args.batch_size,
        "seed": args.seed,
        "backend": args.backend,
        "temperature": args.temperature,
        "endpoint": endpoint_options(args) if args.backend == "endpoint" else None,
    }


def filter_kwargs(args: argparse.Namespace) -> dict:
    """``filter_prompts`` keyword arguments from the parsed command line."""
    kwargs = eval_kwargs(args)
    kwargs.pop("output_dir")
    return {**kwargs, "output": args.output}


def cmd_import(args: argparse.Namespace) -> int:
    """``grpo-trl import``: a peer config -> a recipe (printed, or written with -o), and what check will say."""
    from grpo_trl.check.validate import validate
    from grpo_trl.importer import import_config
    from grpo_trl.recipe import Recipe, RecipeError

    out = Path(args.output) if args.output else None
    if out is not None and out.exists() and not args.force:
        print(f"error: {out}: -o: exists; choose another path or pass --force to replace it", file=sys.stderr)
        return 1
    if out is not None:  # before translating: the one writer's rule (never through a link, nor onto a folder)
        writable(out, where=str(out), flag="-o", mine=args.force)
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
    try:  # the one writer: never through a link; an existing file only with --force (checked above)
        write(out, result.text, where=str(out), flag="-o", mine=args.force)
    except GrpoTrlError as exc:
        print("\n".join(format_error_lines(exc)), file=sys.stderr)
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
