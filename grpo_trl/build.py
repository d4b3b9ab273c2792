"""Build the real ``trl.GRPOTrainer`` from a recipe, with any extra trainer arguments merged in (the Python API).

``build_trainer(recipe, **trainer_kwargs)`` returns the trainer ``grpo-trl train`` would run; keywords are
``GRPOTrainer`` arguments, merged with what the recipe builds:

- lists add to the recipe's: ``reward_funcs`` (weight 1.0 each, after the recipe's rewards; a matching
  ``reward_processing_classes`` list may come with them), ``callbacks``, ``tools``;
- single values replace the recipe's: ``model`` (a preloaded model), ``processing_class``, ``peft_config``,
  ``quantization_config``, ``environment_factory``, ``train_dataset``, ``eval_dataset``, ``args`` (a GRPOConfig);
- the rest (``rollout_func``, replacing the recipe's ``rollout_func:``, ``optimizers``...) pass straight through.

Example:
    >>> from grpo_trl import build_trainer, load_recipe
    >>> def shorter(completions, **kwargs):
    ...     return [-len(str(c)) / 100 for c in completions]
    >>> trainer = build_trainer("recipes/demo/tiny-cpu.yaml", reward_funcs=[shorter])  # doctest: +SKIP
    >>> trainer.reward_func_names[-1]  # doctest: +SKIP
    'shorter'
"""

from __future__ import annotations

import inspect
import logging
from typing import Any

from grpo_trl.recipe import Problem, Recipe, RecipeError, load_recipe

logger = logging.getLogger("grpo_trl")


def _fail(recipe: Recipe, problems: list[tuple[str, str]]) -> None:
    if problems:
        raise RecipeError([Problem(recipe.file, key, message) for key, message in problems])


def recipe_problems(recipe: Recipe) -> list[Problem]:
    """Problems in the sections this module wires (tools, environment, quantization, chat template), no model load."""
    from grpo_trl.environments.registry import environment_problems, owns_reward
    from grpo_trl.models.chat_templates import resolve_template
    from grpo_trl.models.quantization import quantization_problems
    from grpo_trl.rollout import rollout_problems
    from grpo_trl.tools import tool_problems

    found = tool_problems(recipe.data.get("tools"))
    found += rollout_problems(recipe.data.get("rollout_func"))
    env = recipe.data.get("environment")
    env_problems = environment_problems(env)
    found += env_problems
    if any(s.get("name") == "environment" for s in recipe.rewards if isinstance(s, dict)):
        if env is None:
            found.append(
                (
                    "rewards",
                    "the 'environment' reward scores an environment's get_reward(): add an environment: section",
                )
            )
        elif not env_problems and owns_reward(env) is False:
            found.append(
                (
                    "rewards",
                    "the 'environment' reward scores an environment's get_reward(), and no environment in "
                    "environment: defines one (every row would score None): "
                    "add get_reward() or score with reward functions",
                )
            )
    if not env_problems:
        found += _routing_problems(recipe, env)
    model = recipe.model
    found += quantization_problems(model.get("quantization"), has_lora=bool(model.get("lora")))
    template = model.get("chat_template")
    if isinstance(template, str) and template.startswith("trl:"):
        try:
            resolve_template(template)
        except ValueError as exc:
            found.append(("model.chat_template", str(exc)))
    if not found and uses_tools(recipe):
        found += [("model.chat_template", m) for m in _template_problems_offline(recipe)]
    return [Problem(recipe.file, key, message) for key, message in found]


def _routing_problems(recipe: Recipe, env: Any) -> list[tuple[str, str]]:
    """Several environments: the data must name one per row (``environment`` column), as ``train`` requires."""
    from grpo_trl.data.shape import dataset_columns
    from grpo_trl.environments import is_multi
    from grpo_trl.errors import DataError

    if not is_multi(env):
        return []
    try:
        columns = dataset_columns(recipe.dataset, recipe.base_dir)
    except (DataError, KeyError):  # reported by the data checks
        return []
    if "environment" in columns:
        return []
    return [("environment", _route_message(sorted(env)))]


def _route_message(names: list[str]) -> str:
    return (
        f"several environments ({', '.join(names)}) need an 'environment' column naming one per row; "
        f"use a builder that sets it (data: {{builder: environment, environments: [{', '.join(names)}]}}: TRL's "
        "routing-only rows) or a single environment: {factory: ...}"
    )


def _template_problems_offline(recipe: Recipe) -> list[str]:
    """Template checks when the tokenizer is at hand without a download (local, cached or built-in); else at train."""
    from grpo_trl.models.chat_templates import resolve_template, template_problems

    name = str(recipe.model.get("name"))
    if name.startswith("builtin:"):
        from grpo_trl.models.tiny import builtin_tokenizer

        tokenizer = builtin_tokenizer(name)
    else:
        from transformers import AutoTokenizer

        local = recipe.base_dir / name
        try:
            tokenizer = AutoTokenizer.from_pretrained(str(local) if local.is_dir() else name, local_files_only=True)
        except (OSError, ValueError):
            logger.info("chat template of %s: checked when training starts (tokenizer not available offline)", name)
            return []
    template = recipe.model.get("chat_template")
    if template:
        tokenizer.chat_template = resolve_template(template, recipe.base_dir)
    return template_problems(tokenizer)


def describe_extras(recipe: Recipe) -> list[str]:
    """``check`` lines for tools, environments and quantization; ``warning:`` lines for what this machine lacks."""
    from grpo_trl.environments import is_multi
    from grpo_trl.models.quantization import hardware_problems
    from grpo_trl.tools.registry import tool_specs

    lines = []
    tools = [s["name"] for s in tool_specs(recipe.data.get("tools"))]
    if tools:
        lines.append(f"  tools               {', '.join(tools)}")
    env = recipe.data.get("environment")
    if env is not None:
        names = ", ".join(f"{k}: {v if isinstance(v, str) else v['factory']}" for k, v in env.items())
        lines.append(
            f"  environment         {names if is_multi(env) else env['factory'] if isinstance(env, dict) else env}"
        )
    quant = recipe.model.get("quantization")
    if quant:
        lines.append(f"  quantization        {', '.join(f'{k}={v}' for k, v in quant.items())}")
    for key, message in hardware_problems(quant):
        lines.append(f"warning: {recipe.file}: {key}: {message} (train stops here before loading the model)")
    return lines


def uses_tools(recipe: Recipe) -> bool:
    return bool(recipe.data.get("tools")) or recipe.data.get("environment") is not None


def check_template(recipe: Recipe, tokenizer) -> None:
    """``RecipeError`` when the tokenizer's chat template would break tool calling (TRL's own checks)."""
    from grpo_trl.models.chat_templates import template_problems

    _fail(recipe, [("model.chat_template", m) for m in template_problems(tokenizer)])


def check_environment_column(recipe: Recipe, columns: list[str], rows: Any) -> None:
    """With named environments, every row must name one of them in its ``environment`` column."""
    from grpo_trl.environments import is_multi

    section = recipe.data.get("environment")
    if not is_multi(section):
        return
    names = sorted(section)
    if "environment" not in columns:
        _fail(
            recipe,
            [("environment", _route_message(names))],
        )
    unknown = sorted({str(v) for v in rows["environment"]} - set(names))
    if unknown:
        _fail(
            recipe,
            [
                (
                    "environment",
                    f"rows name environment(s) {', '.join(map(repr, unknown))} that environment: does not "
                    f"define (it defines: {', '.join(names)}); add them or fix the data",
                )
            ],
        )


def _check_env_scores(recipe: Recipe, env: Any) -> None:
    """Without reward functions, an environment must score the rollouts (``get_reward``), as TRL requires; read from
    the instance grpo-trl probes anyway (``EnvironmentFactory.probe``, the one TRL's own probe then receives)."""
    factories = env.values() if isinstance(env, dict) else [env]
    instances = [getattr(f, "probe", f)() for f in factories]
    if not any(callable(getattr(type(i), "get_reward", None)) for i in instances):
        from grpo_trl.recipe.schema import REWARDS_HINT

        raise RecipeError(
            [
                Problem(
                    recipe.file,
                    "rewards",
                    "missing: no reward functions, and no environment defines get_reward(), so nothing would score "
                    "the rollouts",
                    f"list rewards ({REWARDS_HINT}), or give the environment a get_reward() method",
                )
            ]
        )


def build_trainer(recipe: Recipe | str, overrides: list[str] | tuple = (), *, config=None, **trainer_kwargs: Any):
    """The real ``trl.GRPOTrainer`` for ``recipe`` (a ``Recipe`` or a path), merged with ``trainer_kwargs``."""
    from trl import GRPOTrainer

    from grpo_trl.data import build_dataset
    from grpo_trl.data.render import Rendering
    from grpo_trl.environments import build_environment_factory
    from grpo_trl.models.quantization import bnb_config, hardware_problems
    from grpo_trl.models.reward_models import is_model_entry, processing_class
    from grpo_trl.tools import build_tools
    from grpo_trl.train import check_reward_columns, load_tokenizer, resolve_model

    if not isinstance(recipe, Recipe):
        recipe = load_recipe(recipe, overrides)
    accepted = set(inspect.signature(GRPOTrainer.__init__).parameters) - {"self"}
    unknown = sorted(set(trainer_kwargs) - accepted)
    if unknown:
        from grpo_trl.errors import suggest

        raise TypeError(
            f"GRPOTrainer takes no argument {unknown[0]!r}{suggest(unknown[0], sorted(accepted))}; "
            f"it takes: {', '.join(sorted(accepted))}"
        )
    kw = dict(trainer_kwargs)
    config = kw.pop("args", None) or config or recipe.to_grpo_config()
    quant = recipe.model.get("quantization")
    if quant and "quantization_config" not in kw:
        _fail(recipe, hardware_problems(quant))
        kw["quantization_config"] = bnb_config(quant)

    rewards, _weights = recipe.build_rewards(output_dir=config.output_dir)
    rm_classes = [processing_class(s, recipe.base_dir) if is_model_entry(s) else None for s in recipe.rewards]
    extra = kw.pop("reward_funcs", None) or []
    extra = extra if isinstance(extra, list) else [extra]
    extra_classes = kw.pop("reward_processing_classes", None) or [None] * len(extra)
    if extra:
        rewards = rewards + extra
        config.reward_weights = list(config.reward_weights or [1.0] * len(rm_classes)) + [1.0] * len(extra)
    classes = rm_classes + list(extra_classes if isinstance(extra_classes, list) else [extra_classes])

    model_path = resolve_model(recipe, config.output_dir)
    model = kw.pop("model", None) or model_path
    tokenizer = kw.pop("processing_class", None) or load_tokenizer(recipe, model_path)

    tools = build_tools(recipe.data.get("tools")) + list(kw.pop("tools", None) or [])
    env = kw.pop("environment_factory", None)
    if env is None and recipe.data.get("environment") is not None:
        scored = any(s.get("name") == "environment" for s in recipe.rewards if isinstance(s, dict))
        env = build_environment_factory(recipe.data["environment"], hide_reward=scored)
    if tools or env is not None:
        check_template(recipe, tokenizer)
    if not rewards and env is not None:
        _check_env_scores(recipe, env)

    train_dataset, eval_dataset = kw.pop("train_dataset", None), kw.pop("eval_dataset", None)
    if train_dataset is None:
        rendering = Rendering.of(tokenizer, tools, config.chat_template_kwargs, env)  # as GRPOTrainer renders prompts
        data = build_dataset(recipe.dataset, tokenizer=tokenizer, base_dir=recipe.base_dir, rendering=rendering)
        logger.info("dataset: %s", data.summary())
        train_dataset = data.train
        eval_dataset = eval_dataset or (data.eval if config.eval_strategy != "no" else None)
    check_reward_columns(recipe, rewards, train_dataset.column_names)
    if env is not None and recipe.data.get("environment") is not None:
        check_environment_column(recipe, train_dataset.column_names, train_dataset)
    if "rollout_func" not in kw and recipe.data.get("rollout_func") is not None:
        from grpo_trl.rollout import load_rollout

        kw["rollout_func"] = load_rollout(recipe.data["rollout_func"])
    if config.use_vllm and config.vllm_mode == "colocate":
        from grpo_trl.vllm_cpu import keep_weights_loadable

        keep_weights_loadable()

    return GRPOTrainer(
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
