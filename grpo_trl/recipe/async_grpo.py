"""``async_grpo:`` selects TRL's ``AsyncGRPOTrainer`` (generation on a vLLM server, overlapped with training); the
section holds the ``AsyncGRPOConfig`` fields ``GRPOConfig`` lacks; shared ``trainer:`` keys carry over."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import os
from collections.abc import Callable
from typing import Any

from pydantic import create_model

from grpo_trl.errors import Problem, RecipeError
from grpo_trl.fields import Section, dataclass_model

SECTION = "async_grpo"
# recipe features AsyncGRPOTrainer has no argument or field for: dotted key -> why
UNSUPPORTED = {
    "rollout_func": "AsyncGRPOTrainer generates through its own rollout worker (no rollout_func)",
    "model.quantization": "AsyncGRPOTrainer loads the model itself (no quantization_config)",
    "heldout": "AsyncGRPOTrainer does not evaluate during training",
    "data.dynamic_sampling": "the rollout queue replaces GRPOTrainer's generation batch (nothing to refill)",
    "data.sampler": "the rollout worker cycles the dataset itself (no sampler to replace)",
}


def config_class() -> type:
    """The installed ``AsyncGRPOConfig``; ``RecipeError`` naming ``async_grpo`` where this TRL cannot load it."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from grpo_trl.trl_adapter import async_grpo, trl_version

    try:
        return async_grpo("AsyncGRPOConfig")
    except (ImportError, AttributeError) as exc:
        why = f"this TRL ({trl_version()}) cannot load AsyncGRPOTrainer ({type(exc).__name__}: {exc})"
        raise RecipeError(
            [Problem("", "async_grpo", why, "pip install -U trl aiohttp, or remove async_grpo:")]
        ) from None


def _fields(cls: type) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(cls) if f.init}


@functools.lru_cache(maxsize=1)
def async_model() -> type[Section]:
    """``async_grpo:``: every ``AsyncGRPOConfig`` field that ``GRPOConfig`` lacks, typed by the installed TRL."""
    from trl import GRPOConfig

    try:
        cls = config_class()
    except RecipeError:  # the section takes nothing here; check says why when a recipe has one
        return create_model("AsyncGrpoSection", __base__=Section, __doc__="AsyncGRPOTrainer is not loadable here")
    return dataclass_model("AsyncGrpoSection", cls, async_model.__doc__, skip=_fields(GRPOConfig))


def enabled(recipe: Any) -> bool:
    return isinstance(recipe.data.get(SECTION), dict)


def _server_url(gen: dict) -> str | None:
    if gen.get("server_base_url"):
        return gen["server_base_url"]
    if gen.get("server_host") or gen.get("server_port"):
        return f"http://{gen.get('server_host') or 'localhost'}:{gen.get('server_port') or 8000}"
    return None


def async_kwargs(recipe: Any) -> dict[str, Any]:
    """``AsyncGRPOConfig`` keyword arguments: the shared ``trainer:`` keys, the server URL, ``async_grpo:``."""
    accepted = _fields(config_class())
    kwargs = {k: v for k, v in recipe.grpo_kwargs().items() if k in accepted and v is not None}
    url, gen = _server_url(recipe.generation), recipe.generation
    if url:
        kwargs["vllm_server_base_url"] = url
    if gen.get("server_timeout") is not None:
        kwargs["vllm_server_timeout"] = gen["server_timeout"]
    kwargs.update(recipe.data.get(SECTION) or {})
    return kwargs


def to_async_config(recipe: Any, *, world_size: int | None = None, planning: bool = False) -> Any:
    """A real ``AsyncGRPOConfig``, made as ``to_grpo_config`` makes ``GRPOConfig`` (without CUDA: CPU, float32)."""
    return recipe.to_grpo_config(world_size=world_size, planning=planning, cls=config_class(), **async_kwargs(recipe))


def async_problems(recipe: Any, world_size: int) -> list[Problem]:
    """What ``AsyncGRPOTrainer`` cannot honour in this recipe, then ``AsyncGRPOConfig``'s own checks."""
    file, out = recipe.file, []
    accepted = _fields(config_class())
    for key in recipe.trainer:
        if key not in accepted:
            why = "is a GRPOConfig field AsyncGRPOConfig does not have"
            out.append(Problem(file, f"trainer.{key}", why, f"remove it, or remove the {SECTION}: section"))
    gen = recipe.generation
    if gen.get("backend") == "transformers" or gen.get("vllm_mode") == "colocate":
        key = "generation.backend" if gen.get("backend") == "transformers" else "generation.vllm_mode"
        out.append(Problem(file, key, "AsyncGRPOTrainer generates on a vLLM server", "use vllm_mode: server"))
    for dotted, why in UNSUPPORTED.items():
        section, _, key = dotted.partition(".")
        value = (recipe.data.get(section) or {}).get(key) if key else recipe.data.get(section)
        if value is not None:
            out.append(Problem(file, dotted, why, f"remove it, or remove the {SECTION}: section"))
    for i, spec in enumerate(recipe.rewards):
        if float(spec.get("weight", 1.0)) != 1.0:
            why = "AsyncGRPOTrainer sums rewards unweighted (it has no reward_weights)"
            out.append(Problem(file, f"rewards[{i}].weight", why, "use 1.0, or scale inside the reward"))
        if spec.get("model"):
            why = "AsyncGRPOTrainer scores in a CPU-only child process and takes no reward_processing_classes"
            out.append(Problem(file, f"rewards[{i}].model", why, "use a reward function"))
    targets = (recipe.model.get("lora") or {}).get("target_modules") or []
    if "lm_head" in targets:
        why = "AsyncGRPOTrainer refuses an adapter on lm_head (its log-probs read the base weight)"
        out.append(Problem(file, "model.lora.target_modules", why, "remove lm_head"))
    if out:
        return out
    try:
        to_async_config(recipe, world_size=world_size, planning=True)
    except (ValueError, TypeError) as exc:
        return [Problem(file, SECTION, str(exc).strip().split("\n")[0])]
    return []


@dataclasses.dataclass(frozen=True)
class AsyncPlan:
    """The rollout pipeline's arithmetic, as ``AsyncGRPOTrainer.__init__`` derives it."""

    samples_per_step: int  # completions per optimizer step (per_device x accumulation x processes)
    max_inflight_tasks: int  # concurrent generation requests (auto: max(max_staleness, 1) x samples_per_step)
    max_staleness: int
    weight_sync_steps: int
    queue_maxsize: int
    max_steps: int | None  # None: unknown (dataset size unknown)
    epoch_groups: int | None  # prompt groups after which an epoch-bounded run stops
    min_loras: int | None  # vLLM --max-loras the server needs (LoRA only)
    max_lora_rank: int | None


def async_plan(recipe: Any, world_size: int, dataset_rows: int | None) -> AsyncPlan:
    from grpo_trl.trl_adapter import async_grpo

    cfg = to_async_config(recipe, world_size=world_size, planning=True)
    per_step = cfg.per_device_train_batch_size * cfg.gradient_accumulation_steps * world_size
    inflight = cfg.max_inflight_tasks if cfg.max_inflight_tasks >= 0 else max(cfg.max_staleness, 1) * per_step
    max_steps, groups = (cfg.max_steps if cfg.max_steps > 0 else None), None
    if max_steps is None and dataset_rows is not None:
        groups = math.ceil(cfg.num_train_epochs * dataset_rows)
        rows = cfg.max_tool_calling_iterations + 1 if cfg.max_tool_calling_iterations is not None else 32
        max_steps = math.ceil(cfg.num_train_epochs * dataset_rows * cfg.num_generations * rows / per_step)
    lora = recipe.model.get("lora")
    rank = max([int(lora.get("r", 8)), *(lora.get("rank_pattern") or {}).values()]) if lora else None
    return AsyncPlan(
        per_step,
        inflight,
        cfg.max_staleness,
        cfg.weight_sync_steps,
        cfg.queue_maxsize,
        max_steps,
        groups,
        cfg.max_staleness + 2 if lora else None,
        async_grpo("round_lora_rank")(rank) if rank else None,
    )


# GRPOTrainer's plan lines that do not hold for AsyncGRPOTrainer (no generation batch; its own stop rule)
SYNC_ONLY = ("  generation batch", "                      ", "  optimizer steps")


def plan_lines(recipe: Any, world_size: int, dataset_rows: int | None, lines: list[str]) -> list[str]:
    """``grpo-trl check``'s plan ``lines``; for an ``async_grpo:`` recipe, its rollout arithmetic replaces TRL's."""
    if not enabled(recipe):
        return lines
    p = async_plan(recipe, world_size, dataset_rows)
    stop = "unknown" if p.max_steps is None else str(p.max_steps)
    if p.epoch_groups is not None:
        stop = f"after {p.epoch_groups} prompt groups (epochs x rows); max_steps {p.max_steps} is only a ceiling"
    lines = [line for line in lines if not line.startswith(SYNC_ONLY)] + [
        "  trainer             AsyncGRPOTrainer (trl.experimental): generation on the vLLM server, overlapped",
        f"  rollouts            {p.samples_per_step} completions per optimizer step; up to {p.max_inflight_tasks}"
        f" requests in flight, {p.queue_maxsize} buffered",
        f"  staleness           weights pushed every {p.weight_sync_steps} step(s); samples more than"
        f" {p.max_staleness} version(s) old are dropped",
        f"  optimizer steps     {stop}",
    ]
    if p.min_loras is not None:
        lines.append(
            f"  server LoRA         --enable-lora --max-lora-rank {p.max_lora_rank} --max-loras {p.min_loras}"
            " (max_staleness + 2: `grpo-trl serve` adds them)"
        )
    return lines


def serve_extras(recipe: Any, extra: list[str] | None) -> tuple[list[str], dict[str, str]]:
    """Extra ``vllm serve`` arguments and environment for an ``async_grpo:`` recipe with LoRA (else ``extra``)."""
    extra = list(extra or [])
    if not enabled(recipe) or not recipe.model.get("lora"):
        return extra, {}
    p = async_plan(recipe, recipe.world_size, None)
    flags = ["--enable-lora", "--max-lora-rank", str(p.max_lora_rank), "--max-loras", str(p.min_loras)]
    return flags + extra, {"VLLM_ALLOW_RUNTIME_LORA_UPDATING": "1"}


def async_config(recipe: Any, config: Any) -> Any:
    """``config`` (a ``GRPOConfig``), or the recipe's ``AsyncGRPOConfig`` for an ``async_grpo:`` recipe."""
    return to_async_config(recipe) if enabled(recipe) and not hasattr(config, "max_staleness") else config


def trainer_class(recipe: Any) -> Callable[..., Any]:
    """``trl.GRPOTrainer``, or ``AsyncGRPOTrainer`` given only the arguments it takes (the others must be unset)."""
    from trl import GRPOTrainer

    if not enabled(recipe):
        return GRPOTrainer
    config_class()
    from grpo_trl.trl_adapter import async_grpo

    AsyncGRPOTrainer = async_grpo("AsyncGRPOTrainer")
    takes = set(inspect.signature(AsyncGRPOTrainer.__init__).parameters)

    def build(**kwargs: Any) -> Any:
        unset = [k for k, v in kwargs.items() if k not in takes and v is not None]
        if unset:
            raise TypeError(f"AsyncGRPOTrainer takes no {unset[0]!r} (remove the {SECTION}: section to use it)")
        return AsyncGRPOTrainer(**{k: v for k, v in kwargs.items() if k in takes})

    return build
