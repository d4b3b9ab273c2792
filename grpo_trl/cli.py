"""``grpo-trl``: check, train, rewards, data, eval, report, serve. Heavy libraries are imported inside commands, so
``grpo-trl --help`` answers at once.

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
import warnings

from grpo_trl.train import add_recipe_arguments, add_train_arguments


def _errors(exc: Exception) -> int:
    problems = getattr(exc, "problems", None)
    for line in problems or [exc]:
        print(f"error: {line}", file=sys.stderr)
    return 1


def _user_errors() -> tuple[type, ...]:
    from grpo_trl.data.registry import DataError
    from grpo_trl.recipe import RecipeError
    from grpo_trl.rewards.registry import RewardError

    return RecipeError, DataError, RewardError


def cmd_check(args: argparse.Namespace) -> int:
    """Validate a recipe and print the plan."""
    from datasets.utils.logging import disable_progress_bar

    from grpo_trl.recipe import RecipeError, load_recipe

    disable_progress_bar()  # check reads small local files at most: keep its output to the verdict
    try:
        recipe = load_recipe(args.recipe, args.overrides, validate=False)
        problems = recipe.validate(world_size=args.world_size)
        if problems:
            raise RecipeError(problems)
        plan = recipe.plan(world_size=args.world_size)
    except _user_errors() as exc:
        return _errors(exc)
    rows = plan["dataset_rows"]
    rows_s = (
        "unknown (built at train time)"
        if rows is None
        else f"{rows}{'' if plan['dataset_rows_exact'] else ' at most (token filters apply at train time)'}"
    )
    total = plan["total_optimizer_steps"]
    print(f"recipe {args.recipe}: OK")
    if args.show_config:
        print(recipe.to_yaml())
    print(f"  model               {recipe.model['name']}" + (" + LoRA" if recipe.model.get("lora") else ""))
    print(f"  data                {recipe.dataset.get('builder', 'mixture')}: {rows_s} rows")
    rewards = ", ".join(f"{spec.get('alias') or spec['name']} x{spec.get('weight', 1.0)}" for spec in recipe.rewards)
    print(f"  rewards             {rewards}")
    print(
        f"  world size          {plan['world_size']} training process(es)"
        + ("" if args.world_size else " (launch.num_processes; --world-size N to change)")
    )
    print(
        f"  per optimizer step  {plan['prompts_per_optimizer_step']:g} prompts x {plan['num_generations']} generations"
        f" = {plan['completions_per_optimizer_step']} completions"
    )
    print(
        f"  generation batch    {plan['generation_batch_size']} completions"
        f" ({plan['prompts_per_generation']} prompts), reused for {plan['steps_per_generation']} step(s)"
        f" x {plan['num_iterations']} iteration(s)"
    )
    print(
        f"  optimizer steps     {'unknown' if total is None else total}"
        + (
            ""
            if recipe.trainer.get("max_steps", -1) > 0
            else "  (epochs x rows x generations x iterations / completions per step)"
        )
    )
    print(f"  generation          {plan['generation']}")
    print(f"  output_dir          {plan['output_dir']}")
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    from grpo_trl.train import run_cli

    return run_cli(args)


def cmd_rewards(args: argparse.Namespace) -> int:
    import inspect

    from grpo_trl.rewards.registry import RewardError, list_rewards, load_plugin

    try:
        for plugin in args.plugins:
            load_plugin(plugin)
    except RewardError as exc:
        return _errors(exc)
    for info in list_rewards():
        params = ", ".join(k if v is inspect.Parameter.empty else f"{k}={v!r}" for k, v in info.params.items())
        print(f"{info.name:20s} {info.description}")
        if params:
            print(f"{'':20s} args: {params}")
    return 0


def cmd_data(args: argparse.Namespace) -> int:
    from grpo_trl.data import build_dataset
    from grpo_trl.recipe import load_recipe
    from grpo_trl.train import load_tokenizer, resolve_model

    try:
        recipe = load_recipe(args.recipe, args.overrides)
        cfg = recipe.to_grpo_config()
        tokenizer = load_tokenizer(recipe, resolve_model(recipe, cfg.output_dir))
        result = build_dataset(recipe.dataset, tokenizer=tokenizer, base_dir=recipe.base_dir)
    except _user_errors() as exc:
        return _errors(exc)
    print(f"dataset: {result.summary()}")
    print(f"columns: {', '.join(result.train.column_names)}")
    for i in range(min(args.n, len(result.train))):
        row = result.train[i]
        text = tokenizer.apply_chat_template(row["prompt"], tokenize=False, add_generation_prompt=True)
        extra = {k: v for k, v in row.items() if k != "prompt"}
        print(
            f"\n--- prompt {i} as the model sees it ---\n{text}\n"
            f"--- reward columns: {json.dumps(extra, default=str)[:300]}"
        )
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from grpo_trl.evaluate import evaluate
    from grpo_trl.recipe import load_recipe

    try:
        recipe = load_recipe(args.recipe, args.overrides)
        report = evaluate(
            recipe,
            model=args.model,
            split=args.split,
            n=args.n,
            limit=args.limit,
            output_dir=args.output_dir,
            max_new_tokens=args.max_new_tokens,
            batch_size=args.batch_size,
        )
    except _user_errors() as exc:
        return _errors(exc)
    print(json.dumps({k: v for k, v in report.items() if k != "per_prompt"}, indent=2))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from grpo_trl.report import write_report

    try:
        path = write_report(args.output_dir)
    except FileNotFoundError as exc:
        return _errors(exc)
    print(f"report written to {path}")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from grpo_trl.generation import format_command, serve_command, vllm_installed
    from grpo_trl.recipe import load_recipe

    try:
        recipe = load_recipe(args.recipe, args.overrides)
    except _user_errors() as exc:
        return _errors(exc)
    argv, env = serve_command(recipe, args.extra)
    print(format_command(argv, env), flush=True)
    if args.dry_run:
        return 0
    if not vllm_installed():
        print("error: vllm is not installed; pip install 'grpo-trl[vllm]' on the machine that serves", file=sys.stderr)
        return 1
    os.execve(argv[0], argv, {**os.environ, **env})
    return 0  # pragma: no cover


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="grpo-trl", description="GRPO training on TRL from YAML recipes.")
    sub = parser.add_subparsers(dest="command", required=True)

    def recipe_cmd(name: str, help_text: str) -> argparse.ArgumentParser:
        return add_recipe_arguments(sub.add_parser(name, help=help_text, description=help_text))

    p = recipe_cmd("check", "validate a recipe (no model is loaded) and print the training plan")
    p.add_argument(
        "--world-size",
        type=int,
        default=None,
        help="training processes to plan for (default: launch.num_processes or 1)",
    )
    p.add_argument("--show-config", action="store_true", help="print the resolved recipe too")
    p.set_defaults(func=cmd_check)

    help_text = "train with GRPO (also: accelerate launch -m grpo_trl.train RECIPE)"
    p = add_train_arguments(sub.add_parser("train", help=help_text, description=help_text))
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("rewards", help="list the registered rewards and their arguments")
    p.add_argument("--plugin", dest="plugins", action="append", default=[], help="also load this reward file")
    p.set_defaults(func=cmd_rewards)

    p = recipe_cmd("data", "build the recipe's dataset and print prompts exactly as the model sees them")
    p.add_argument("-n", type=int, default=2, help="prompts to show")
    p.set_defaults(func=cmd_data)

    p = recipe_cmd("eval", "generate n completions per prompt, score them with the recipe's rewards, report pass@k")
    p.add_argument("--model", default=None, help="model path or checkpoint (default: the recipe's output_dir)")
    p.add_argument("--split", default=None, help="dataset split (default: the recipe's eval split, else its split)")
    p.add_argument("--n", type=int, default=8, help="completions per prompt")
    p.add_argument("--limit", type=int, default=None, help="evaluate the first N prompts")
    p.add_argument("--batch-size", type=int, default=16, help="prompts per generate() call")
    p.add_argument("--max-new-tokens", type=int, default=None, help="default: trainer.max_completion_length")
    p.add_argument("--output-dir", default=None, help="where eval.json goes (default: the model folder)")
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("report", help="plots + report.html from a training output_dir")
    p.add_argument("output_dir")
    p.set_defaults(func=cmd_report)

    p = recipe_cmd("serve", "start TRL's vLLM server for the recipe's model (server mode); prints the command")
    p.add_argument("--dry-run", action="store_true", help="print the command and exit")
    p.epilog = "Arguments after -- go to vllm serve as they are."
    p.set_defaults(func=cmd_serve)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    args = build_parser().parse_args(argv)
    args.extra = extra
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    warnings.filterwarnings("ignore", category=FutureWarning)  # deprecation chatter from transformers/TRL
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())
