"""Validate a coerced recipe: every problem at once, each with its key and fix. Builds nothing, loads no model.

Coercion (types, unknown keys, bounds) already ran when the ``Recipe`` was made; this adds the checks that need the
registries (plugins first, then builders and rewards), local files, and TRL's own ``GRPOConfig.__post_init__``.
A section that failed coercion is skipped here, so each mistake is reported once.
"""

from __future__ import annotations

import typing
from typing import TYPE_CHECKING, Any

from grpo_trl.errors import GrpoTrlError, Problem, suggest
from grpo_trl.recipe import schema
from grpo_trl.recipe.coerce import validate_value
from grpo_trl.run_dir import output_dir_problems

if TYPE_CHECKING:
    from grpo_trl.recipe.core import Recipe


def validate(recipe: Recipe, world_size: int | None = None) -> list[Problem]:
    """Every problem of ``recipe`` (coercion's first), without loading a model or building a dataset."""
    problems = list(recipe.problems)
    from grpo_trl.importer import peer_config_problems

    if peer_config_problems(recipe.data, recipe.file):
        return problems  # a TRL/open-r1 config: the one line pointing at `grpo-trl import` says it all
    bad = {p.key.split(".")[0] for p in problems}
    file = recipe.file
    if "plugins" not in bad:  # plugins register rewards and builders that the checks below look up
        problems += plugin_problems(recipe)
    if "model" not in bad:
        problems += model_problems(recipe)
    if "data" not in bad:
        problems += data_problems(recipe.dataset, file, "data")
    if "rewards" not in bad:
        problems += reward_problems(recipe)
    if not bad & {"generation", "trainer"}:
        problems += generation_problems(recipe)
    if not bad & {"plugins", "model", "rewards", "tools", "environment"}:
        from grpo_trl.build import recipe_problems  # tools, environment, quantization, trl: templates

        problems += recipe_problems(recipe)
    if "trainer" not in bad and "output_dir" in recipe.trainer:  # where checkpoints may go: grpo_trl.run_dir
        where = output_dir_problems(recipe.trainer["output_dir"], recipe.base_dir)
        problems += [Problem(file, "trainer.output_dir", message) for message in where]
    if not problems:
        problems += columns_check(recipe)
    if not problems:
        problems += trl_problems(recipe, world_size or recipe.world_size)
    if not problems:
        from grpo_trl.recipe.ready import readiness_problems

        problems += readiness_problems(recipe, world_size or recipe.world_size)
    return problems


def plugin_problems(recipe: Recipe) -> list[Problem]:
    from grpo_trl.rewards.registry import add_import_path, load_plugin

    add_import_path(recipe.base_dir)  # `module:function` rewards next to the recipe import
    out = []
    for i, plugin in enumerate(recipe.plugins):
        try:
            load_plugin(recipe.base_dir / plugin)
        except GrpoTrlError as exc:
            out += exc.located(recipe.file, f"plugins.{i}")
            continue
        warn_unregistered(recipe, i, plugin)
    return out


def warn_unregistered(recipe: Recipe, i: int, plugin: str) -> None:
    """A plugin that registered nothing: a warning naming its functions and both fixes."""
    import logging
    from pathlib import Path

    from grpo_trl.rewards.registry import plugin_unregistered

    named = {str(s.get("name", "")).rpartition(":")[2] for s in recipe.rewards if isinstance(s, dict)}
    funcs = [f for f in plugin_unregistered(recipe.base_dir / plugin) if f not in named]
    if funcs:
        logging.getLogger("grpo_trl.recipe").warning(
            "%s: plugins.%d: %s registers no reward but defines %s: decorate a reward with @register_reward "
            "(from grpo_trl import register_reward), or name it in rewards: as '%s:%s' (the recipe's folder is on "
            "the import path)",
            recipe.file,
            i,
            plugin,
            ", ".join(funcs),
            Path(str(plugin)).stem,
            funcs[0],
        )


def model_problems(recipe: Recipe) -> list[Problem]:
    model, file, out = recipe.model, recipe.file, []
    template = model.get("chat_template")
    if (
        template is not None
        and "{" not in template
        and not template.startswith("trl:")  # a template TRL ships: checked in grpo_trl.build with the tools
        and not (recipe.base_dir / template).is_file()
    ):
        out.append(
            Problem(
                file,
                "model.chat_template",
                f"file {template!r} not found",
                "give a path to a .jinja file (relative to the recipe) or the template text",
            )
        )
    lora = model.get("lora")
    if lora:
        import dataclasses

        from peft import LoraConfig

        names = [f.name for f in dataclasses.fields(LoraConfig) if f.init]
        out += [
            Problem(file, f"model.lora.{key}", f"not a peft.LoraConfig field{suggest(key, names)}")
            for key in lora
            if key not in names
        ]
    if model.get("tiny") and model.get("name") != schema.BUILTIN_TINY:
        out.append(Problem(file, "model.tiny", f"only used with name: {schema.BUILTIN_TINY}", "remove it"))
    return out


def data_problems(cfg: dict, file: str, prefix: str) -> list[Problem]:
    """Problems of a ``data:`` mapping (already coerced for the common options): builder, its options, prompt."""
    from grpo_trl.data.prompts import resolve_system_prompt
    from grpo_trl.data.registry import get_builder, list_builders, option_problems

    out: list[Problem] = [  # data.pass_rate / data.sampler (data/pass_rate.py, data/sampler.py)
        Problem(file, prefix + key[4:], message) for key, message in option_problems(cfg)
    ]
    if cfg.get("mixture") is not None:
        for key in cfg:
            if key not in schema.MIXTURE_KEYS:
                out.append(
                    Problem(
                        file,
                        f"{prefix}.{key}",
                        f"not a mixture option; mixture options: {', '.join(schema.MIXTURE_KEYS)}",
                    )
                )
        for i, part in enumerate(cfg["mixture"]):
            where = f"{prefix}.mixture.{i}"
            coerced, found = validate_value(schema.DataSection, part, file, where)
            if found:
                out += found
            elif "mixture" in coerced:
                out.append(Problem(file, f"{where}.mixture", "mixtures do not nest"))
            else:
                out += data_problems(coerced, file, where)
        return out
    names = [b.name for b in list_builders()]
    if not cfg.get("builder"):
        return [
            Problem(file, f"{prefix}.builder", f"missing; name a builder ({', '.join(names)}) or give data.mixture")
        ]
    try:
        builder = get_builder(cfg["builder"])
    except GrpoTrlError as exc:
        return exc.located(file, f"{prefix}.builder")
    options_model = schema.builder_options_model(builder)
    params = options_model.model_fields
    allowed = [*schema.COMMON_DATA_KEYS, *params, "weight"]
    options = {}
    for key, value in cfg.items():
        if key in params:
            options[key] = value
        elif key not in allowed:
            out.append(
                Problem(
                    file,
                    f"{prefix}.{key}",
                    f"unknown option for builder {builder.name!r}{suggest(key, allowed)}; "
                    f"options: {', '.join(sorted(allowed))}",
                )
            )
    for key, info in params.items():
        if info.is_required() and key not in cfg:
            out.append(Problem(file, f"{prefix}.{key}", f"required by builder {builder.name!r}"))
    if not out:
        _, found = validate_value(options_model, options, file, prefix)
        out += found
    try:
        resolve_system_prompt(cfg.get("system_prompt"))
    except GrpoTrlError as exc:
        out += exc.located(file, f"{prefix}.system_prompt")
    return out


def reward_problems(recipe: Recipe) -> list[Problem]:
    from grpo_trl.reward_models import is_model_entry, model_entry_problems, model_label
    from grpo_trl.rewards.registry import check_reward_args, reward_label

    file, out = recipe.file, []
    names: dict[str, int] = {}
    for i, spec in enumerate(recipe.rewards):
        key = f"rewards.{i}"
        if is_model_entry(spec):  # a reward model: its config is read, never its weights
            out += [Problem(file, k, m) for k, m in model_entry_problems(spec, key, recipe.base_dir)]
            names[model_label(spec)] = i
            continue
        if not spec.get("name"):
            out.append(
                Problem(
                    file,
                    f"{key}.name",
                    ("missing" if "name" not in spec else f"expected str, got {spec['name']!r}")
                    + ": a reward name, or model: <id or path> for a reward model",
                )
            )
            continue
        try:
            check_reward_args(spec["name"], reward_args(recipe, spec))
        except GrpoTrlError as exc:
            out += [
                Problem(file, f"{key}.{p.key}" if p.key else f"{key}.name", p.message, p.fix) for p in exc.problems
            ]
            continue
        label = reward_label(spec["name"], spec.get("alias"))
        if label in names:
            out.append(
                Problem(
                    file,
                    f"{key}.alias",
                    f"reward name {label!r} is already used by rewards.{names[label]}; TRL logs rewards by name",
                    "give one of them an alias",
                )
            )
        names[label] = i
    return out


def trainer_default(name: str) -> Any:
    """The installed TRL's default for GRPOConfig field ``name``."""
    return schema.trainer_model().model_fields[name].default


def reward_args(recipe: Recipe, spec: dict) -> dict:
    """The reward's args, with the trainer values it declares (``uses_trainer``) filled in when not given."""
    from grpo_trl.rewards.registry import reward_metadata

    args = dict(spec.get("args") or {})
    try:
        meta = reward_metadata(spec["name"])
    except GrpoTrlError:
        return args
    for arg, trainer_field in meta.get("uses_trainer", {}).items():
        args.setdefault(arg, recipe.trainer.get(trainer_field, trainer_default(trainer_field)))
    return args


def generation_problems(recipe: Recipe) -> list[Problem]:
    gen, trainer, file, out = recipe.generation, recipe.trainer, recipe.file, []
    backend = gen.get("backend") or "transformers"
    if backend not in schema.BACKENDS:
        out.append(
            Problem(
                file,
                "generation.backend",
                f"{backend!r} is not a backend{suggest(backend, schema.BACKENDS)}; use transformers or vllm",
            )
        )
    for key, trl_name in schema.GENERATION_FIELDS.items():
        if key in gen and trl_name in trainer and gen[key] != trainer[trl_name]:
            out.append(Problem(file, f"generation.{key}", f"conflicts with trainer.{trl_name}", "set it in one place"))
    if "backend" in gen and "use_vllm" in trainer and trainer["use_vllm"] != (backend == "vllm"):
        out.append(
            Problem(file, "generation.backend", "conflicts with trainer.use_vllm", "set generation.backend only")
        )
    if backend == "transformers" and gen.get("vllm_mode"):
        out.append(Problem(file, "generation.vllm_mode", "only applies with generation.backend: vllm"))
    return out


def columns_check(recipe: Recipe) -> list[Problem]:
    """Local data files exist and have their columns; every reward's columns are in the dataset."""
    from grpo_trl.data.registry import dataset_columns
    from grpo_trl.rewards.signature import plan_reward

    try:
        columns = dataset_columns(recipe.dataset, recipe.base_dir)
        named = [s for s in recipe.rewards if "name" in s]  # reward models read no columns
        rewards = [plan_reward(s["name"], alias=s.get("alias"), **reward_args(recipe, s)) for s in named]
    except GrpoTrlError as exc:
        return exc.located(recipe.file, "data")
    return column_problems(recipe, rewards, columns)


def column_problems(recipe: Recipe, rewards: list, columns: typing.Iterable[str]) -> list[Problem]:
    """One problem per reward that reads a column (``solution``, ``nums``...) that ``columns`` lack."""
    from grpo_trl.rewards.registry import required_columns
    from grpo_trl.rewards.signature import column_conflicts

    columns = set(columns) - {"prompt"}
    source = recipe.dataset.get("builder") or "mixture"
    problems = [Problem(recipe.file, key, message) for key, message in column_conflicts(rewards, columns)]
    for i, reward in enumerate(rewards):
        missing = [c for c in required_columns(reward) if c not in columns]
        if missing:
            problems.append(
                Problem(
                    recipe.file,
                    f"rewards.{i}",
                    f"reward {reward.__name__!r} reads column(s) {', '.join(missing)} that data ({source}) does "
                    f"not provide (it gives: {', '.join(sorted(columns)) or 'nothing'})",
                    "use a builder with those columns",
                )
            )
    return problems


def trl_problems(recipe: Recipe, world_size: int) -> list[Problem]:
    """Let TRL's own ``GRPOConfig.__post_init__`` check the batch arithmetic for ``world_size`` processes."""
    try:
        recipe.to_grpo_config(world_size=world_size, planning=True)
    except (ValueError, TypeError) as exc:
        msg = str(exc).strip().split("\n")[0]
        fix = ""
        if "divisible" in msg or "num_generations" in msg:
            fix = (
                f"world size {world_size}: per_device_train_batch_size x {world_size} processes x "
                "steps_per_generation must be a multiple of num_generations; change "
                "trainer.per_device_train_batch_size, trainer.gradient_accumulation_steps or trainer.num_generations"
            )
        return [Problem(recipe.file, "trainer", msg, fix)]
    return []
