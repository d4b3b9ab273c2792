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
REMOVE = f"remove it, or remove the {SECTION}: section"
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


def to_async_config(recipe: Any, *, world_size: int | None = None, planning: bool = False) -> Any:
    """A real ``AsyncGRPOConfig`` of the shared ``trainer:`` keys, the server's URL and ``async_grpo:``, made as
    ``to_grpo_config`` makes ``GRPOConfig`` (without CUDA: CPU, float32)."""
    accepted, gen = _fields(config_class()), recipe.generation
    kwargs = {k: v for k, v in recipe.grpo_kwargs().items() if k in accepted and v is not None}
    host, port = gen.get("server_host"), gen.get("server_port")
    if not gen.get("server_base_url") and (host or port):  # TRL's own defaults for the part not given
        kwargs["vllm_server_base_url"] = f"http://{host or 'localhost'}:{port or 8000}"
    kwargs.update(recipe.data.get(SECTION) or {})
    return recipe.to_grpo_config(world_size=world_size, planning=planning, cls=config_class(), **kwargs)


def async_problems(recipe: Any, world_size: int) -> list[Problem]:
    """What ``AsyncGRPOTrainer`` cannot honour in this recipe, then ``AsyncGRPOConfig``'s own checks."""
    data, gen, accepted = recipe.data, recipe.generation, _fields(config_class())
    why = "is a GRPOConfig field AsyncGRPOConfig does not have"
    found = [(f"trainer.{key}", why, REMOVE) for key in recipe.trainer if key not in accepted]
    if gen.get("backend") == "transformers" or gen.get("vllm_mode") == "colocate":
        key = "generation.backend" if gen.get("backend") == "transformers" else "generation.vllm_mode"
        found.append((key, "AsyncGRPOTrainer generates on a vLLM server", "use vllm_mode: server"))
    for dotted, why in UNSUPPORTED.items():
        section, _, key = dotted.partition(".")
        if ((data.get(section) or {}).get(key) if key else data.get(section)) is not None:
            found.append((dotted, why, REMOVE))
    for i, spec in enumerate(recipe.rewards):
        if float(spec.get("weight", 1.0)) != 1.0:
            why = "AsyncGRPOTrainer sums rewards unweighted (it has no reward_weights)"
            found.append((f"rewards[{i}].weight", why, "use 1.0, or scale inside the reward"))
        if spec.get("model"):
            why = "AsyncGRPOTrainer scores in a CPU-only child process and takes no reward_processing_classes"
            found.append((f"rewards[{i}].model", why, "use a reward function"))
    if "lm_head" in ((recipe.model.get("lora") or {}).get("target_modules") or []):
        why = "AsyncGRPOTrainer refuses an adapter on lm_head (its log-probs read the base weight)"
        found.append(("model.lora.target_modules", why, "remove lm_head"))
    if found:
        return [Problem(recipe.file, *one) for one in found]
    try:
        to_async_config(recipe, world_size=world_size, planning=True)
    except (ValueError, TypeError) as exc:
        return [Problem(recipe.file, SECTION, str(exc).strip().split("\n")[0])]
    return []


def _lora_flags(recipe: Any, max_staleness: int) -> list[str]:
    """vLLM's flags for an async LoRA run: the adapter's rank as TRL rounds it, ``max_staleness + 2`` adapters."""
    from grpo_trl.trl_adapter import async_grpo

    lora = recipe.model.get("lora")
    rank = max([int(lora.get("r", 8)), *(lora.get("rank_pattern") or {}).values()])
    rank = async_grpo("round_lora_rank")(rank)
    return ["--enable-lora", "--max-lora-rank", str(rank), "--max-loras", str(max_staleness + 2)]


# GRPOTrainer's plan lines that do not hold for AsyncGRPOTrainer (no generation batch; its own stop rule)
SYNC_ONLY = ("  generation batch", "                      ", "  optimizer steps")


def plan_lines(recipe: Any, world_size: int, dataset_rows: int | None, lines: list[str]) -> list[str]:
    """``grpo-trl check``'s plan ``lines``; for an ``async_grpo:`` recipe, the rollout arithmetic of
    ``AsyncGRPOTrainer.__init__`` replaces TRL's."""
    if not enabled(recipe):
        return lines
    cfg = to_async_config(recipe, world_size=world_size, planning=True)
    per_step = cfg.per_device_train_batch_size * cfg.gradient_accumulation_steps * world_size
    inflight = cfg.max_inflight_tasks if cfg.max_inflight_tasks >= 0 else max(cfg.max_staleness, 1) * per_step
    stop = str(cfg.max_steps) if cfg.max_steps > 0 else "unknown"
    if cfg.max_steps <= 0 and dataset_rows is not None:  # an epoch-bounded run stops after its prompt groups
        turns = cfg.max_tool_calling_iterations + 1 if cfg.max_tool_calling_iterations is not None else 32
        ceiling = math.ceil(cfg.num_train_epochs * dataset_rows * cfg.num_generations * turns / per_step)
        groups = math.ceil(cfg.num_train_epochs * dataset_rows)
        stop = f"after {groups} prompt groups (epochs x rows); max_steps {ceiling} is only a ceiling"
    lines = [line for line in lines if not line.startswith(SYNC_ONLY)] + [
        "  trainer             AsyncGRPOTrainer (trl.experimental): generation on the vLLM server, overlapped",
        f"  rollouts            {per_step} completions per optimizer step; up to {inflight}"
        f" requests in flight, {cfg.queue_maxsize} buffered",
        f"  staleness           weights pushed every {cfg.weight_sync_steps} step(s); samples more than"
        f" {cfg.max_staleness} version(s) old are dropped",
        f"  optimizer steps     {stop}",
    ]
    if recipe.model.get("lora"):
        flags = " ".join(_lora_flags(recipe, cfg.max_staleness))
        lines.append(f"  server LoRA         {flags} (max_staleness + 2: `grpo-trl serve` adds them)")
    return lines


def serve_extras(recipe: Any, extra: list[str] | None) -> tuple[list[str], dict[str, str]]:
    """Extra ``vllm serve`` arguments and environment for an ``async_grpo:`` recipe with LoRA (else ``extra``)."""
    extra = list(extra or [])
    if not enabled(recipe) or not recipe.model.get("lora"):
        return extra, {}
    cfg = to_async_config(recipe, world_size=recipe.world_size, planning=True)
    return _lora_flags(recipe, cfg.max_staleness) + extra, {"VLLM_ALLOW_RUNTIME_LORA_UPDATING": "1"}


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
