"""``grpo-trl eval``: sample ``n`` completions per prompt, score them with the recipe's rewards, report pass@k.

Generation uses transformers' ``generate`` (batched, with a progress bar); the scores come from the same rewards,
wrapped the same way, as in training. Outputs in ``output_dir`` (default: the model folder):

- ``eval.json``: per-reward mean, total weighted reward, pass@1, pass@n, mean completion length (tokens),
  format-failure rate (completions without an ``<answer>`` block), counts;
- ``eval_completions.jsonl``: one row per completion with its rewards and whether it passed.

A completion *passes* when the recipe's correctness reward (the first of ``countdown``, ``accuracy``, ``gsm8k`` it
uses, else its first reward) reaches that reward's full-credit value (1.0; for ``gsm8k`` its ``numeric`` credit, a
correct number either way). pass@1 is the mean pass rate over all completions, pass@n the fraction of prompts with at
least one passing completion among their ``n``.

Example:
    >>> from grpo_trl.evaluate import pass_at
    >>> pass_at([[True, False], [False, False]])
    (0.25, 0.5)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from grpo_trl.recipe import Recipe
from grpo_trl.rewards.text import completion_text, extract_tag

CORRECTNESS_REWARDS = ("countdown", "accuracy", "gsm8k")


def pass_at(passed: list[list[bool]]) -> tuple[float, float]:
    """(pass@1, pass@n) from per-prompt lists of pass flags."""
    if not passed:
        return 0.0, 0.0
    p1 = sum(sum(p) / len(p) for p in passed) / len(passed)
    pn = sum(any(p) for p in passed) / len(passed)
    return p1, pn


def _pass_rule(recipe: Recipe) -> tuple[str, float]:
    from grpo_trl.rewards.registry import reward_label

    for wanted in CORRECTNESS_REWARDS:
        for spec in recipe.rewards:
            if spec["name"] == wanted:
                threshold = float((spec.get("args") or {}).get("numeric", 1.5)) if wanted == "gsm8k" else 1.0
                return reward_label(spec["name"], spec.get("alias")), threshold
    first = recipe.rewards[0]
    return reward_label(first["name"], first.get("alias")), 1.0


def _generate(
    model_path: str,
    tokenizer: Any,
    prompts: list,
    n: int,
    max_new_tokens: int,
    temperature: float,
    batch_size: int,
    seed: int,
) -> tuple[list[list[str]], list[list[int]]]:
    import torch
    from tqdm.auto import tqdm
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_pretrained(model_path)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model.to(device).eval()
    tokenizer.padding_side = "left"
    texts, lengths = [], []
    for start in tqdm(range(0, len(prompts), batch_size), desc="generating", unit="batch"):
        batch = prompts[start : start + batch_size]
        rendered = [tokenizer.apply_chat_template(p, tokenize=False, add_generation_prompt=True) for p in batch]
        enc = tokenizer(rendered, return_tensors="pt", padding=True, add_special_tokens=False).to(device)
        with torch.no_grad():
            out = model.generate(
                **enc,
                do_sample=True,
                temperature=temperature,
                max_new_tokens=max_new_tokens,
                num_return_sequences=n,
                pad_token_id=tokenizer.pad_token_id,
            )
        new = out[:, enc["input_ids"].shape[1] :]
        for i in range(len(batch)):
            group_text, group_len = [], []
            for j in range(n):
                ids = new[i * n + j].tolist()
                if tokenizer.eos_token_id in ids:
                    ids = ids[: ids.index(tokenizer.eos_token_id) + 1]
                ids = [t for t in ids if t != tokenizer.pad_token_id]
                group_text.append(tokenizer.decode(ids, skip_special_tokens=True))
                group_len.append(len(ids))
            texts.append(group_text)
            lengths.append(group_len)
    return texts, lengths


def evaluate(
    recipe: Recipe,
    model: str | None = None,
    split: str | None = None,
    n: int = 8,
    limit: int | None = None,
    output_dir: str | None = None,
    max_new_tokens: int | None = None,
    batch_size: int = 16,
    seed: int = 0,
) -> dict:
    """Evaluate ``model`` (default: the recipe's output_dir) on the recipe's data; write and return the report."""
    from grpo_trl.data import build_dataset
    from grpo_trl.train import check_reward_columns, load_tokenizer, resolve_model

    config = recipe.to_grpo_config()
    model_path = model or config.output_dir
    if recipe.model["name"] == "builtin:tiny" and model is None and not (Path(model_path) / "config.json").exists():
        model_path = resolve_model(recipe, config.output_dir)
    tokenizer = load_tokenizer(recipe, model_path)
    data_cfg = dict(recipe.dataset)
    if split:  # an explicit split is evaluated whole (no held-out carving)
        data_cfg.pop("eval_size", None)
        data_cfg["split"] = split
    data = build_dataset(data_cfg, tokenizer=tokenizer, base_dir=recipe.base_dir)
    ds = data.eval if (data.eval is not None and not split) else data.train
    if limit:
        ds = ds.select(range(min(limit, len(ds))))
    rewards, weights = recipe.build_rewards()
    check_reward_columns(recipe, rewards, ds.column_names)
    prompts = list(ds["prompt"])
    texts, lengths = _generate(
        model_path,
        tokenizer,
        prompts,
        n,
        max_new_tokens or config.max_completion_length,
        config.temperature,
        batch_size,
        seed,
    )

    flat_completions = [[{"role": "assistant", "content": t}] for group in texts for t in group]
    columns = {c: [v for v in ds[c] for _ in range(n)] for c in ds.column_names if c != "prompt"}
    flat_prompts = [p for p in prompts for _ in range(n)]
    flat_lengths = [x for group in lengths for x in group]
    scores = {}
    for reward in rewards:
        scores[reward.__name__] = reward(
            flat_completions, prompts=flat_prompts, completion_ids=[[0] * k for k in flat_lengths], **columns
        )

    pass_name, threshold = _pass_rule(recipe)
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
                    "completion": texts[i][j],
                    "length": flat_lengths[k],
                    "rewards": {name: vals[k] for name, vals in scores.items()},
                    "passed": ok,
                }
            )
        passed.append(flags)
    p1, pn = pass_at(passed)

    def mean(values: list) -> float | None:
        vals = [v for v in values if v is not None]
        return sum(vals) / len(vals) if vals else None

    totals = [sum(w * (s[k] or 0.0) for w, s in zip(weights, scores.values())) for k in range(len(flat_completions))]
    report = {
        "model": model_path,
        "prompts": len(prompts),
        "n": n,
        "pass_reward": pass_name,
        "pass_threshold": threshold,
        "pass@1": p1,
        f"pass@{n}": pn,
        "reward_mean": mean(totals),
        "rewards": {name: mean(vals) for name, vals in scores.items()},
        "mean_completion_length": mean(flat_lengths),
        "format_failure_rate": mean([float(extract_tag(completion_text(c)) is None) for c in flat_completions]),
    }
    out = Path(output_dir or (model_path if Path(model_path).is_dir() else config.output_dir))
    out.mkdir(parents=True, exist_ok=True)
    (out / "eval.json").write_text(json.dumps(report, indent=2))
    with (out / "eval_completions.jsonl").open("w") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")
    report["output_dir"] = str(out)
    return report
