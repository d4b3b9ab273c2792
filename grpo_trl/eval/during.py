"""Held-out evaluation inside a training run (``heldout:``): before the first step, every ``every`` steps and at the
last, the live model answers the eval split's first ``limit`` prompts (or a benchmark's) on the main process, under
a forked RNG, with the run's vLLM when training has one, scored as ``grpo-trl eval`` scores; logged through
``transformers.Trainer.log`` (GRPOTrainer's would fold in the training metrics). docs/eval.md has the reference.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from transformers import Trainer, TrainerCallback

from grpo_trl import trl_adapter
from grpo_trl.data.image_tokens import is_processor, text_tokenizer
from grpo_trl.eval.backends import Generations, Sampling, decode_groups, generate_transformers, prompt_ids
from grpo_trl.monitor.heldout import GREEDY_KEY, PREFIX, TIME_KEY, ks

logger = logging.getLogger("grpo_trl")


class HeldoutEval(TrainerCallback):
    """Evaluate ``trainer``'s model on ``dataset`` as ``section`` (``heldout:``) says; ``score(ds, gens)``."""

    def __init__(self, trainer: Any, section: dict, dataset: Any, score: Callable[[Any, Generations], Any]):
        self.trainer, self.section, self.dataset, self.score = trainer, section, dataset, score
        config = trainer.args
        self.template = config.chat_template_kwargs or {}
        given = {k: section[k] for k in ("n", "max_new_tokens", "temperature", "seed", "batch_size")}
        self.sampling = Sampling.of_trainer(config, **given)
        # sampled as the trainer samples its rollouts (transformers' own default top_k of 50 would not be)
        knobs = {"top_k": config.top_k, "min_p": config.min_p, "repetition_penalty": config.repetition_penalty}
        fixed = ("max_new_tokens", "num_return_sequences", "pad_token_id", "do_sample", "temperature", "top_p")
        if not config.use_vllm:  # TRL gives generation_kwargs to transformers' generate only without vLLM
            knobs.update({k: v for k, v in (config.generation_kwargs or {}).items() if k not in fixed})
        self.sample_kwargs = {k: v for k, v in knobs.items() if v is not None}
        self.vllm = None if is_processor(trainer.processing_class) else trl_adapter.heldout_vllm(trainer)
        self.backend = "transformers" if self.vllm is None else f"vllm-{self.vllm.mode}"
        self.done: set[int] = set()

    def on_train_begin(self, args, state, control, **kwargs):
        if self.section["at_start"] and state.global_step == 0:  # a resumed run has its baseline in log_history
            self.evaluate(state)

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step % self.section["every"] == 0 or state.global_step == state.max_steps:
            should_log = control.should_log  # logging resets it: this step's training log must still be written
            self.evaluate(state)
            control.should_log = should_log
        return control

    def _generate(self, model: Any, prompts: list, sampling: Sampling) -> Generations:
        import torch

        cuda = model.device.type == "cuda"
        with torch.random.fork_rng(devices=[model.device.index or torch.cuda.current_device()] if cuda else []):
            torch.manual_seed(sampling.seed)
            tokenizer = self.trainer.processing_class
            if self.vllm is None:
                return generate_transformers(
                    model, tokenizer, prompts, sampling, template=self.template, progress=False, **self.sample_kwargs
                )
            trl_adapter.sync_vllm(self.trainer)  # the run's vLLM, holding this step's weights
            ids = [prompt_ids(tokenizer, p, self.template) for p in prompts]
            params = {"n": sampling.n, "temperature": sampling.temperature, "top_p": sampling.top_p}
            rows = trl_adapter.vllm_completions(self.vllm, ids, {**params, "max_tokens": sampling.max_new_tokens})
            return decode_groups(tokenizer, rows)

    def evaluate(self, state: Any) -> dict | None:
        """One evaluation at ``state.global_step`` (main process only), logged; returns the entry."""
        if not state.is_world_process_zero or state.global_step in self.done:
            return None
        self.done.add(state.global_step)
        start = time.perf_counter()
        model = self.trainer.accelerator.unwrap_model(self.trainer.model)
        tokenizer = text_tokenizer(self.trainer.processing_class)  # a VLM's processor: its tokenizer
        was_training, padding = model.training, tokenizer.padding_side
        prompts = list(self.dataset["prompt"])
        sampling = replace(self.sampling, seed=self.sampling.seed + state.global_step)
        logs: dict[str, float] = {}
        model.eval()
        try:
            if self.section["sampled"]:
                summary = self.score(self.dataset, self._generate(model, prompts, sampling)).summary
                logs.update({f"{PREFIX}pass@{k}": summary["pass@k"][str(k)]["estimate"] for k in ks(self.section)})
                logs[f"{PREFIX}reward"] = summary["reward_mean"]
            if self.section["greedy"]:
                gens = self._generate(model, prompts, replace(sampling, n=1, temperature=0.0))
                logs[GREEDY_KEY] = self.score(self.dataset, gens).summary["pass@1"]
        finally:
            model.train(was_training)
            tokenizer.padding_side = padding
        logs[f"{PREFIX}prompts"] = len(prompts)
        logs[TIME_KEY] = round(time.perf_counter() - start, 3)
        Trainer.log(self.trainer, logs)  # transformers' log, not GRPOTrainer's: see the module's docstring
        return logs


def install_heldout(trainer: Any, recipe: Any) -> HeldoutEval | None:
    """The recipe's ``heldout:`` section on ``trainer`` (None without one), and ``heldout.min_drop`` for the
    divergence alert when alerts are on."""
    if "heldout" not in recipe.data:
        return None
    from grpo_trl.errors import Problem, RecipeError
    from grpo_trl.eval.run import prompts_for
    from grpo_trl.eval.score import recipe_scorer
    from grpo_trl.monitor.callbacks import Alerts

    section = recipe.section("heldout")
    plugin = getattr(trainer.accelerator.state, "deepspeed_plugin", None)
    if trainer.is_fsdp_enabled or getattr(plugin, "zero_stage", 0) == 3:  # the main process alone would hang
        why = "evaluates on the main process alone, which cannot generate with sharded parameters (FSDP, ZeRO-3)"
        raise RecipeError([Problem(recipe.file, "heldout", why, "remove heldout: or train with DDP / ZeRO-1/2")])
    if section["benchmark"]:  # a standard benchmark's prompts, scored its own way (eval/benchmarks.py)
        from grpo_trl.eval.benchmarks import build

        data = section["data"] and str(recipe.base_dir / section["data"])
        bench = build(section["benchmark"], data, section["limit"], section["seed"])
        dataset, scorer = bench.dataset(text_tokenizer(trainer.processing_class)), bench.score
    else:  # check made sure the recipe has an eval split (monitor/heldout.py)
        dataset = prompts_for(recipe, None, trainer.processing_class, section["limit"])
        scorer = recipe_scorer(recipe, dataset.column_names, trainer.args.output_dir)
    callback = HeldoutEval(trainer, section, dataset, scorer)
    for cb in trainer.callback_handler.callbacks:
        if isinstance(cb, Alerts):
            cb.divergence.min_drop = section["min_drop"]
    trainer.add_callback(callback)
    kinds = ([f"{section['n']} samples"] if section["sampled"] else []) + (["greedy"] if section["greedy"] else [])
    what = f"benchmark {section['benchmark']}" if section["benchmark"] else "the eval split"
    logger.info(
        "heldout: %d prompts of %s every %d steps (%s) with %s",
        len(dataset), what, section["every"], ", ".join(kinds), callback.backend,
    )  # fmt: skip
    return callback
