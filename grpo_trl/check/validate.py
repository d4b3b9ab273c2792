"""Every problem of a coerced recipe in one pass, each naming its key and fix, found by the constructors train uses
(plugins, registries, TRL's ``GRPOConfig``); a section that failed coercion is skipped (reported once)."""

from __future__ import annotations

import logging
from pathlib import Path

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
    if "optim" in recipe.trainer:  # the optimizer as the Trainer picks it when training starts (bnb, torchao...)
        from transformers import Trainer

        try:
            Trainer.get_optimizer_cls_and_kwargs(config)
        except (ImportError, ValueError) as exc:  # a package missing here (bitsandbytes, torchao, galore...)
            return [Problem(recipe.file, "trainer.optim", first_line(exc), "install it, or drop optim")]
    return config_secrets(config, recipe.file)  # as training refuses it (RunSession): no secret in training_args.bin
