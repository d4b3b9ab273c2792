"""What ``grpo-trl check`` prints for a valid recipe: the plan read from TRL's own ``GRPOConfig``, tools,
environments, and ``warning:`` lines for what this machine lacks (a GPU, the Hub or its cache, vLLM or its server)."""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from grpo_trl.data.registry import builder_params, from_plugin, get_builder
from grpo_trl.data.shape import expected_size
from grpo_trl.environments import is_multi
from grpo_trl.generation import check_server, health_url, vllm_installed
from grpo_trl.models.reward_models import is_model_entry, model_label
from grpo_trl.recipe.async_grpo import plan_lines as async_plan_lines
from grpo_trl.recipe.core import Recipe
from grpo_trl.run.names import STATE
from grpo_trl.tools.registry import tool_specs


def make_plan(recipe: Recipe, world_size: int | None = None, cfg: Any = None) -> SimpleNamespace:
    """What a valid recipe does on ``world_size`` processes (default: its ``launch``): the fields of TRL's
    ``GRPOConfig`` (``config``, which derives them; ``cfg`` when built already), dataset rows, optimizer steps."""
    cfg = cfg or recipe.to_grpo_config(world_size=world_size or recipe.world_size, planning=True)
    ws, (rows, exact) = cfg.world_size, expected_size(recipe.dataset, recipe.base_dir)
    micro = cfg.steps_per_generation * cfg.num_iterations  # TRL's _prepare_inputs generates every this many
    total = cfg.max_steps if cfg.max_steps > 0 else None if rows is None else total_steps(cfg, rows, ws)
    return SimpleNamespace(
        **{f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)},
        config=cfg,
        world_size=ws,
        dataset_rows=rows,
        dataset_rows_exact=exact,
        total_optimizer_steps=total,
        prompts_per_generation=cfg.generation_batch_size // cfg.num_generations,
        micro_steps_per_generation=micro,
        optimizer_steps_per_generation=micro / cfg.gradient_accumulation_steps,
    )


def total_steps(cfg: Any, dataset_rows: int, world_size: int) -> int:
    """Optimizer steps of an epoch-bounded run, as TRL's ``RepeatSampler`` (dropping the last partial generation
    batch) and the Trainer's dataloader count them."""
    prompts = cfg.generation_batch_size // cfg.num_generations
    batches = dataset_rows // prompts
    if batches == 0:
        return 0  # the Trainer would loop over an empty dataloader: 0 steps, exit 0
    samples = batches * cfg.generation_batch_size * cfg.num_iterations * cfg.steps_per_generation
    per_dataloader_batch = cfg.per_device_train_batch_size * cfg.steps_per_generation * world_size
    len_dataloader = math.ceil(samples / per_dataloader_batch)
    updates = max(math.ceil(len_dataloader / cfg.gradient_accumulation_steps), 1)
    return math.ceil(cfg.num_train_epochs * updates)


def format_plan(recipe: Recipe, plan: SimpleNamespace, world_size_given: bool) -> list[str]:
    """The lines ``grpo-trl check`` prints under ``OK``."""
    rows = plan.dataset_rows
    filters = [f"data.{k}" for k in ("max_prompt_tokens", "max_solution_tokens", "pass_rate") if recipe.dataset.get(k)]
    why = f"{', '.join(filters) or 'filters'} drop rows at train time; `grpo-trl data` counts them"
    hub = hub_dataset(recipe.dataset)
    if rows is None:
        rows_s = "unknown (built at train time)"
    elif hub:  # what the builder says the Hub's split holds: not counted here
        rows_s = f"unknown here ({hub} publishes {rows}; counted when train downloads it)"
    else:
        rows_s = f"{rows}{'' if plan.dataset_rows_exact else f' at most ({why})'}"
    total = plan.total_optimizer_steps
    labels = [model_label(s) if is_model_entry(s) else s.get("alias") or s["name"] for s in recipe.rewards]
    rewards = ", ".join(f"{label} x{spec.get('weight', 1.0)}" for label, spec in zip(labels, recipe.rewards))
    if not rewards:  # an environment scores the rollouts (checked): TRL adds its get_reward(), named after the class
        rewards = "the environment's get_reward() x1.0 (TRL logs it as rewards/<class>/mean)"
    if not recipe.uses_vllm:
        generation = "transformers generate() on the training processes (no vLLM)"
    elif recipe.vllm_mode == "server":
        generation = (
            f"vLLM server mode: {recipe.launch.get('vllm_gpus', 1)} GPU(s) for vLLM (`grpo-trl serve`), "
            f"{plan.world_size} for training; launch training with num_processes={plan.world_size}"
        )
    else:
        generation = f"vLLM colocate mode: vLLM shares each of the {plan.world_size} training GPU(s)"
    completions = plan.per_device_train_batch_size * plan.world_size * plan.gradient_accumulation_steps
    lines = [
        f"  model               {recipe.model['name']}" + (" + LoRA" if recipe.lora_config() else ""),
        f"  data                {recipe.dataset.get('builder') or 'mixture'}: {rows_s}"
        + (" rows" if rows_s[0].isdigit() else ""),
        f"  rewards             {rewards}",
        f"  world size          {plan.world_size} training process(es)"
        + ("" if world_size_given else " (launch.num_processes; --world-size N to change)"),
        f"  per optimizer step  {completions / plan.num_generations:g} prompts x {plan.num_generations} generations"
        f" = {completions} completions",
        f"  generation batch    {plan.generation_batch_size} completions ({plan.prompts_per_generation} prompts)"
        f" generated every {plan.micro_steps_per_generation} micro-step(s)"
        f" = {plan.optimizer_steps_per_generation:g} optimizer step(s):",
        f"                      {plan.steps_per_generation} micro-batch(es) (steps_per_generation),"
        f" each trained on {plan.num_iterations} time(s) (num_iterations)",
        f"  optimizer steps     {'unknown' if total is None else total}"
        + ("" if plan.max_steps > 0 else "  (epochs x rows x generations x iterations / completions per step)"),
        f"  generation          {generation}",
        f"  output_dir          {plan.output_dir}",
        *heldout_lines(recipe, plan),
    ]
    return async_plan_lines(recipe, plan.world_size, rows, lines)  # async_grpo: its own arithmetic replaces TRL's


def heldout_lines(recipe: Recipe, plan: SimpleNamespace) -> list[str]:
    """What one ``heldout:`` evaluation costs and how many the run makes (nothing without the section)."""
    if "heldout" not in recipe.data:
        return []
    h, total = recipe.section("heldout"), plan.total_optimizer_steps
    per = (h["n"] if h["sampled"] else 0) + (1 if h["greedy"] else 0)
    tokens = h["max_new_tokens"] or plan.max_completion_length
    evaluations = None if total is None else total // h["every"] + int(h["at_start"]) + int(total % h["every"] > 0)
    count = "" if evaluations is None else f": {evaluations} in all"
    return [
        f"  heldout             up to {h['limit']} eval prompts x {per} = {h['limit'] * per} completions"
        f" of <= {tokens} tokens every {h['every']} steps{' and before the first' if h['at_start'] else ''}{count}"
    ]


def hub_dataset(cfg: dict) -> str | None:
    """The Hub dataset the ``data:`` section downloads (``None``: generated or local; a mixture: its first part)."""
    if cfg.get("mixture"):
        return next(filter(None, (hub_dataset(part) for part in cfg["mixture"])), None)
    builder = get_builder(cfg["builder"])
    params = builder_params(builder)
    if from_plugin(builder) or cfg.get("path") or cfg.get("source") == "generate" or "source" not in params:
        return None
    source = cfg.get("source") or params.get("source")
    return source if isinstance(source, str) and source and not Path(source).expanduser().exists() else None


def hub_model(name: str, base_dir: Path) -> str | None:
    """``name`` when it is a Hub id (not built in, not a local folder)."""
    local = name.startswith("builtin:") or Path(name).expanduser().exists() or (base_dir / name).exists()
    return None if local else name


def describe_extras(recipe: Recipe, config: Any = None) -> list[str]:
    """Lines on tools, environments and quantization; ``warning:`` for what this machine lacks; a run in output_dir."""
    import torch
    from huggingface_hub import constants
    from huggingface_hub.file_download import repo_folder_name

    lines, out, env, quant = [], [], recipe.data.get("environment"), recipe.model.get("quantization")
    config = config or recipe.to_grpo_config(planning=True)
    if tools := [s["name"] for s in tool_specs(recipe.data.get("tools"))]:
        lines.append(f"  tools               {', '.join(tools)}")
    if is_multi(env):  # named environments: name: factory each
        text = ", ".join(f"{k}: {v if isinstance(v, str) else v['factory']}" for k, v in env.items())
        lines.append(f"  environment         {text}")
    elif env is not None:
        lines.append(f"  environment         {env['factory'] if isinstance(env, dict) else env}")
    if quant:
        lines.append(f"  quantization        {', '.join(f'{k}={v}' for k, v in quant.items())}")
    gpu, trainer = torch.cuda.is_available(), recipe.trainer
    for key in ("bf16", "fp16") if not gpu else ():
        if trainer.get(key) is True:
            out.append(f"trainer.{key}: true needs a CUDA GPU, which this machine lacks; on CPU set {key}: false")
    if quant and not gpu:
        out.append("model.quantization needs a CUDA GPU (bitsandbytes), which this machine lacks")
    if quant and importlib.util.find_spec("bitsandbytes") is None:
        out.append("model.quantization needs bitsandbytes, not installed here: pip install 'grpo-trl[qlora]'")
    if recipe.uses_vllm:
        out += _vllm_warnings(recipe, config, gpu)
    if trainer.get("push_to_hub"):
        from huggingface_hub import get_token

        if constants.HF_HUB_OFFLINE or get_token() is None:  # transformers creates the repo when the trainer is made
            out.append(
                "trainer.push_to_hub: train creates the Hub repo when it starts, and this machine has "
                + ("HF_HUB_OFFLINE set" if constants.HF_HUB_OFFLINE else "no Hub token")
                + ": set HF_TOKEN (or `hf auth login`) where the Hub answers, or push_to_hub: false"
            )
    hub = [("model.name", hub_model(str(recipe.model.get("name")), recipe.base_dir), "model")]
    hub += [("data", hub_dataset(recipe.dataset), "dataset")]
    for key, repo, kind in hub:
        try:
            cached = (
                not repo or (Path(constants.HF_HUB_CACHE) / repo_folder_name(repo_id=repo, repo_type=kind)).is_dir()
            )
        except ValueError:  # not a valid repo id: the loader says so when train builds it
            cached = False
        if not cached:
            flag = " --repo-type dataset" if kind == "dataset" else ""
            out.append(
                f"{key}: {repo} is a Hub {kind} not in the local cache, and HF_HUB_OFFLINE is set: train cannot "
                f"download it; unset HF_HUB_OFFLINE, or on a connected machine `hf download {repo}{flag}`"
                if constants.HF_HUB_OFFLINE
                else f"{key}: {repo} is downloaded from the Hugging Face Hub when train starts (not cached here)"
            )
    return lines + [f"warning: {recipe.file}: {line}" for line in out] + _existing_run(recipe, config)


def _vllm_warnings(recipe: Recipe, config: Any, gpu: bool) -> list[str]:
    if recipe.vllm_mode == "colocate":
        if not vllm_installed():
            return ["generation.backend: vllm is not installed here: pip install 'grpo-trl[vllm]' (GPU machines)"]
        return [] if gpu else ["generation.backend: vllm colocated with training needs a CUDA GPU here"]
    server = {k: getattr(config, f"vllm_{k}") for k in ("server_host", "server_port", "server_base_url")}
    url = health_url({**server, **recipe.generation})
    if not any(host in url for host in ("://localhost", "://127.0.0.1", "://0.0.0.0")):
        return []  # a server elsewhere: train checks it answers before loading the model
    ok, why = check_server(url, 0.5)
    return [] if ok else [f"generation: no vLLM server at {url} ({why}); start it with `grpo-trl serve {recipe.file}`"]


def _existing_run(recipe: Recipe, config: Any) -> list[str]:
    from transformers.trainer_utils import get_last_checkpoint

    folder = (Path.cwd() / os.path.expanduser(str(config.output_dir))).resolve()
    if not folder.is_dir():
        return []
    last = get_last_checkpoint(str(folder))
    if not (last or (folder / STATE).exists() or (folder / "trainer_state.json").exists()):
        return []
    at = f" (last checkpoint: {Path(last).name})" if last else ""
    return [
        f"note: trainer.output_dir {folder} holds a run{at}: `grpo-trl train {recipe.file} --resume` continues it, "
        "`--overwrite` starts again"
    ]
