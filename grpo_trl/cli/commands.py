"""What each ``grpo-trl`` subcommand does with its parsed arguments (``parser.py`` declares them)."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

from grpo_trl.errors import GrpoTrlError, redact


def _lines(lines: list[str]) -> None:
    for line in lines:  # warnings to stderr, the rest to stdout
        print(line, file=sys.stderr if line.startswith("warning:") else sys.stdout)


def cmd_check(args: argparse.Namespace) -> int:
    """Validate a recipe (local data read into memory, not the datasets cache) and print the plan."""
    from datasets.utils.logging import disable_progress_bar

    from grpo_trl.check import load_recipe
    from grpo_trl.check.memory import check_lines
    from grpo_trl.check.plan import describe_extras, format_plan, make_plan
    from grpo_trl.check.validate import validate
    from grpo_trl.data.sources import without_cache
    from grpo_trl.recipe import RecipeError

    disable_progress_bar()
    with without_cache():
        recipe = load_recipe(args.recipe, args.overrides, validate=False)
        if problems := validate(recipe, world_size=args.world_size):
            raise RecipeError(problems)
        plan = make_plan(recipe, world_size=args.world_size)
        print(f"recipe {args.recipe}: OK")
        if args.show_config:
            print(redact(recipe.to_yaml()))  # the one redaction: no password in a URL on the console
        _lines(format_plan(recipe, plan, world_size_given=bool(args.world_size)))
        _lines(check_lines(recipe, plan.config, plan.world_size, args.gpu_memory))  # peak memory per GPU
        _lines(describe_extras(recipe, plan.config))  # tools, environment, QLoRA; warnings for this machine
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    """Write the recipe JSON Schema (editors: ``# yaml-language-server: $schema=PATH`` on a recipe's first line)."""
    from grpo_trl.recipe.schema import write_schema

    text = write_schema(args.output)
    if args.output is None:
        print(text, end="")
    else:
        print(
            f"schema written to {args.output}; first line of a recipe: # yaml-language-server: $schema={args.output}"
        )
    return 0


ABBREVIATIONS = "".join(rf"(?<!\b{a})" for a in ("App", "Eq", "Fig", "Sec", "vs", r"e\.g", r"i\.e", "cf"))


def first_sentence(text: str) -> str:
    """A reward description's first sentence, RST markup removed, never cut mid-sentence."""
    text = " ".join(text.split())
    match = re.search(rf"({ABBREVIATIONS}(?<!\.)\.|[!?])(?=\s+[A-Z(`]|$)", text)  # a code name may start one
    return (text[: match.end()] if match else text).replace("`", "") or "(no description)"


def cmd_rewards(args: argparse.Namespace) -> int:
    import inspect

    from grpo_trl.registry import load_plugin
    from grpo_trl.rewards.registry import REWARDS, list_rewards

    for plugin in args.plugins:
        load_plugin(plugin)
    for info in list_rewards():
        params = ", ".join(k if v is inspect.Parameter.empty else f"{k}={v!r}" for k, v in info.params.items())
        doc = (inspect.getdoc(REWARDS.get(info.name).obj) or info.description).split("\n\n")[0]
        print(f"{info.name:20s} {first_sentence(doc)}" + (f"\n{'':20s} args: {params}" if params else ""))
    return 0


def cmd_data(args: argparse.Namespace) -> int:
    from itertools import islice

    from grpo_trl.check import load_recipe
    from grpo_trl.check.rewards import planned_rewards
    from grpo_trl.data import build_dataset
    from grpo_trl.data.image_tokens import as_trainer_prompt
    from grpo_trl.data.render import recipe_rendering
    from grpo_trl.data.rows import needing, reward_columns
    from grpo_trl.data.sources import column_names
    from grpo_trl.models.load import load_processing_class, resolve_model

    recipe = load_recipe(args.recipe, args.overrides)
    model_path = resolve_model(recipe.model)  # builtin:tiny: a cache, not the output_dir
    tokenizer = load_processing_class(recipe.model, model_path, recipe.file, recipe.base_dir)  # a VLM: its processor
    rendering = recipe_rendering(recipe, tokenizer)  # the prompt as GRPOTrainer renders it, tools included
    with needing(reward_columns(planned_rewards(recipe))):  # rows without what a reward reads: counted, dropped
        result = build_dataset(recipe.dataset, tokenizer=tokenizer, base_dir=recipe.base_dir, rendering=rendering)
    print(f"dataset: {result.summary()}\ncolumns: {', '.join(column_names(result.train))}")
    for i, row in enumerate(islice(result.train, args.n)):  # a streamed dataset (data.streaming) too
        prompt = as_trainer_prompt(tokenizer, row)  # a plain string (TRL's standard format) reaches the model as is
        if not isinstance(prompt, str):
            kwargs = rendering.kwargs_for(row.get("environment"))
            prompt = tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True, **kwargs)
        extra = json.dumps({k: v for k, v in row.items() if k != "prompt"}, default=str)[:300]
        print(f"\n--- prompt {i} as the model sees it ---\n{prompt}\n--- reward columns: {extra}")
    return 0


def _generation(args: argparse.Namespace) -> dict:
    """``evaluate`` / ``filter_prompts`` / ``run_benchmark`` keyword arguments from the command line."""
    keys = ("model", "split", "n", "limit", "max_new_tokens", "batch_size", "seed", "backend", "temperature")
    endpoint = ("base_url", "api", "api_key_env", "max_concurrency", "timeout", "retries")
    return {k: getattr(args, k) for k in keys} | {
        "endpoint": {k: getattr(args, k) for k in endpoint} if args.backend == "endpoint" else None
    }


def cmd_eval(args: argparse.Namespace) -> int:
    from grpo_trl.cli.threads import set_cpu_threads, wait_policy

    own = args.recipe and not (args.benchmark or args.data) and args.backend == "transformers"
    busy = wait_policy() if own else 0.0  # before torch loads (the imports below load it)
    from grpo_trl.check import load_recipe
    from grpo_trl.eval.run import evaluate, format_summary

    options = _generation(args)
    if args.benchmark or args.data or not args.recipe:  # a standard benchmark: no recipe
        from grpo_trl.eval.benchmarks import run_benchmark, summary_lines

        _unused_beside_benchmark(args)
        del options["split"]
        report = run_benchmark(args.benchmark or "", options.pop("model"), data=args.data, output_dir=args.output_dir,
                               **options)  # fmt: skip
        print("\n".join(summary_lines(report)))
        return 0
    recipe = load_recipe(args.recipe, args.overrides)
    if args.backend == "transformers" and (tuner := set_cpu_threads(recipe.model, gpu_allowed=True, busy=busy)):
        print(tuner.line)
    start = time.perf_counter()
    report = evaluate(recipe, output_dir=args.output_dir, **options)
    print(format_summary(report, time.perf_counter() - start))
    return 0


def _unused_beside_benchmark(args: argparse.Namespace) -> None:
    """``--benchmark`` runs without a recipe: a recipe, ``--split`` or ``--set`` beside it is an error, not dropped."""
    from grpo_trl.errors import Problem, RecipeError

    if args.recipe and not args.benchmark:  # --data alone
        why = "is a benchmark's local copy; the recipe's eval reads its own data: section"
        raise RecipeError([Problem("grpo-trl eval", "--data", why, "add --benchmark NAME, or drop --data")])
    for key, given in (("RECIPE", args.recipe), ("--split", args.split), ("--set", args.overrides)):
        if given:
            why = "is not used by --benchmark (it runs without a recipe)"
            raise RecipeError([Problem("grpo-trl eval --benchmark", key, why, f"drop {key}")])


def cmd_filter(args: argparse.Namespace) -> int:
    from grpo_trl.check import load_recipe
    from grpo_trl.eval.filter import filter_prompts

    summary = filter_prompts(load_recipe(args.recipe, args.overrides), output=args.output, **_generation(args))
    snippet = summary.pop("snippet")
    print(f"{json.dumps(summary, indent=2)}\nkeep the prompts that teach: add under data: (or a mixture part)")
    print(f"  {snippet}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from grpo_trl.report.card import refresh_card
    from grpo_trl.report.page import write_report

    path = write_report(args.output_dir, args.others)  # not a run's folder: one error line
    print(f"report written to {path}" + (f" ({len(args.others) + 1} runs overlaid)" if args.others else ""))
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
    from grpo_trl.recipe.async_grpo import serve_extras  # async_grpo: with LoRA adds vLLM's adapter flags

    recipe = load_recipe(args.recipe, args.overrides)
    extra, more_env = serve_extras(recipe, args.extra)
    argv, env = serve_command(recipe, extra)
    env.update(more_env)
    print(format_command(argv, env), flush=True)
    if args.dry_run:
        return 0
    if not vllm_installed():
        fix = "pip install 'grpo-trl[vllm]' on the machine that serves"
        raise GrpoTrlError("vllm is not installed", key="serve", fix=fix)
    os.execve(argv[0], argv, {**os.environ, **env})
    return 0  # pragma: no cover


def cmd_import(args: argparse.Namespace) -> int:
    """A peer config -> a recipe (printed, or written with -o through the one writer), and what check will say."""
    from grpo_trl.check.validate import validate
    from grpo_trl.importer import import_config
    from grpo_trl.io import writable, write
    from grpo_trl.recipe import Recipe

    out = None if args.output is None else writable(args.output, where=args.output, flag="-o", mine=True)
    if out is not None:  # before translating: never through a link, nor onto a folder
        if out.exists() and not args.force:
            raise GrpoTrlError(f"{out}: -o: exists; choose another path or pass --force to replace it")
        if out.resolve() == Path(args.config).resolve():
            raise GrpoTrlError(f"{out}: -o: is the config being imported; write the recipe elsewhere")
    where = out.resolve().parent if out else Path.cwd()  # a RecipeError: its lines, exit 1
    result = import_config(args.config, flavour=args.flavour, trl_version=args.trl_version, out_dir=where)
    for line in result.warnings:
        print(f"warning: {args.config}: {line}", file=sys.stderr)
    for line in result.changed_defaults:
        print(f"note: {args.config}: default changed since TRL {result.baseline}: {line}", file=sys.stderr)
    if out is None:
        sys.stdout.write(result.text)
        return 0
    write(out, result.text, where=str(out), flag="-o", mine=args.force)
    problems = validate(Recipe(data=result.recipe, path=out))
    print(f"wrote {out} ({len(result.unmapped)} setting(s) not mapped, listed at its top)")
    if problems:
        print(f"`grpo-trl check {out}` will report:\n" + "\n".join(f"  {p}" for p in problems), file=sys.stderr)
    else:
        print(f"next: grpo-trl check {out}")
    return 0
