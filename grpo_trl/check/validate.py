"""Every problem of a coerced recipe in one pass, each naming its key and fix, found by the constructors train uses
(plugins, registries, TRL's ``GRPOConfig``); a section that failed coercion is skipped (reported once)."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from grpo_trl.check.model import first_line, model_problems
from grpo_trl.check.rewards import columns_check, reward_problems
from grpo_trl.data.build import streaming_problems
from grpo_trl.data.options import data_problems
from grpo_trl.errors import GrpoTrlError, Problem, config_secrets, located, suggest
from grpo_trl.monitor.heldout import heldout_problems
from grpo_trl.recipe.async_grpo import async_problems
from grpo_trl.recipe.core import Recipe
from grpo_trl.recipe.trl_schema import BACKENDS, GENERATION_FIELDS
from grpo_trl.registry import add_import_path, load_plugin, plugin_unregistered
from grpo_trl.run.directory import output_dir_problems
from grpo_trl.tables import peer_config_problems

_log = logging.getLogger("grpo_trl.recipe")


def validate(recipe: Recipe, world_size: int | None = None) -> list[Problem]:
    """Every problem of ``recipe`` (coercion's first), without loading a model or building a dataset."""
    problems = list(recipe.problems)
    if peer_config_problems(recipe.data, recipe.file):
        return problems  # a TRL/open-r1 config: the one line pointing at `grpo-trl import` says it all
    bad = {p.key.split(".")[0] for p in problems}
    file = recipe.file
    if "plugins" not in bad:  # plugins register rewards and builders that the checks below look up
        problems += plugin_problems(recipe)
    if "model" not in bad:
        problems += model_problems(recipe)
    if "data" not in bad:
        problems += data_problems(recipe.dataset, file, "data") + streaming_problems(
            recipe.dataset, recipe.trainer, file
        )
    if "rewards" not in bad:
        problems += reward_problems(recipe)
    if not bad & {"generation", "trainer"}:
        problems += generation_problems(recipe)
    if not bad & {"plugins", "model", "rewards", "tools", "environment", "rollout_func"}:
        from grpo_trl.check.extras import recipe_problems  # tools, environment, quantization, trl: templates

        problems += recipe_problems(recipe)
    if "heldout" in recipe.data and not bad & {"heldout", "data"}:  # held-out evaluation during training
        problems += heldout_problems(recipe.section("heldout"), recipe.dataset, file)
    if "launch" not in bad:
        from grpo_trl.check.memory import accelerate_config

        if why := accelerate_config(recipe)[1]:
            problems.append(Problem(file, "launch.accelerate_config", why, "name an accelerate config file"))
    if "trainer" not in bad and "output_dir" in recipe.trainer:  # where checkpoints may go: grpo_trl.run.directory
        where = output_dir_problems(recipe.trainer["output_dir"], recipe.base_dir)
        problems += [Problem(file, "trainer.output_dir", message) for message in where]
    if not blocked(problems, "plugins", "data", "rewards"):
        problems += columns_check(recipe)
    trl = ("trainer", "generation", "launch")  # what GRPOConfig is made of (and the rewards' weights)
    if blocked(problems, *trl) or "rewards" in bad:  # the checks below need sound sections, and only those
        return problems
    ws = world_size or recipe.world_size
    problems += trl_problems(recipe, ws)
    if not blocked(problems, *trl) and "async_grpo" in recipe.data:  # AsyncGRPOTrainer's own config and limits
        problems += async_problems(recipe, ws)
    if blocked(problems, *trl, "async_grpo"):
        return problems
    cfg = recipe.to_grpo_config(world_size=ws, planning=True)  # what TRL derives, built once for the checks below
    if recipe.dataset.get("dynamic_sampling") is not None and not blocked(problems, "data"):
        from grpo_trl.data.refill import whole_groups_problems  # each process's slice holds whole groups

        groups = whole_groups_problems(cfg.per_device_train_batch_size, cfg.steps_per_generation, cfg.num_generations)
        problems += located(groups, file)
    if not blocked(problems, "plugins", "data", "heldout"):
        from grpo_trl.check.ready import readiness_problems

        model_ok = not blocked(problems, "model", "tools", "environment", "rollout_func")
        problems += readiness_problems(recipe, cfg, model_ok)
    return problems


def blocked(problems: list[Problem], *sections: str) -> bool:
    """Whether a problem was found in one of ``sections`` (a check that reads them would only repeat it)."""
    return any(p.key.split(".")[0] in sections for p in problems)


def plugin_problems(recipe: Recipe) -> list[Problem]:
    add_import_path(recipe.base_dir)  # `module:function` rewards next to the recipe import
    out = []
    for i, plugin in enumerate(recipe.plugins):
        try:
            load_plugin(recipe.base_dir / plugin)
        except GrpoTrlError as exc:
            out += exc.located(recipe.file, f"plugins.{i}")
            continue
        # a plugin that registered nothing: a warning naming its functions and both fixes
        named = {str(s.get("name", "")).rpartition(":")[2] for s in recipe.rewards if isinstance(s, dict)}
        if funcs := [f for f in plugin_unregistered(recipe.base_dir / plugin) if f not in named]:
            _log.warning(
                "%s: plugins.%d: %s registers no reward but defines %s: decorate a reward with @register_reward "
                "(from grpo_trl import register_reward), or name it in rewards: as '%s:%s' (the recipe's folder is on "
                "the import path)",
                *(recipe.file, i, plugin, ", ".join(funcs), Path(str(plugin)).stem, funcs[0]),
            )
    return out


def generation_problems(recipe: Recipe) -> list[Problem]:
    gen, trainer, file, out = recipe.generation, recipe.trainer, recipe.file, []
    backend = gen.get("backend") or "transformers"
    if backend not in BACKENDS:
        why = f"{backend!r} is not a backend{suggest(backend, BACKENDS)}; use transformers or vllm"
        out.append(Problem(file, "generation.backend", why))
    for key, trl_name in GENERATION_FIELDS.items():
        if key in gen and trl_name in trainer and gen[key] != trainer[trl_name]:
            out.append(Problem(file, f"generation.{key}", f"conflicts with trainer.{trl_name}", "set it in one place"))
    if "backend" in gen and "use_vllm" in trainer and trainer["use_vllm"] != (backend == "vllm"):
        out.append(
            Problem(file, "generation.backend", "conflicts with trainer.use_vllm", "set generation.backend only")
        )
    if backend == "transformers" and gen.get("vllm_mode"):
        out.append(Problem(file, "generation.vllm_mode", "only applies with generation.backend: vllm"))
    strategy = trainer.get("hub_strategy") or "every_save"
    if trainer.get("push_to_hub") and strategy != "end" and trainer.get("save_strategy") != "no":
        _log.warning(  # TRL allows it, so it is allowed here: said, not refused
            "%s: trainer.hub_strategy: %r makes transformers upload the whole output_dir at each checkpoint "
            "(grpo-trl's logs, .grpo-trl/ and any file of yours in it); set trainer.hub_strategy: end and grpo-trl "
            "pushes only the final model with its model card",
            file,
            strategy,
        )
    if trainer.get("top_k") == -1 and not recipe.uses_vllm:  # vLLM reads -1 as "no top-k", as open-r1/verl do
        why = "-1 disables top-k only in vLLM; transformers' generate() refuses it at the first step"
        out.append(Problem(file, "trainer.top_k", why, "use 0 (no top-k, TRL's default)"))
    return out


def trl_problems(recipe: Recipe, world_size: int) -> list[Problem]:
    """Let TRL's own ``GRPOConfig.__post_init__`` check the batch arithmetic for ``world_size`` processes."""
    try:
        config = recipe.to_grpo_config(world_size=world_size, planning=True)
    except (ValueError, TypeError) as exc:
        msg = first_line(exc)
        fix = (
            f"world size {world_size}: per_device_train_batch_size x {world_size} processes x steps_per_generation "
            "must be a multiple of num_generations; change trainer.per_device_train_batch_size, "
            "trainer.gradient_accumulation_steps or trainer.num_generations"
        )
        return [Problem(recipe.file, "trainer", msg, fix if "divisible" in msg or "num_generations" in msg else "")]
    if problems := optimizer_problems(recipe, config) + generation_config_problems(recipe, config):
        return problems
    return config_secrets(config, recipe.file)  # as training refuses it (RunSession): no secret in training_args.bin


# the trainer keys the Trainer's optimizer and LR scheduler are built from
OPTIMIZER_KEYS = ("optim", "optim_args", "optim_target_modules", "learning_rate", "weight_decay", "adam_beta1")
OPTIMIZER_KEYS += ("adam_beta2", "adam_epsilon", "lr_scheduler_type", "lr_scheduler_kwargs", "warmup_steps")
OPTIMIZER_KEYS += ("warmup_ratio", "max_steps")


def build_optimizer(config: Any) -> None:
    """The optimizer and LR scheduler the Trainer builds from ``config``, around one dummy parameter."""
    import torch
    from transformers import Trainer, get_scheduler

    cls, kwargs = Trainer.get_optimizer_cls_and_kwargs(config)
    optimizer = cls([torch.nn.Parameter(torch.zeros(1))], **kwargs)
    steps = config.max_steps if config.max_steps > 0 else 1000
    warmup = config.get_warmup_steps(steps)
    get_scheduler(config.lr_scheduler_type, optimizer, warmup, steps, config.lr_scheduler_kwargs)


def optimizer_problems(recipe: Recipe, config: Any) -> list[Problem]:
    """The optimizer and scheduler train builds, built here: what torch/transformers refuse, naming the key(s)."""
    import copy
    import dataclasses

    try:
        build_optimizer(config)
        return []
    except ImportError as exc:  # a package missing here (bitsandbytes, torchao, galore...)
        return [Problem(recipe.file, "trainer.optim", first_line(exc), "install it, or drop optim")]
    except (ValueError, TypeError, KeyError) as exc:
        why = first_line(exc)
        if re.search(r"pass a `?model", why):  # GaLore, Apollo, LOMO: built around the model's layers at train
            return []
    except Exception as exc:  # noqa: BLE001 - one that needs a GPU or the model (galore...): built at train
        _log.info("the optimizer is built when training starts (%s)", first_line(exc))
        return []
    given = [k for k in OPTIMIZER_KEYS if k in recipe.trainer]
    defaults = {f.name: f.default for f in dataclasses.fields(config) if f.name in given}
    culprits = []
    for key in given:  # the keys that fail on their own (the others at TRL's defaults)
        alone = copy.copy(config)
        for other in given:
            if other != key and defaults[other] is not dataclasses.MISSING:
                setattr(alone, other, defaults[other])
        try:
            build_optimizer(alone)
        except Exception:  # noqa: BLE001 - fails with this key alone
            culprits.append(key)
    keys = culprits or given or ["optim"]
    where = ", ".join(f"trainer.{k}={recipe.trainer.get(k)!r}" for k in keys)
    fix = f"change {' or '.join(f'trainer.{k}' for k in keys)}"
    return [Problem(recipe.file, f"trainer.{keys[0]}", f"the optimizer/scheduler refuses {where}: {why}", fix)]


def generation_config_problems(recipe: Recipe, config: Any) -> list[Problem]:
    """The ``GenerationConfig`` TRL builds for transformers' generate (no vLLM): its unknown keys and refusals."""
    if config.use_vllm:  # generation_kwargs go to vLLM's SamplingParams instead
        return []
    from transformers import GenerationConfig

    from grpo_trl.trl_adapter import GENERATION_CONFIG_FIELDS, generation_config

    extra, file = config.generation_kwargs or {}, recipe.file
    known = sorted(GenerationConfig().to_dict())
    if unknown := [k for k in extra if k not in known]:
        why = "is not a keyword transformers' GenerationConfig takes"
        return [Problem(file, f"trainer.generation_kwargs.{k}", f"{why}{suggest(k, known)}") for k in unknown]
    try:
        generation_config(config)
        return []
    except (ValueError, TypeError) as exc:
        why = first_line(exc)
    names = re.findall(r"`(\w+)`", why)
    fields = {v: k for k, v in GENERATION_CONFIG_FIELDS.items()}
    key = next((f"generation_kwargs.{n}" for n in names if n in extra), None)
    key = key or next((fields[n] for n in names if fields.get(n) in recipe.trainer), "generation_kwargs")
    return [Problem(file, f"trainer.{key}", f"transformers' GenerationConfig refuses it: {why}", "fix or remove it")]
