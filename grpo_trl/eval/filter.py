"""``grpo-trl filter RECIPE --model M --n 8``: measure every training prompt's pass rate with an eval backend and
store it beside the data, for the ``data.pass_rate`` band (:mod:`grpo_trl.data.pass_rate`).

The file (default: ``<data file>.pass_rates.json`` beside a local data file, else ``<recipe>.pass_rates.json``
beside the recipe) maps :func:`~grpo_trl.data.pass_rate.prompt_hash` to ``{"p", "passed", "n"}``. A second run
merges into it: prompts scored again are replaced, the others kept. Sampling uses the recipe's training temperature,
since the question is whether a training group would have any variance.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from grpo_trl.data.pass_rate import prompt_hash
from grpo_trl.eval.run import generate_and_score, prepare, writable
from grpo_trl.io import writable as write_check
from grpo_trl.io import write
from grpo_trl.jsonio import read_json_head
from grpo_trl.recipe import Problem, Recipe, RecipeError

WHERE = "grpo-trl filter"


def default_path(recipe: Recipe) -> Path:
    """Beside the data when it is one local file, else beside the recipe."""
    cfg = recipe.dataset
    if "mixture" not in cfg and isinstance(cfg.get("path"), str):
        data = Path(cfg["path"]) if Path(cfg["path"]).is_absolute() else recipe.base_dir / cfg["path"]
        return data.with_name(data.name + ".pass_rates.json")
    return recipe.base_dir / f"{Path(recipe.file).stem}.pass_rates.json"


def _without_band(cfg: dict, split: str | None) -> dict:
    cfg = {k: v for k, v in cfg.items() if k not in ("pass_rate", "limit")}
    if "mixture" in cfg:
        cfg["mixture"] = [_without_band(part, None) for part in cfg["mixture"]]
    if split:
        cfg["split"] = split
        cfg.pop("eval_size", None)
    return cfg


def _rates_file(path: Path) -> bool:
    """Whether ``path`` is a pass-rate file (``filter`` wrote it, or one shaped like it): JSON with ``rates``."""
    from grpo_trl.jsonio import read_json_head

    data = read_json_head(path, 512 * 2**20)
    return isinstance(data, dict) and "rates" in data


def filter_prompts(
    recipe: Recipe,
    model: str | None = None,
    n: int = 8,
    backend: str = "transformers",
    split: str | None = None,
    limit: int | None = None,
    output: str | None = None,
    max_new_tokens: int | None = None,
    batch_size: int = 16,
    seed: int = 0,
    temperature: float | None = None,
    endpoint: dict | None = None,
    vllm_options: dict | None = None,
) -> dict:
    """Score the recipe's training prompts (all of them: ``data.limit`` is ignored unless ``limit`` is given) and
    write their pass rates; returns a summary with the file, the counts per band and the recipe snippet."""
    from grpo_trl.data import build_dataset
    from grpo_trl.data.render import recipe_rendering

    setup = prepare(
        recipe,
        WHERE,
        model=model,
        backend=backend,
        n=n,
        limit=limit,
        batch_size=batch_size,
        max_new_tokens=max_new_tokens,
        temperature=temperature,
        seed=seed,
        endpoint=endpoint,
        vllm_options=vllm_options,
    )
    model_path, sampling = setup.model_path, setup.sampling
    path = Path(output) if output else default_path(recipe)
    writable(path, WHERE, "--output")
    if os.path.lexists(path) and path.is_symlink():
        write_check(path, flag="--output", where=WHERE)  # a symlink: refused by the one writer, before generating
    if path.exists() and not _rates_file(path):  # a data file or notes named by mistake: never overwritten
        raise RecipeError(
            [
                Problem(
                    WHERE,
                    "--output",
                    f"{str(path)!r} exists and is not a pass-rate file (JSON with 'rates')",
                    "name a new file, or move this one away",
                )
            ]
        )
    rendering = recipe_rendering(recipe, setup.tokenizer)  # the same rows as training keeps
    data_cfg = _without_band(recipe.dataset, split)
    ds = build_dataset(data_cfg, tokenizer=setup.tokenizer, base_dir=recipe.base_dir, rendering=rendering).train
    if limit:  # the first N training prompts: the recipe's eval rows are held out first, as in training
        ds = ds.select(range(min(limit, len(ds))))
    gens, scored = generate_and_score(recipe, ds, setup)
    rates: dict[str, dict[str, Any]] = {}
    for prompt, flags in zip(ds["prompt"], scored.passed):
        entry = rates.setdefault(prompt_hash(prompt), {"passed": 0, "n": 0})
        entry["passed"] += sum(flags)
        entry["n"] += len(flags)
    for entry in rates.values():
        entry["p"] = entry["passed"] / entry["n"]
    previous = read_json_head(path, 2**28) if path.exists() else {}
    previous = previous.get("rates", {}) if isinstance(previous, dict) else {}
    previous = previous if isinstance(previous, dict) else {}  # a foreign file: replaced, like an unreadable one
    meta = {
        "model": model_path,
        "backend": backend,
        "n": n,
        "temperature": sampling.temperature,
        "pass_reward": scored.summary["pass_reward"],
        "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    text = json.dumps({**meta, "rates": {**previous, **rates}}, indent=1, sort_keys=True)
    write(path, text, flag="--output", where=WHERE, mine=_rates_file)  # the one writer: atomic, never via a link
    values = [e["p"] for e in rates.values()]
    try:
        shown = path.resolve().relative_to(recipe.base_dir.resolve())
    except ValueError:
        shown = path.resolve()
    return {
        "file": str(path),
        "prompts": len(rates),
        "all_fail (p = 0)": sum(v == 0 for v in values),
        "mixed (0 < p < 1)": sum(0 < v < 1 for v in values),
        "all_pass (p = 1)": sum(v == 1 for v in values),
        "generation_errors": len(gens.errors),
        "snippet": f"pass_rate: {{file: {shown}, above: 0.0, below: 1.0}}",
    }
