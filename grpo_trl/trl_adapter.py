"""The one module that touches TRL internals (private ``GRPOTrainer`` attributes, names ``trl`` does not export,
transformers' checkpoint rules); ``check_internals`` lists what the installed TRL lacks of them."""

from __future__ import annotations

import importlib
import inspect
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# GRPOTrainer's methods, or attributes its __init__ sets -> what grpo-trl needs them for
INTERNALS = {
    "_logs": "completion samples (prompt, completion, rewards, advantages of the last batch)",
    "_log_metric": "extra metrics on the next logged step (timing/generation_s)",
    "_generate": "timing of generation",
    "_get_train_sampler": "data.sampler's zero-variance-aware sampler",
    "_generate_and_score_completions": "data.dynamic_sampling's refill of zero-variance groups",
    "_calculate_rewards": "data.dynamic_sampling's zero-variance test (gathered rewards of a generation)",
    "_metrics": "data.dynamic_sampling's metrics (logged with TRL's own)",
    "vllm_generation": "held-out evaluation with the run's vLLM (heldout_vllm)",
    "_last_loaded_step": "held-out evaluation: the step whose weights vLLM holds (sync_vllm)",
}
LOGS_KEYS = ("prompt", "completion", "rewards", "advantages")
# "module:name" -> what grpo-trl needs it for: names in TRL modules that ``trl`` does not export.
MODULE_NAMES = {
    "trl.trainer.utils:RepeatSampler": "data.sampler's batch order (repeat_sampler)",
    "trl.scripts.vllm_serve:ScriptArguments": "the `grpo-trl serve` command (vllm_serve_command)",
    "trl.scripts.vllm_serve:build_command": "the `grpo-trl serve` command (vllm_serve_command)",
    "trl.chat_template_utils:is_chat_template_prefix_preserving": "tool-calling chat templates (prefix_preserving)",
    "trl.chat_template_utils:get_training_chat_template": "tool-calling chat templates (training_chat_template)",
    "trl.experimental.async_grpo:AsyncGRPOConfig": "the async_grpo: section (async_grpo)",
    "trl.experimental.async_grpo:AsyncGRPOTrainer": "the async_grpo: section (async_grpo)",
    "trl.experimental.async_grpo.async_grpo_trainer:round_lora_rank": "grpo-trl serve with async_grpo (async_grpo)",
}
# names the oldest supported TRL (1.0) lacks: only the feature that needs them fails there, with one error line
LATER_NAMES = {"trl.scripts.vllm_serve:build_command"} | {k for k in MODULE_NAMES if ".async_grpo" in k}


def checkpoint_step(name: str) -> int | None:
    """The step of a folder name the trainer resumes from (transformers' own pattern), else None."""
    from transformers.trainer_utils import _re_checkpoint

    match = _re_checkpoint.search(name)
    return int(match.group(1)) if match else None


def rotation_candidates(folder: str | Path) -> list[str]:
    """Names in ``folder`` that transformers' rotation (``save_total_limit``) may delete: every ``checkpoint-*``."""
    from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

    folder = Path(folder)
    return sorted(p.name for p in folder.glob(f"{PREFIX_CHECKPOINT_DIR}-*") if p.is_dir()) if folder.is_dir() else []


def trl_version() -> str:
    return importlib.import_module("trl").__version__


def _trl_name(key: str) -> Any:
    module, name = key.split(":")
    return getattr(importlib.import_module(module), name)


def pad(tensors: list, padding_value: int = 0, padding_side: str = "right") -> Any:
    """TRL's own ``pad``: the padding its trainer gives a generation batch."""
    return _trl_name("trl.trainer.utils:pad")(tensors, padding_value=padding_value, padding_side=padding_side)


def async_grpo(name: str) -> Any:
    """``AsyncGRPOConfig``, ``AsyncGRPOTrainer`` or ``round_lora_rank`` of ``trl.experimental.async_grpo``."""
    module = "trl.experimental.async_grpo" + (".async_grpo_trainer" if name == "round_lora_rank" else "")
    return _trl_name(f"{module}:{name}")


def check_module_names(names: dict[str, str] | None = None) -> list[str]:
    """What the installed TRL lacks of ``MODULE_NAMES``, one line each; empty when all is there."""
    missing = []
    for key, why in (MODULE_NAMES if names is None else names).items():
        try:
            _trl_name(key)
        except (ImportError, AttributeError):
            if names is None and key in LATER_NAMES:
                continue  # not in every supported TRL: vllm_serve_command says so when it is used
            missing.append(f"{key.replace(':', '.')} is gone (used for {why})")
    return missing


def check_internals(trainer_class: type) -> list[str]:
    """What ``trainer_class`` lacks of ``INTERNALS`` and TRL of ``MODULE_NAMES``, one line each."""
    missing = check_module_names()
    init_source = inspect.getsource(trainer_class.__init__)
    for name, why in INTERNALS.items():
        if not callable(getattr(trainer_class, name, None)) and f"self.{name} =" not in init_source:
            missing.append(f"GRPOTrainer.{name} is gone (used for {why})")
    if "_internal_call" not in inspect.signature(trainer_class.save_model).parameters:
        missing.append("Trainer.save_model() takes no _internal_call (used for the final save without a push)")
    missing += [f"GRPOTrainer._logs has no {key!r} entry" for key in LOGS_KEYS if f'"{key}"' not in init_source]
    return missing


def save_model_only(trainer: Any, output_dir: str) -> None:
    """``trainer.save_model`` without transformers' push (``report.card.publish`` pushes instead)."""
    push = getattr(trainer.args, "push_to_hub", False)
    trainer.save_model(output_dir, **({"_internal_call": True} if push else {}))


def last_batch(trainer: Any) -> dict[str, list] | None:
    """The last generation batch TRL kept: ``{prompt, completion, rewards: {name: [...]}, advantages}`` or None."""
    store = getattr(trainer, "_logs", None)
    if not store or not store.get("prompt"):
        return None
    batch = {key: list(store[key]) for key in ("prompt", "completion", "advantages")}
    return {**batch, "rewards": {name: list(values) for name, values in store["rewards"].items()}}


def train_sampler(trainer: Any) -> Any:
    """The sampler ``trainer`` would train with (TRL's ``RepeatSampler``, with its exact arguments)."""
    return trainer._get_train_sampler()


def repeat_sampler(order: Any, mini_repeat_count: int, batch_size: int, repeat_count: int) -> Any:
    """TRL's ``RepeatSampler`` over ``order``, unshuffled: positions into ``order`` in the order TRL batches them."""
    return _trl_name("trl.trainer.utils:RepeatSampler")(
        order, mini_repeat_count, batch_size, repeat_count, shuffle=False
    )


def vllm_serve_command(extra_args: list[str] | None = None, **script_args: Any) -> list[str]:
    """The argv ``trl vllm-serve`` runs for these ``ScriptArguments`` of ``trl.scripts.vllm_serve``."""
    try:
        build_command = _trl_name("trl.scripts.vllm_serve:build_command")
    except (ImportError, AttributeError):  # TRL 1.0 has no build_command (LATER_NAMES)
        from grpo_trl.errors import GenerationError

        why = f"TRL {trl_version()} cannot build the `trl vllm-serve` command"
        raise GenerationError(why, file="trl", key="version", fix="upgrade") from None
    arguments = _trl_name("trl.scripts.vllm_serve:ScriptArguments")(**script_args)
    return build_command(arguments, extra_args)


def prefix_preserving(tokenizer: Any) -> bool:
    """Whether the tokenizer's chat template keeps earlier turns unchanged when a tool result is added (TRL's test)."""
    return _trl_name("trl.chat_template_utils:is_chat_template_prefix_preserving")(tokenizer)


def training_chat_template(tokenizer: Any) -> str | None:
    """The training version of the tokenizer's chat template TRL swaps in for tool calling (None: it has none)."""
    return _trl_name("trl.chat_template_utils:get_training_chat_template")(tokenizer)


def use_train_sampler(trainer: Any, sampler: Any) -> None:
    """Make ``trainer`` draw its training batches from ``sampler`` instead of TRL's ``RepeatSampler``."""
    trainer._get_train_sampler = lambda dataset=None: sampler


def time_generation(trainer: Any, metric: str = "timing/generation_s") -> bool:
    """Wrap the trainer's generation so each call's duration is logged as ``metric``. False when not possible."""
    original = getattr(trainer, "_generate", None)
    log_metric = getattr(trainer, "_log_metric", None)
    if original is None or log_metric is None:
        return False

    def timed_generate(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            log_metric(metric, time.perf_counter() - start)

    trainer._generate = timed_generate
    return True


def wrap_generation(trainer: Any, wrapper: Callable[[Callable, list], dict]) -> None:
    """Route each generation batch through ``wrapper(generate, inputs)``; ``generate(inputs)`` returns TRL's output
    and the gathered rewards (all processes' completions x reward functions) its advantages came from."""
    original, calculate = trainer._generate_and_score_completions, trainer._calculate_rewards
    seen: list = []

    def recording(*args: Any, **kwargs: Any) -> Any:
        rewards = calculate(*args, **kwargs)
        seen.append(rewards)
        return rewards

    def generate(inputs: list) -> tuple[dict, Any]:
        seen.clear()
        output = original(inputs)
        return output, (seen[-1] if seen else None)

    trainer._calculate_rewards = recording
    trainer._generate_and_score_completions = lambda inputs: wrapper(generate, inputs)


def add_train_metric(trainer: Any, name: str, value: float) -> None:
    """Add ``value`` to the training metric ``name``, averaged and logged by TRL with its own on the next log."""
    trainer._metrics["train"][name].append(value)


def heldout_vllm(trainer: Any) -> Any | None:
    """The trainer's vLLM when held-out evaluation on the main process alone can use it; None: use transformers."""
    generation = getattr(trainer, "vllm_generation", None)
    if not getattr(trainer.args, "use_vllm", False) or generation is None:
        return None
    if generation.mode == "colocate" and (generation.tensor_parallel_size > 1 or generation.enable_sleep_mode):
        return None
    return generation


def sync_vllm(trainer: Any) -> None:
    """Load this step's weights into the trainer's vLLM unless it holds them already (TRL's own test and tag)."""
    if trainer.state.global_step != trainer._last_loaded_step:
        trainer.vllm_generation.sync_weights()
        trainer._last_loaded_step = trainer.state.global_step


def vllm_completions(generation: Any, prompts: list[list[int]], fixed: dict) -> list[list[list[int]]]:
    """``fixed["n"]`` completion ids per prompt from TRL's ``VLLMGeneration``, with the trainer's sampling knobs as TRL
    adds them, ``fixed`` (n, temperature, top_p, max_tokens) winning."""
    knobs = {"top_k": generation.top_k, "min_p": generation.min_p or 0.0}
    knobs["repetition_penalty"] = generation.repetition_penalty
    extra = {k: v for k, v in (generation.generation_kwargs or {}).items() if k not in fixed}
    n = fixed["n"]
    if generation.mode == "server":
        flat = generation.vllm_client.generate(prompts=prompts, generation_kwargs=extra, **knobs, **fixed)
        return [flat["completion_ids"][i * n : (i + 1) * n] for i in range(len(prompts))]
    from vllm import SamplingParams

    params = SamplingParams(**{**knobs, **extra, **fixed})
    outputs = generation.llm.generate([{"prompt_token_ids": ids} for ids in prompts], params, use_tqdm=False)
    return [[list(o.token_ids) for o in out.outputs] for out in outputs]


# GRPOConfig field -> the GenerationConfig keyword GRPOTrainer gives it (transformers' generate, without vLLM)
GENERATION_CONFIG_FIELDS = {"max_completion_length": "max_new_tokens", "temperature": "temperature"}
GENERATION_CONFIG_FIELDS |= {k: k for k in ("top_p", "top_k", "min_p", "repetition_penalty", "cache_implementation")}


def generation_config(args: Any, tokens: dict[str, Any] | None = None) -> Any:
    """The ``GenerationConfig`` GRPOTrainer builds from ``args`` without vLLM (``tokens``: pad/bos/eos ids), then
    ``args.generation_kwargs`` over it; raises what transformers raises there."""
    from transformers import GenerationConfig

    kwargs = {key: getattr(args, name) for name, key in GENERATION_CONFIG_FIELDS.items()}
    kwargs |= {"do_sample": True, **(tokens or {}), **(args.generation_kwargs or {})}
    return GenerationConfig(**kwargs, disable_compile=True)
