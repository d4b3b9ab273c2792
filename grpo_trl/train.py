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
import hashlib
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

MIN_FREE_MB: int | None = None  # None: GRPO_TRL_MIN_FREE_MB, else 200 (read when a run starts, not at import)


def _min_free_mb() -> int:
    """The free-space threshold: ``MIN_FREE_MB`` when set, else ``GRPO_TRL_MIN_FREE_MB`` (default 200)."""
    if MIN_FREE_MB is not None:
        return MIN_FREE_MB
    raw = os.environ.get("GRPO_TRL_MIN_FREE_MB", "200")
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise RecipeError(
            [Problem("environment", "GRPO_TRL_MIN_FREE_MB", f"must be a whole number of MB >= 0, got {raw!r}")]
        )
    return value


@dataclass
class TrainResult:
    """What ``train`` returns: where everything went and how the reward moved."""

    output_dir: str
    global_step: int
    log_history: list[dict] = field(default_factory=list)
    alerts: list[dict] = field(default_factory=list)

    def reward_trend(self, window: int = 20, key: str = "reward") -> tuple[float, float] | None:
        """Mean of ``key`` over the first and last ``window`` logged steps (``None`` if nothing was logged)."""
        from grpo_trl.report.page import reward_trend  # one definition, shared with report.html

        return reward_trend(self.log_history, window, key)


def check_output_dir(path: str | Path, min_free_mb: int | None = None, file: str = "trainer") -> None:
    """Fail before training when ``path`` cannot be written or its disk has less than ``min_free_mb`` free; the
    error names ``file`` (the recipe) and ``trainer.output_dir``."""
    min_free_mb = _min_free_mb() if min_free_mb is None else min_free_mb
    p = Path(path)
    try:
        p.mkdir(parents=True, exist_ok=True)
        probe = p / f".grpo_trl_write_test.{os.getpid()}"
        probe.write_bytes(b"\0" * 1024)
        probe.unlink()
    except OSError as exc:
        raise RecipeError(
            [
                Problem(
                    file,
                    "trainer.output_dir" if file != "trainer" else "output_dir",
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
                    file,
                    "trainer.output_dir" if file != "trainer" else "output_dir",
                    f"only {free_mb:.0f} MB free on the disk of {str(p)!r}, checkpoints need at least "
                    f"{min_free_mb} MB; "
                    "free space or point trainer.output_dir elsewhere (GRPO_TRL_MIN_FREE_MB sets the threshold)",
                )
            ]
        )


def resolve_model(recipe: Recipe, output_dir: str | None = None) -> str:
    """The model path to load. ``builtin:tiny`` is built once: into ``<output_dir>/tiny-model`` for a training run,
    otherwise (``grpo-trl data``, ``eval``) into a cache folder, so those commands write nothing into the run's
    output_dir (``GRPO_TRL_CACHE``, default ``~/.cache/grpo-trl``)."""
    name = recipe.model["name"]
    if not str(name).startswith("builtin:"):
        return name
    from grpo_trl.models.builtin import BUILDERS

    tiny = recipe.model.get("tiny") or {}
    folder = "tiny-model" if name == BUILTIN_TINY else name.split(":", 1)[1]  # tiny-tools...: run_dir.OWN_NAMES
    if output_dir is None:
        raw = os.environ.get("GRPO_TRL_CACHE")
        cache = Path(raw or Path.home() / ".cache" / "grpo-trl")
        if cache.is_file():  # one error line, not an internal error
            raise RecipeError(
                [Problem("environment", "GRPO_TRL_CACHE", f"cannot use {cache} as a folder: it is a file")]
            )
        key = hashlib.sha256(json.dumps([name, tiny], sort_keys=True).encode()).hexdigest()[:12]
        try:
            return build_once(BUILDERS[name], cache / f"{folder}-{key}", cache, **tiny)
        except OSError as exc:
            where = ("environment", "GRPO_TRL_CACHE") if raw else ("environment", "HOME")
            why = f"cannot build {name} in {str(cache)!r} ({exc.strerror or exc})"
            raise RecipeError([Problem(*where, why, "set GRPO_TRL_CACHE to a writable folder")]) from None
    from grpo_trl.run.names import STATE

    return build_once(BUILDERS[name], Path(output_dir) / folder, Path(output_dir) / STATE, **tiny)


def build_once(builder: Any, path: Path, stage: Path, **options: Any) -> str:
    """``builder(path, **options)`` unless ``path`` is already built, written whole or not at all: into a folder of
    this process under ``stage`` (on the same disk), then renamed into place, so a run killed while building leaves
    no half-written model for the next one to load. A concurrent builder's copy wins; a dead builder's is removed."""
    if not (path / "config.json").exists():
        stage.mkdir(parents=True, exist_ok=True)
        for old in stage.glob(f".{path.name}.build-*"):
            if not _alive(old.name.rsplit("-", 1)[-1]):
                shutil.rmtree(old, ignore_errors=True)
        tmp = stage / f".{path.name}.build-{os.getpid()}"
        builder(tmp, **options)
        if path.is_dir() and not (path / "config.json").exists():
            shutil.rmtree(path)  # half written by a grpo-trl that built in place
        try:
            tmp.rename(path)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
            if not (path / "config.json").exists():
                raise
    return str(path)


def _alive(pid: str) -> bool:
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (ValueError, OSError):
        return True  # not ours to judge (another user's process): leave it
    return True


def load_tokenizer(recipe: Recipe, model_path: str):
    """The model's tokenizer, with ``model.chat_template`` (file or text) applied when given."""
    from transformers import AutoTokenizer

    model = recipe.model
    kwargs = {k: model[k] for k in ("revision", "trust_remote_code") if model.get(k) is not None}
    try:
        tokenizer = AutoTokenizer.from_pretrained(model_path, **kwargs)
    except (OSError, ValueError) as exc:  # not a model folder, no such Hub id, offline, no tokenizer files
        why = f"cannot load the tokenizer of {str(model_path)!r} ({type(exc).__name__}: {str(exc)[:300]})"
        raise RecipeError([Problem(recipe.file, "model", why, "give a model folder or a Hub id")]) from exc
    template = model.get("chat_template")
    if template:
        from grpo_trl.models.chat_templates import resolve_template

        tokenizer.chat_template = resolve_template(template, recipe.base_dir)  # trl:<name>, a file, or the text
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def check_reward_columns(recipe: Recipe, rewards: list, columns: list[str]) -> None:
    """Raise ``RecipeError`` when a reward reads a column the built dataset lacks."""
    problems = recipe.column_problems(rewards, columns)
    if problems:
        raise RecipeError(problems)


def run(
    recipe: Recipe,
    *,
    resume: bool = False,
    overwrite: bool = False,
    extra_callbacks: list | None = None,
    verbose: bool = False,
    **trainer_kwargs: Any,
) -> TrainResult:
    """Train with the recipe. ``resume``: continue from the newest complete checkpoint in ``output_dir`` (a finished
    run trains nothing); ``overwrite``: start again, removing only what grpo-trl wrote there. The directory's rules
    (lock, manifest, foreign files, recipe changes) are ``grpo_trl.run.session.RunSession``'s.
    ``trainer_kwargs``: extra ``GRPOTrainer`` arguments merged with the recipe's (see ``grpo_trl.build``).
    """
    from grpo_trl.run.session import RunSession

    config = recipe.to_grpo_config()
    check_output_dir(config.output_dir, file=recipe.file)
    with RunSession(recipe, config, resume=resume, overwrite=overwrite) as session:
        if session.finished is not None:
            return finished_result(config.output_dir, session.finished)
        return _train(recipe, config, session, extra_callbacks, verbose, trainer_kwargs)


def finished_result(output_dir: str, state: dict) -> TrainResult:
    """The result of a run that had already reached ``max_steps``: its saved state and alerts, nothing trained."""
    from grpo_trl.run.resume import read_jsonl

    alerts = read_jsonl(Path(output_dir) / "alerts.jsonl")
    return TrainResult(output_dir, int(state["global_step"]), list(state.get("log_history") or []), alerts)


def _train(
    recipe: Recipe, config: Any, session: Any, extra_callbacks: list | None, verbose: bool, trainer_kwargs: dict
) -> TrainResult:
    from grpo_trl.build import build_trainer
    from grpo_trl.data.dynamic_sampling import install as install_sampler
    from grpo_trl.generation import preflight
    from grpo_trl.monitor.callbacks import Alerts, CompletionSamples, GenerationTimer

    output_dir = config.output_dir
    preflight(recipe, config)  # vLLM installed, server reachable: fail in seconds, not after loading the model

    trainer = build_trainer(recipe, config=config, **trainer_kwargs)
    log_cfg = recipe.logging
    rewards = trainer.reward_funcs  # the recipe's SafeRewards (and any passed or loaded by TRL)
    columns = getattr(trainer.train_dataset, "column_names", None) or ()  # what a reward reads as a column
    alerts = (
        Alerts(
            output_dir,
            patience=log_cfg["alert_patience"],
            rewards=rewards,
            columns=columns,
            tools=getattr(trainer, "tools", None),
        )
        if log_cfg["alerts"]
        else None
    )
    callbacks = [
        CompletionSamples(trainer, every=log_cfg["completions_every"], samples=log_cfg["completions_samples"]),
        GenerationTimer(trainer),
        *([alerts] if alerts else []),
        *(extra_callbacks or []),
    ]
    for cb in callbacks:
        trainer.add_callback(cb)
    install_sampler(trainer, recipe.dataset)  # data.sampler: zero-variance-aware sampling
    if not verbose:  # one compact line per logging step instead of TRL's whole dict
        from grpo_trl.monitor.console import install_console

        install_console(trainer)
    session.attach(trainer)  # manifest entries as checkpoints are saved; logs and alerts continued on resume

    trainer.train(resume_from_checkpoint=str(session.resume_from) if session.resume_from else None)
    session.save_final(trainer)  # save_model + save_state, whole before in place (a kill leaves it unfinished)
    return TrainResult(
        output_dir, trainer.state.global_step, list(trainer.state.log_history), alerts.fired if alerts else []
    )


def print_summary(result: TrainResult) -> None:
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
    from grpo_trl.errors import GrpoTrlError, format_error_lines

    try:
        recipe = load_recipe(args.recipe, args.overrides)
        result = run(recipe, resume=args.resume, overwrite=args.overwrite, verbose=args.verbose)
    except GrpoTrlError as exc:
        for line in format_error_lines(exc, file=args.recipe):
            print(line, file=sys.stderr)
        return 1
    from grpo_trl.run.session import is_main_process

    if is_main_process():  # RANK was read (and checked) by the run
        print_summary(result)
    from grpo_trl.rewards.stray_threads import exit_if_stray_threads

    exit_if_stray_threads(0)  # a reward's non-daemon thread must not keep the process alive after saving
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="grpo-trl train", description="Train a model with GRPO from a YAML recipe.")
    code = run_cli(add_train_arguments(parser).parse_args(argv))
    if argv is None:  # the program (accelerate launch -m grpo_trl.train): nothing left running keeps it alive
        from grpo_trl.rewards.stray_threads import exit_if_stray_threads

        exit_if_stray_threads(code, everything=True)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
