"""Held-out evaluation inside a training run (``heldout:``): every ``every`` steps (and before the first, and at the
last) the live model answers the eval split's first ``limit`` prompts (or a benchmark's), scored as ``grpo-trl eval``
scores them, logged through ``transformers.Trainer.log`` (not GRPOTrainer's, which would fold in the training
metrics). It generates with the run's own vLLM when training does, else ``transformers`` on the live model, under a
forked RNG, on the main process only (docs/eval.md, "Held-out accuracy during training").
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from transformers import Trainer, TrainerCallback

from grpo_trl import trl_adapter
from grpo_trl.data.image_tokens import is_processor, text_tokenizer
from grpo_trl.eval.backends import Generations, Sampling, finish, generate_with_model, prompt_ids
from grpo_trl.eval.score import score
from grpo_trl.monitor.heldout import GREEDY_KEY, PREFIX, TIME_KEY, ks
from grpo_trl.recipe import Recipe

logger = logging.getLogger("grpo_trl")


class HeldoutEval(TrainerCallback):
    """Evaluate ``trainer``'s model on ``dataset`` (the eval split's rows) as ``section`` (``heldout:``) says."""

    def __init__(
        self,
        trainer: Any,
        recipe: Recipe,
        section: dict,
        dataset: Any,
        rewards: list,
        weights: list,
        scorer: Callable[[Any, Generations], Any] | None = None,
    ):
        self.trainer, self.recipe, self.section = trainer, recipe, section
        self.dataset, self.rewards, self.weights = dataset, rewards, weights
        # how a pass is scored: the recipe's rewards, or a benchmark's own (heldout.benchmark)
        self.score = scorer or (lambda ds, gens: score(recipe, rewards, weights, ds, gens))
        config = trainer.args
        self.template = config.chat_template_kwargs or {}
        temperature = section["temperature"]
        self.sampling = Sampling(
            n=section["n"],
            max_new_tokens=section["max_new_tokens"] or config.max_completion_length,
            temperature=config.temperature if temperature is None else float(temperature),
            top_p=config.top_p,
            seed=section["seed"],
            batch_size=section["batch_size"],
        )
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
            if self.vllm is not None:
                return self._generate_vllm(prompts, sampling)
            return generate_with_model(
                model,
                self.trainer.processing_class,
                prompts,
                sampling,
                template=self.template,
                progress=False,
                sample_kwargs=self.sample_kwargs,
            )

    def _generate_vllm(self, prompts: list, sampling: Sampling) -> Generations:
        """The run's vLLM, holding this step's weights, on the prompts' token ids as the trainer tokenizes them."""
        trl_adapter.sync_vllm(self.trainer)
        tokenizer = self.trainer.processing_class
        ids = [prompt_ids(tokenizer, p, self.template) for p in prompts]
        fixed = {"n": sampling.n, "temperature": sampling.temperature, "top_p": sampling.top_p}
        completions = trl_adapter.vllm_completions(self.vllm, ids, {**fixed, "max_tokens": sampling.max_new_tokens})
        done = [[finish(tokenizer, list(c)) for c in row] for row in completions]
        return Generations([[t for t, _ in row] for row in done], [[n for _, n in row] for row in done])

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
        seed = self.sampling.seed + state.global_step
        logs: dict[str, float] = {}
        model.eval()
        try:
            if self.section["sampled"]:
                gens = self._generate(model, prompts, Sampling(**{**vars(self.sampling), "seed": seed}))
                summary = self.score(self.dataset, gens).summary
                table = summary["pass@k"]
                logs.update({f"{PREFIX}pass@{k}": table[str(k)]["estimate"] for k in ks(self.section)})
                logs[f"{PREFIX}reward"] = summary["reward_mean"]
            if self.section["greedy"]:
                greedy = Sampling(**{**vars(self.sampling), "n": 1, "temperature": 0.0, "seed": seed})
                gens = self._generate(model, prompts, greedy)
                logs[GREEDY_KEY] = self.score(self.dataset, gens).summary["pass@1"]
        finally:
            model.train(was_training)
            tokenizer.padding_side = padding
        logs[f"{PREFIX}prompts"] = len(prompts)
        logs[TIME_KEY] = round(time.perf_counter() - start, 3)
        Trainer.log(self.trainer, logs)  # transformers' log, not GRPOTrainer's: see the module's docstring
        return logs


def install_heldout(trainer: Any, recipe: Recipe) -> HeldoutEval | None:
    """The recipe's ``heldout:`` section on ``trainer`` (None without one): the eval split's first ``limit`` rows,
    the recipe's rewards, and ``heldout.min_drop`` for the divergence alert when alerts are on."""
    if "heldout" not in recipe.data:
        return None
    from grpo_trl.check.rewards import build_rewards, column_problems
    from grpo_trl.errors import Problem, RecipeError
    from grpo_trl.eval.run import prompts_for, require_split
    from grpo_trl.eval.score import load_reward_models
    from grpo_trl.monitor.callbacks import Alerts

    section = recipe.section("heldout")
    if not section["benchmark"]:
        require_split(recipe, None, "evaluate on during training (heldout:)")
    plugin = getattr(trainer.accelerator.state, "deepspeed_plugin", None)
    if trainer.is_fsdp_enabled or getattr(plugin, "zero_stage", 0) == 3:  # the main process alone would hang
        why = "evaluates on the main process alone, which cannot generate with sharded parameters (FSDP, ZeRO-3)"
        raise RecipeError([Problem(recipe.file, "heldout", why, "remove heldout: or train with DDP / ZeRO-1/2")])
    if section["benchmark"]:  # a standard benchmark's prompts, scored its own way (eval/benchmarks.py)
        from grpo_trl.eval.benchmarks import build

        data = section["data"] and str(recipe.base_dir / section["data"])
        bench = build(section["benchmark"], data, section["limit"], section["seed"])
        dataset = bench.dataset(text_tokenizer(trainer.processing_class))
        callback = HeldoutEval(trainer, recipe, section, dataset, [], [], scorer=bench.score)
    else:
        dataset = prompts_for(recipe, None, trainer.processing_class, section["limit"])
        rewards, weights = build_rewards(recipe, output_dir=trainer.args.output_dir)
        problems = column_problems(recipe, rewards, dataset.column_names)
        if problems:
            raise RecipeError(problems)
        callback = HeldoutEval(trainer, recipe, section, dataset, load_reward_models(recipe, rewards), weights)
    for cb in trainer.callback_handler.callbacks:
        if isinstance(cb, Alerts):
            cb.divergence.min_drop = section["min_drop"]
    trainer.add_callback(callback)
    logger.info(
        "heldout: %d prompts of %s every %d steps (%s) with %s",
        len(dataset),
        f"benchmark {section['benchmark']}" if section["benchmark"] else "the eval split",
        section["every"],
        ", ".join(
            ([f"{section['n']} samples"] if section["sampled"] else []) + (["greedy"] if section["greedy"] else [])
        ),
        callback.backend,
    )
    return callback
