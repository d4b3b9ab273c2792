"""``grpo-trl filter RECIPE --model M``: every training prompt's pass rate, from an eval backend at the recipe's
training temperature (would a group have variance?), stored by ``prompt_hash`` as ``{"p", "passed", "n"}`` for the
``data.pass_rate`` band; beside a local data file (else the recipe) by default; a second run merges into it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from grpo_trl.data.pass_rate import prompt_hash
from grpo_trl.eval.run import generate_and_score, prepare_recipe, prompts_for
from grpo_trl.io import read_json_head, writable, write
from grpo_trl.recipe import Problem, Recipe, RecipeError

WHERE = "grpo-trl filter"


def default_path(recipe: Recipe) -> Path:
    """Beside the data when it is one local file, else beside the recipe."""
    cfg = recipe.dataset
    if "mixture" not in cfg and isinstance(cfg.get("path"), str):
        data = recipe.base_dir / cfg["path"]  # an absolute path stays itself
        return data.with_name(data.name + ".pass_rates.json")
    return recipe.base_dir / f"{Path(recipe.file).stem}.pass_rates.json"


def _without_band(cfg: dict) -> dict:
    cfg = {k: v for k, v in cfg.items() if k not in ("pass_rate", "limit")}
    if "mixture" in cfg:
        cfg["mixture"] = [_without_band(part) for part in cfg["mixture"]]
    return cfg


def _rates(path: Path) -> dict | None:
    """The ``rates`` of a pass-rate file (JSON with ``rates``), else None."""
    data = read_json_head(path, 2**28)
    return data["rates"] if isinstance(data, dict) and "rates" in data else None


def filter_prompts(recipe: Recipe, model: str | None = None, split: str | None = None, output: str | None = None,
                   **options: Any) -> dict:  # fmt: skip
    """Score the recipe's training prompts (``data.limit`` ignored; ``limit``: the first N) and write their pass
    rates; returns the file, the counts per band and the recipe snippet. ``options`` as ``evaluate``'s."""
    setup = prepare_recipe(recipe, WHERE, model, **options)
    # before generating; never via a link; the name as given ('new/' is a folder, not the file new)
    path = writable(output if output is not None else default_path(recipe), flag="--output", where=WHERE, mine=True,
                    folder=True)  # fmt: skip
    if path.is_file() and _rates(path) is None:  # data or notes named by mistake
        why = f"{str(path)!r} exists and is not a pass-rate file (JSON with 'rates')"
        raise RecipeError([Problem(WHERE, "--output", why, "name a new file, or move this one away")])
    ds = prompts_for(recipe, split, setup.tokenizer, options.get("limit"), data=_without_band(recipe.dataset))
    gens, scored = generate_and_score(recipe, ds, setup)
    rates: dict[str, dict[str, Any]] = {}
    for prompt, flags in zip(ds["prompt"], scored.passed):
        entry = rates.setdefault(prompt_hash(prompt), {"passed": 0, "n": 0})
        entry["passed"] += sum(flags)
        entry["n"] += len(flags)
    for entry in rates.values():
        entry["p"] = entry["passed"] / entry["n"]
    previous = _rates(path) if path.is_file() else None
    meta = {
        "model": setup.model_path,
        "backend": setup.backend,
        "n": setup.sampling.n,
        "temperature": setup.sampling.temperature,
        "pass_reward": scored.summary["pass_reward"],
        "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "rates": {**(previous if isinstance(previous, dict) else {}), **rates},  # a foreign one is replaced
    }
    write(path, json.dumps(meta, indent=1, sort_keys=True), flag="--output", where=WHERE, mine=True)
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
