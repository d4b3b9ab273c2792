"""Scoring generated completions with the recipe's rewards (``Recipe.build_rewards``, wrapped as in training), the
same way whatever backend produced them. A completion *passes* when the correctness reward (the first that declares
``passes_at``, else the first reward function, else the first reward model) reaches that value; rewards see what TRL
gives them (a message list after a conversational prompt, the text after a standard one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from grpo_trl.eval.backends import Generations, is_standard
from grpo_trl.eval.passk import pass_at_k_table
from grpo_trl.recipe import Recipe
from grpo_trl.rewards.text import completion_text, extract_tag


def pass_rule(recipe: Recipe) -> tuple[str, float]:
    """``(reward name, threshold)`` that decides whether a completion passes."""
    from grpo_trl.models.reward_models import is_model_entry, model_label
    from grpo_trl.rewards.registry import pass_threshold, reward_label

    funcs = [spec for spec in recipe.rewards if not is_model_entry(spec)]
    for spec in funcs:  # the first reward that declares its pass threshold (register_reward(passes_at=))
        threshold = pass_threshold(spec["name"], spec.get("args") or {})
        if threshold is not None:
            return reward_label(spec["name"], spec.get("alias")), threshold
    if not funcs:
        return model_label(recipe.rewards[0]), 1.0
    return reward_label(funcs[0]["name"], funcs[0].get("alias")), 1.0


def load_reward_models(recipe: Recipe, rewards: list) -> list:
    """``Recipe.build_rewards()``'s rewards as ``score`` calls them: a reward model, there the path TRL would load,
    becomes a :class:`~grpo_trl.models.reward_models.RewardModel`; reward functions stay as they are."""
    from grpo_trl.models.reward_models import RewardModel, is_model_entry

    template_kwargs = recipe.grpo_kwargs().get("chat_template_kwargs")
    init_kwargs = recipe.model_init_kwargs()
    return [
        RewardModel.from_entry(
            spec, reward, recipe.base_dir, chat_template_kwargs=template_kwargs, model_init_kwargs=init_kwargs
        )
        if is_model_entry(spec)
        else reward
        for spec, reward in zip(recipe.rewards, rewards, strict=True)
    ]


def as_completion(prompt: Any, text: str) -> Any:
    """A completion as TRL hands it to rewards: a message list after a conversational prompt, else the text."""
    return text if is_standard(prompt) else [{"role": "assistant", "content": text}]


@dataclass
class Scored:
    """Per-completion ``rows`` (for ``eval_completions.jsonl``), per-prompt ``passed`` flags, and the ``summary``."""

    rows: list[dict]
    passed: list[list[bool]]
    summary: dict[str, Any]


def _mean(values: list) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def score(
    recipe: Recipe | None, rewards: list, weights: list[float], ds: Any, gens: Generations, rule: tuple | None = None
) -> Scored:
    """Score ``gens`` (``n`` texts per row of ``ds``) with ``rewards``; pass@k for every k <= n. ``rule``: the
    ``(reward name, threshold)`` a completion passes at (default: the recipe's, ``pass_rule``)."""
    prompts = list(ds["prompt"])
    n = len(gens.texts[0]) if gens.texts else 0
    flat_completions = [as_completion(p, t) for p, group in zip(prompts, gens.texts) for t in group]
    from transformers import TrainerState

    from grpo_trl.rewards.call import NOT_PASSED, call_sync

    columns = {c: [v for v in ds[c] for _ in range(n)] for c in ds.column_names if c not in NOT_PASSED}
    flat_prompts = [p for p in prompts for _ in range(n)]
    flat_lengths = [x for group in gens.lengths for x in group]
    trl_keywords = {  # what GRPOTrainer passes every reward besides the batch: a reward written for TRL reads them
        "trainer_state": TrainerState(),
        "log_extra": lambda column, values: None,
        "log_metric": lambda name, value: None,
    }
    scores = {  # an async reward (the judge) is run to completion
        reward.__name__: call_sync(
            reward,
            completions=flat_completions,
            prompts=flat_prompts,
            completion_ids=[[0] * k for k in flat_lengths],
            **columns,
            **trl_keywords,
        )
        for reward in rewards
    }
    pass_name, threshold = rule or pass_rule(recipe)
    rows, passed = [], []
    for i, prompt in enumerate(prompts):
        flags = []
        for j in range(n):
            k = i * n + j
            value = scores[pass_name][k]
            ok = value is not None and value >= threshold - 1e-9
            flags.append(ok)
            rows.append(
                {
                    "prompt_index": i,
                    "sample": j,
                    "prompt": prompt,
                    "completion": gens.texts[i][j],
                    "length": flat_lengths[k],
                    "rewards": {name: vals[k] for name, vals in scores.items()},
                    "passed": ok,
                }
            )
        passed.append(flags)
    table = pass_at_k_table(passed)
    totals = [sum(w * (s[k] or 0.0) for w, s in zip(weights, scores.values())) for k in range(len(flat_completions))]
    summary = {
        "prompts": len(prompts),
        "n": n,
        "pass_reward": pass_name,
        "pass_threshold": threshold,
        "pass@1": table[1]["estimate"] if table else 0.0,
        f"pass@{n}": table[n]["estimate"] if table else 0.0,
        "pass@k": {str(k): v for k, v in table.items()},
        "reward_mean": _mean(totals),
        "rewards": {name: _mean(vals) for name, vals in scores.items()},
        "mean_completion_length": _mean(flat_lengths),
        "format_failure_rate": _mean([float(extract_tag(completion_text(c)) is None) for c in flat_completions]),
        "generation_errors": len(gens.errors),
    }
    return Scored(rows, passed, summary)
