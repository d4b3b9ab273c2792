"""The plan: what a run would do (batch arithmetic, optimizer steps, generation), read from TRL's own ``GRPOConfig``;
``grpo-trl check`` prints it and tests compare it with what the trainer does."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from grpo_trl.recipe.async_grpo import plan_lines as async_plan_lines

if TYPE_CHECKING:
    from grpo_trl.recipe.core import Recipe


@dataclass(frozen=True)
class Plan:
    """Dataset rows and total optimizer steps for ``world_size`` processes; ``num_generations``,
    ``steps_per_generation``... are the ``config``'s own (TRL's ``GRPOConfig`` derives them)."""

    world_size: int
    dataset_rows: int | None
    dataset_rows_exact: bool
    total_optimizer_steps: int | None
    config: Any  # the trl.GRPOConfig built for this world size

    def __getattr__(self, name: str) -> Any:
        if name == "config":  # not set yet (copy, pickle)
            raise AttributeError(name)
        return getattr(self.config, name)

    @property
    def prompts_per_generation(self) -> int:
        return self.generation_batch_size // self.num_generations

    @property
    def micro_steps_per_generation(self) -> int:
        """Micro-steps between two generations (TRL's ``_prepare_inputs`` generates every this many)."""
        return self.steps_per_generation * self.num_iterations

    @property
    def optimizer_steps_per_generation(self) -> float:
        return self.micro_steps_per_generation / self.gradient_accumulation_steps


def make_plan(recipe: Recipe, world_size: int | None = None) -> Plan:
    """The ``Plan`` of a valid recipe for ``world_size`` processes (default: the recipe's ``launch``)."""
    from grpo_trl.data.shape import expected_size

    ws = world_size or recipe.world_size
    cfg = recipe.to_grpo_config(world_size=ws, planning=True)
    rows, exact = expected_size(recipe.dataset, recipe.base_dir)
    total = cfg.max_steps if cfg.max_steps > 0 else None if rows is None else total_steps(cfg, rows, ws)
    return Plan(ws, rows, exact, total, cfg)


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


def format_plan(recipe: Recipe, plan: Plan, world_size_given: bool) -> list[str]:
    """The lines ``grpo-trl check`` prints under ``OK``."""
    rows = plan.dataset_rows
    filters = [f"data.{k}" for k in ("max_prompt_tokens", "max_solution_tokens", "pass_rate") if recipe.dataset.get(k)]
    why = f"{', '.join(filters) or 'filters'} drop rows at train time; `grpo-trl data` counts them"
    from grpo_trl.check.machine import hub_dataset

    hub = hub_dataset(recipe.dataset)
    if rows is None:
        rows_s = "unknown (built at train time)"
    elif hub:  # what the builder says the Hub's split holds: not counted here
        rows_s = f"unknown here ({hub} publishes {rows}; counted when train downloads it)"
    else:
        rows_s = f"{rows}{'' if plan.dataset_rows_exact else f' at most ({why})'}"
    total = plan.total_optimizer_steps
    from grpo_trl.models.reward_models import is_model_entry, model_label

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


def heldout_lines(recipe: Recipe, plan: Plan) -> list[str]:
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
