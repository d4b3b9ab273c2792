"""The training flow, top to bottom (as open-r1's ``grpo.py``): the checked recipe -> models -> rewards -> tools and
environments -> dataset -> ``trl.GRPOTrainer(...).train()`` -> the run folder (``run.session.RunSession``). Run as
``grpo-trl train RECIPE`` or ``accelerate launch --config_file recipes/accelerate/ddp.yaml -m grpo_trl.train RECIPE``.
"""

from __future__ import annotations

import inspect
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grpo_trl.check import load_recipe
from grpo_trl.errors import Problem, RecipeError, suggest
from grpo_trl.recipe import Recipe

logger = logging.getLogger("grpo_trl")


@dataclass
class TrainResult:
    """What ``train`` returns: where everything went and how the reward moved."""

    output_dir: str
    global_step: int
    log_history: list[dict] = field(default_factory=list)
    alerts: list[dict] = field(default_factory=list)
    none_causes: dict[str, str] = field(default_factory=dict)  # reward -> why, for rewards None on most rows

    def reward_trend(self, window: int = 20, key: str = "reward") -> tuple[float, float] | None:
        """Mean of ``key`` over the first and last ``window`` logged steps (None if nothing was logged)."""
        from grpo_trl.report.page import reward_trend

        return reward_trend(self.log_history, window, key)


def check_output_dir(path: str | Path, file: str = "trainer") -> None:
    """Fail before training when ``path`` cannot be written or its disk has less than ``GRPO_TRL_MIN_FREE_MB`` free."""
    p, key = Path(path), "trainer.output_dir" if file != "trainer" else "output_dir"
    if not (raw := os.environ.get("GRPO_TRL_MIN_FREE_MB", "200")).strip().isdecimal():  # "²" is a digit, not int
        why = f"must be a whole number of MB >= 0, got {raw!r}"
        raise RecipeError([Problem("environment", "GRPO_TRL_MIN_FREE_MB", why)])
    try:
        p.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=p, buffering=0) as probe:  # unbuffered: a disk that is full fails here
            probe.write(b"\0" * 1024)
    except OSError as exc:
        why = f"{str(p)!r} is not writable ({exc.strerror or exc}); choose another with --set trainer.output_dir=DIR"
        raise RecipeError([Problem(file, key, why)]) from exc
    if (free_mb := shutil.disk_usage(p).free / 2**20) < (min_free_mb := int(raw)):
        why = f"only {free_mb:.0f} MB free on the disk of {str(p)!r}, checkpoints need at least {min_free_mb} MB"
        fix = "free space or point trainer.output_dir elsewhere (GRPO_TRL_MIN_FREE_MB sets the threshold)"
        raise RecipeError([Problem(file, key, f"{why}; {fix}")])


def build_trainer(
    recipe: Recipe | str,
    overrides: list[str] | tuple = (),
    *,
    config=None,
    rollout_fields: list[str] | None = None,
    **trainer_kwargs: Any,
):
    """The real ``trl.GRPOTrainer`` for ``recipe``; of ``trainer_kwargs``, lists add to the recipe's, single values
    replace them (docs/python-api.md); ``rollout_fields``: what a ``rollout_func=`` gives the rewards."""
    from trl import GRPOTrainer

    from grpo_trl.check.extras import check_env_scores, check_environment_column, check_template, fail
    from grpo_trl.check.rewards import build_rewards, column_problems
    from grpo_trl.data import build_dataset
    from grpo_trl.data.render import Rendering
    from grpo_trl.data.rows import needing, reward_columns
    from grpo_trl.data.sources import column_names
    from grpo_trl.environments import build_environment_factory
    from grpo_trl.models.init_kwargs import load_failure
    from grpo_trl.models.load import load_processing_class, resolve_model
    from grpo_trl.models.lora_generation import merge_for_generation
    from grpo_trl.models.quantization import bnb_config, hardware_problems
    from grpo_trl.models.reward_models import is_model_entry, processing_class
    from grpo_trl.recipe.async_grpo import async_config, trainer_class
    from grpo_trl.rewards.call import guarded
    from grpo_trl.rewards.registry import required_columns
    from grpo_trl.rollout import for_trainer
    from grpo_trl.run.names import STATE
    from grpo_trl.tools import build_tools
    from grpo_trl.vllm_cpu import keep_weights_loadable

    recipe = with_rollout(recipe, overrides, trainer_kwargs.get("rollout_func"), rollout_fields)
    accepted = sorted(set(inspect.signature(GRPOTrainer.__init__).parameters) - {"self"})
    if unknown := sorted(set(trainer_kwargs) - set(accepted)):  # before minutes of loading, with a did-you-mean
        hint = f"{suggest(unknown[0], accepted)}; it takes: {', '.join(accepted)}"
        raise TypeError(f"GRPOTrainer takes no argument {unknown[0]!r}{hint}")
    kw = dict(trainer_kwargs)
    config = async_config(recipe, kw.pop("args", None) or config or recipe.to_grpo_config())

    # models: the policy (a path TRL loads, or one given), its tokenizer or processor, quantization
    quant = recipe.model.get("quantization")
    if quant and "quantization_config" not in kw:
        fail(recipe, hardware_problems(quant))
        kw["quantization_config"] = bnb_config(quant)
    model_path = resolve_model(recipe.model, config.output_dir, stage=Path(config.output_dir) / STATE)
    model = kw.pop("model", None) or model_path
    tokenizer = kw.pop("processing_class", None) or load_processing_class(
        recipe.model, model_path, recipe.file, recipe.base_dir
    )

    # rewards: the recipe's, then the API's, each behind the one call wrapper
    rewards, _weights = build_rewards(recipe, output_dir=config.output_dir)
    classes = [processing_class(s, recipe.base_dir) if is_model_entry(s) else None for s in recipe.rewards]
    extra = kw.pop("reward_funcs", None) or []
    extra = list(extra) if isinstance(extra, (list, tuple)) else [extra]  # a tuple was one "reward" to TRL
    extra_classes = kw.pop("reward_processing_classes", None) or [None] * len(extra)
    if extra:
        config.reward_weights = list(config.reward_weights or [1.0] * len(classes)) + [1.0] * len(extra)
    rewards = [guarded(r) for r in [*rewards, *extra]]
    classes += list(extra_classes if isinstance(extra_classes, list) else [extra_classes])

    tools = build_tools(recipe.data.get("tools")) + list(kw.pop("tools", None) or [])
    env = kw.pop("environment_factory", None)
    if env is None and recipe.data.get("environment") is not None:
        scored = any(s.get("name") == "environment" for s in recipe.rewards if isinstance(s, dict))
        env = build_environment_factory(recipe.data["environment"], hide_reward=scored)
    if tools or env is not None:
        check_template(recipe, tokenizer)
    if not rewards and env is not None:
        check_env_scores(recipe, env)

    # data: rendered as GRPOTrainer renders prompts; a row without a value a reward reads is dropped
    train_dataset, eval_dataset = kw.pop("train_dataset", None), kw.pop("eval_dataset", None)
    if train_dataset is None:
        rendering = Rendering.of(tokenizer, tools, config.chat_template_kwargs, env)
        with needing(reward_columns(rewards)):
            data = build_dataset(recipe.dataset, tokenizer=tokenizer, base_dir=recipe.base_dir, rendering=rendering)
        logger.info("dataset: %s", data.summary())
        train_dataset, eval_dataset = data.train, eval_dataset or (data.eval if config.eval_strategy != "no" else None)
    columns = column_names(train_dataset)  # a streamed dataset: read up to its first row
    if (rollout := kw.get("rollout_func") or recipe.data.get("rollout_func")) is not None:  # TRL forwards its keys
        read = {c for r in rewards for c in required_columns(r)} - set(columns)
        kw["rollout_func"], given = for_trainer(rollout, rollout_fields, read)
    fail(recipe, column_problems(recipe, rewards, [*columns, *sorted(given)] if rollout is not None else columns))
    if env is not None and recipe.data.get("environment") is not None:
        check_environment_column(recipe, columns, train_dataset)
    if getattr(config, "use_vllm", False) and config.vllm_mode == "colocate":
        keep_weights_loadable()

    try:
        trainer = trainer_class(recipe)(  # AsyncGRPOTrainer with an async_grpo: section
            model=model,
            reward_funcs=rewards,
            args=config,
            train_dataset=train_dataset,
            eval_dataset=eval_dataset,
            processing_class=tokenizer,
            peft_config=kw.pop("peft_config", None) or recipe.lora_config(),
            reward_processing_classes=classes if any(c is not None for c in classes) else None,
            tools=tools or None,
            environment_factory=env,
            **kw,
        )
    except Exception as exc:  # from_pretrained with model.init_kwargs: one problem naming them
        failure = load_failure(exc, recipe.model, recipe.file) if isinstance(model, str) else None
        if failure is None:
            raise
        raise failure from exc
    if recipe.model.get("lora_merged_generation"):
        merge_for_generation(trainer.model)  # the unwrapped PeftModel TRL calls generate on
    return trainer


def train(
    recipe: Recipe | str,
    overrides: list[str] | tuple = (),
    *,
    resume: bool = False,
    overwrite: bool = False,
    extra_callbacks: list | None = None,
    verbose: bool = False,
    **trainer_kwargs: Any,
) -> TrainResult:
    """Train from a ``Recipe`` or a recipe path (``--set``-style overrides) inside its run folder (``RunSession``'s
    rules). ``resume``: from the newest complete checkpoint (a finished run trains nothing); ``overwrite``: start
    again; ``trainer_kwargs``: extra ``GRPOTrainer`` arguments (``build_trainer``'s)."""
    from grpo_trl.data.refill import install as install_refill
    from grpo_trl.data.sampler import install as install_sampler
    from grpo_trl.eval.during import install_heldout
    from grpo_trl.generation import preflight
    from grpo_trl.io import read_jsonl
    from grpo_trl.monitor.callbacks import install_monitors
    from grpo_trl.report.card import publish
    from grpo_trl.run.session import RunSession

    recipe = with_rollout(recipe, overrides, trainer_kwargs.get("rollout_func"), trainer_kwargs.get("rollout_fields"))
    config = recipe.to_grpo_config()
    output_dir = config.output_dir
    check_output_dir(output_dir, file=recipe.file)
    with RunSession(recipe, config, resume=resume, overwrite=overwrite) as session:
        if (state := session.finished) is not None:  # max_steps already reached: its saved state and alerts
            alerts, history = read_jsonl(Path(output_dir) / "alerts.jsonl"), list(state.get("log_history") or [])
            return TrainResult(output_dir, int(state["global_step"]), history, alerts)
        preflight(recipe, config)  # vLLM installed, server reachable: fail in seconds, not after loading the model
        trainer = build_trainer(recipe, config=config, **trainer_kwargs)
        alerts = install_monitors(trainer, recipe.logging, output_dir, extra_callbacks, console=not verbose)
        install_sampler(trainer, recipe.dataset)  # data.sampler: zero-variance-aware sampling
        install_refill(trainer, recipe.dataset)  # data.dynamic_sampling: DAPO refill of zero-variance groups
        install_heldout(trainer, recipe)  # heldout: pass@k on the eval split every N steps
        session.attach(trainer)  # manifest entries as checkpoints are saved; logs and alerts continued on resume
        trainer.train(resume_from_checkpoint=str(session.resume_from) if session.resume_from else None)
        session.save_final(trainer)  # save_model + save_state, whole before in place
        publish(recipe, trainer, session)  # README.md model card; pushed with trainer.push_to_hub
    causes = {r.__name__: r.mostly_none() for r in trainer.reward_funcs if getattr(r, "mostly_none", None)}
    fired, causes = alerts.fired if alerts else [], {n: c for n, c in causes.items() if c}
    return TrainResult(output_dir, trainer.state.global_step, list(trainer.state.log_history), fired, causes)


run = train  # the CLI's name for it


def with_rollout(recipe: Recipe | str, overrides: list[str] | tuple, func: Any, fields: list[str] | None) -> Recipe:
    """The checked recipe; with a ``rollout_func=`` callable, checked as if it held ``rollout_func:`` for it."""
    from grpo_trl.check.validate import validate
    from grpo_trl.recipe.core import open_recipe
    from grpo_trl.rollout import recipe_entry

    if not callable(func):
        return recipe if isinstance(recipe, Recipe) else load_recipe(recipe, overrides)
    base = recipe if isinstance(recipe, Recipe) else open_recipe(recipe, overrides)
    entry = recipe_entry(func, fields)
    if base.data.get("rollout_func") == entry and isinstance(recipe, Recipe):
        return recipe  # made here already (train, then build_trainer)
    recipe = Recipe(data={**base.data, "rollout_func": entry}, path=base.path)
    if problems := validate(recipe):
        raise RecipeError(problems)
    return recipe


if __name__ == "__main__":  # python -m grpo_trl.train (accelerate launch): the CLI's train command
    from grpo_trl.cli import train_main

    raise SystemExit(train_main())
