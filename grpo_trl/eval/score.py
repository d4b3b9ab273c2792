"""The recipe's rewards on generated completions, called as TRL calls them, whatever backend made them. A completion
*passes* when the correctness reward (the first declaring ``passes_at``, else the first function, else the first
reward model) reaches its threshold; pass@k by the unbiased estimator of Chen et al. (2021), 1 - C(n-c, k) / C(n, k)
as the paper's product, with a normal interval over problems.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from statistics import NormalDist, fmean, stdev
from typing import Any

from grpo_trl.eval.backends import Generations, is_standard
from grpo_trl.recipe import Recipe
from grpo_trl.rewards.text import completion_text, extract_tag


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one problem with ``n`` samples, ``c`` of them passing (``1 <= k <= n``)."""
    if not all(isinstance(v, int) for v in (n, c, k)) or not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need integers 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1)) if n - c >= k else 1.0


def pass_at_k_table(passed: list[list[bool]], confidence: float = 0.95) -> dict[int, dict]:
    """``{k: {"estimate", "stderr", "ci_low", "ci_high"}}`` for every ``k`` up to the fewest samples of a problem;
    the interval is ``estimate ± z * stderr`` over problems, clipped to [0, 1]."""
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    table: dict[int, dict] = {}
    for k in range(1, min(map(len, passed), default=0) + 1):
        values = [pass_at_k(len(p), sum(map(bool, p)), k) for p in passed]
        mean = math.fsum(values) / len(values)
        stderr = stdev(values) / math.sqrt(len(values)) if len(values) > 1 else None
        low, high = (None, None) if stderr is None else (max(0.0, mean - z * stderr), min(1.0, mean + z * stderr))
        table[k] = {"estimate": mean, "stderr": stderr, "ci_low": low, "ci_high": high}
    return table


def pass_rule(recipe: Recipe) -> tuple[str, float]:
    """``(reward name, threshold)`` that decides whether a completion passes."""
    from grpo_trl.models.reward_models import is_model_entry, model_label
    from grpo_trl.rewards.registry import pass_threshold, reward_label

    funcs = [spec for spec in recipe.rewards if not is_model_entry(spec)]
    for spec in funcs:
        if (threshold := pass_threshold(spec["name"], spec.get("args") or {})) is not None:
            return reward_label(spec["name"], spec.get("alias")), threshold
    return (reward_label(funcs[0]["name"], funcs[0].get("alias")) if funcs else model_label(recipe.rewards[0])), 1.0


def load_reward_models(recipe: Recipe, rewards: list) -> list:
    """The recipe's rewards as ``score`` calls them: a reward model entry loaded as TRL would load it."""
    from grpo_trl.models.reward_models import RewardModel, is_model_entry

    kwargs = {
        "chat_template_kwargs": recipe.grpo_kwargs().get("chat_template_kwargs"),
        "model_init_kwargs": recipe.model_init_kwargs(),
    }
    return [
        RewardModel(spec, reward, recipe.base_dir, **kwargs) if is_model_entry(spec) else reward
        for spec, reward in zip(recipe.rewards, rewards, strict=True)
    ]


def recipe_scorer(
    recipe: Recipe, columns: list[str], output_dir: str | None = None
) -> Callable[[Any, Generations], Scored]:
    """``score`` with the recipe's rewards, built and checked against the data's ``columns`` once."""
    from grpo_trl.check.rewards import build_rewards, column_problems
    from grpo_trl.errors import RecipeError

    rewards, weights = build_rewards(recipe, output_dir=output_dir)
    if problems := column_problems(recipe, rewards, columns):
        raise RecipeError(problems)
    rewards = load_reward_models(recipe, rewards)
    return lambda ds, gens: score(recipe, rewards, weights, ds, gens)


@dataclass
class Scored:
    """Per-completion ``rows`` (``eval_completions.jsonl``), per-prompt ``passed`` flags, and the ``summary``."""

    rows: list[dict]
    passed: list[list[bool]]
    summary: dict[str, Any]


def _mean(values: list) -> float | None:
    found = [v for v in values if v is not None]
    return fmean(found) if found else None


def score(
    recipe: Recipe | None, rewards: list, weights: list[float], ds: Any, gens: Generations, rule: tuple | None = None
) -> Scored:
    """Score ``gens`` (``n`` texts per row of ``ds``); pass@k for every k <= n. ``rule``: ``(reward, threshold)``
    a completion passes at (default: the recipe's ``pass_rule``)."""
    from transformers import TrainerState

    from grpo_trl.rewards.call import NOT_PASSED, call_sync

    prompts = list(ds["prompt"])
    n = len(gens.texts[0]) if gens.texts else 0
    flat = [(i, j, p) for i, p in enumerate(prompts) for j in range(n)]
    completions = [
        gens.texts[i][j] if is_standard(p) else [{"role": "assistant", "content": gens.texts[i][j]}]
        for i, j, p in flat
    ]  # as TRL hands them to rewards: the text after a standard prompt, a message list after a conversation
    lengths = [x for group in gens.lengths for x in group]
    columns = {c: [v for v in ds[c] for _ in range(n)] for c in ds.column_names if c not in NOT_PASSED}
    trl_keywords = {  # what GRPOTrainer passes every reward besides the batch: a reward written for TRL reads them
        "trainer_state": TrainerState(),
        "log_extra": lambda column, values: None,
        "log_metric": lambda name, value: None,
    }
    scores = {  # an async reward (the judge) is run to completion
        reward.__name__: call_sync(
            reward, completions=completions, prompts=[p for *_, p in flat],
            completion_ids=[[0] * k for k in lengths], **columns, **trl_keywords,
        )
        for reward in rewards
    }  # fmt: skip
    pass_name, threshold = rule or pass_rule(recipe)
    ok = [v is not None and v >= threshold - 1e-9 for v in scores[pass_name]]
    rows = [
        {"prompt_index": i, "sample": j, "prompt": p, "completion": gens.texts[i][j], "length": lengths[k],
         "rewards": {name: vals[k] for name, vals in scores.items()}, "passed": ok[k]}
        for k, (i, j, p) in enumerate(flat)
    ]  # fmt: skip
    passed = [ok[i * n : (i + 1) * n] for i in range(len(prompts))]
    table = pass_at_k_table(passed)
    totals = [sum(w * (s[k] or 0.0) for w, s in zip(weights, scores.values())) for k in range(len(flat))]
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
        "mean_completion_length": _mean(lengths),
        "format_failure_rate": _mean([float(extract_tag(completion_text(c)) is None) for c in completions]),
        "generation_errors": len(gens.errors),
        **({"generation_error_examples": gens.errors[:5]} if gens.errors else {}),
    }
    return Scored(rows, passed, summary)
