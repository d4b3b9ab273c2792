"""``grpo-trl eval``: sample ``n`` completions per prompt of the recipe's eval split (or a named ``--split``) with a
backend, score them with the recipe's rewards, write ``eval.json`` (per-reward means, pass@k with intervals, length,
format failures, errors) and ``eval_completions.jsonl`` (one row per completion). docs/eval.md has the reference.
"""

from __future__ import annotations

import errno
import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grpo_trl.check.rewards import build_rewards, column_problems
from grpo_trl.data.image_tokens import as_trainer_prompt, is_processor
from grpo_trl.eval.backends import BACKENDS, Generations, Sampling, generate, preflight
from grpo_trl.eval.score import Scored, load_reward_models, score
from grpo_trl.io import writable as writable_path
from grpo_trl.io import write
from grpo_trl.recipe import Problem, Recipe, RecipeError

WHERE = "grpo-trl eval"


MAX_N = 1_000_000  # completions per prompt, prompts per batch: beyond it is a typo (it overflowed before)


def _short(value: Any) -> str:
    if isinstance(value, int) and abs(value) >= 10**30:  # repr() refuses ints of more than 4,300 digits
        return f"a number of about {int(abs(value).bit_length() * 0.30103) + 1} digits"
    return repr(value)[:80]


def _int_at_least(value: Any, low: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


def check_arguments(
    where: str = WHERE,
    *,
    backend: str = "transformers",
    n: Any = 8,
    limit: Any = None,
    batch_size: Any = 16,
    max_new_tokens: Any = None,
    temperature: Any = None,
    endpoint: dict | None = None,
    seed: Any = 0,
) -> None:
    """One ``error:`` line per bad value, all at once (``RecipeError``)."""
    problems = []
    if backend not in BACKENDS:
        problems.append(Problem(where, "--backend", f"unknown backend {backend!r}; choose {', '.join(BACKENDS)}"))
    for flag, value, low, high, optional in (
        ("--n", n, 1, MAX_N, False),
        ("--limit", limit, 1, 2**31 - 1, True),
        ("--batch-size", batch_size, 1, MAX_N, False),
        ("--max-new-tokens", max_new_tokens, 1, 2**31 - 1, True),
    ):
        if not (optional and value is None) and not _int_at_least(value, low):
            problems.append(Problem(where, flag, f"must be an integer >= {low}, got {value!r}"))
        elif value is not None and value > high:
            problems.append(Problem(where, flag, f"must be at most {high:,}, got {_short(value)}"))
    if not _int_at_least(seed, 0) or seed > 2**32 - 1:
        problems.append(Problem(where, "--seed", f"must be an integer from 0 to {2**32 - 1}, got {_short(seed)}"))
    if temperature is not None and (
        isinstance(temperature, bool)
        or not isinstance(temperature, int | float)
        or not math.isfinite(temperature)
        or temperature < 0
    ):
        problems.append(Problem(where, "--temperature", f"must be a number >= 0 (0 is greedy), got {temperature!r}"))
    if backend == "endpoint":
        for key, flag in (("base_url", "--base-url"), ("model", "--model")):
            if not (endpoint or {}).get(key):
                problems.append(Problem(where, flag, f"--backend endpoint needs {flag} (the server's {key})"))
        if (endpoint or {}).get("api", "completions") not in ("completions", "chat"):
            problems.append(Problem(where, "--api", f"must be completions or chat, got {endpoint['api']!r}"))
    if problems:
        raise RecipeError(problems)


def require_split(recipe: Recipe, split: str | None, what: str = "evaluate") -> None:
    """No split named and no eval split in the recipe: an error, never a silent fall-back to training prompts."""
    if split or recipe.dataset.get("eval_size") or recipe.dataset.get("eval_split"):
        return
    raise RecipeError(
        [
            Problem(
                recipe.file,
                "data",
                f"the recipe has no eval split to {what} on (set data.eval_size: N or data.eval_split); "
                "to use the training prompts, say so with --split train",
            )
        ]
    )


def prompts_for(recipe: Recipe, split: str | None, tokenizer: Any, limit: int | None) -> Any:
    """The rows to evaluate: the recipe's eval split, or the whole ``split`` when one is named explicitly."""
    from grpo_trl.data import build_dataset
    from grpo_trl.data.render import recipe_rendering

    data_cfg = dict(recipe.dataset)
    if split:  # an explicit split is taken whole (no held-out carving)
        data_cfg.pop("eval_size", None)
        data_cfg["split"] = split
    rendering = recipe_rendering(recipe, tokenizer)  # the same rows as training keeps
    data = build_dataset(data_cfg, tokenizer=tokenizer, base_dir=recipe.base_dir, rendering=rendering)
    ds = data.train if split or data.eval is None else data.eval
    return ds.select(range(min(limit, len(ds)))) if limit else ds


def model_and_tokenizer(recipe: Recipe, model: str | None, backend: str) -> tuple[str, Any]:
    """The local model path (the served name for an endpoint) and the recipe's tokenizer for rendering prompts."""
    from grpo_trl.models.load import load_processing_class as load_tokenizer  # a VLM: its processor
    from grpo_trl.models.load import resolve_model
    from grpo_trl.run.export import is_adapter

    output_dir = recipe.to_grpo_config().output_dir
    trained = (Path(output_dir) / "config.json").exists() or is_adapter(output_dir)  # a LoRA run: its adapter
    if backend == "endpoint":
        source = output_dir if trained else resolve_model(recipe.model)  # builtin:*: a cache, not the output_dir
        return str(model), load_tokenizer(recipe.model, source, recipe.file, recipe.base_dir)
    path = model or output_dir
    if model is None and not trained:
        path = resolve_model(recipe.model)  # nothing trained yet: the recipe's own model (builtin:*: from the cache)
    if backend == "vllm" and is_adapter(path):
        why = f"{path!r} is a LoRA adapter; the vllm backend loads whole models"
        raise RecipeError([Problem(WHERE, "--model", why, f"merge it first: grpo-trl export {path}")])
    return path, load_tokenizer(recipe.model, path, recipe.file, recipe.base_dir)


def writable(path: Path, where: str, flag: str) -> None:
    """Make ``path``'s folder now, before generating: a path that cannot be written (a file in the way, no permission,
    ``path`` itself a folder) must not cost the whole generation. One ``error:`` line naming ``flag``."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir():
            raise IsADirectoryError(errno.EISDIR, "a folder")
        probe = path.parent / f".{path.name}.{os.getpid()}.probe"  # an existing folder may still be read-only
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise RecipeError([Problem(where, flag, f"cannot write {str(path)!r} ({exc.strerror or exc})")]) from exc


@dataclass
class Setup:
    """What ``eval`` and ``filter`` resolve before generating: the trainer config, model, tokenizer, sampling."""

    config: Any
    model_path: str
    tokenizer: Any
    backend: str
    sampling: Sampling
    options: dict


def prepare(
    recipe: Recipe, where: str, *, model: str | None, backend: str, then: Callable[[], None] | None = None, **args: Any
) -> Setup:
    """Check the arguments (``error:`` lines naming ``where``), run ``then`` (more checks), probe the backend, and
    resolve model and sampling."""
    endpoint = {**(args.pop("endpoint", None) or {}), **({"model": model} if backend == "endpoint" else {})}
    vllm_options, seed = args.pop("vllm_options", None), args.pop("seed", 0)
    check_arguments(where, backend=backend, endpoint=endpoint, seed=seed, **args)
    if then is not None:
        then()
    preflight(backend, endpoint)
    config = recipe.to_grpo_config()
    model_path, tokenizer = model_and_tokenizer(recipe, model, backend)
    temperature = args.get("temperature")
    sampling = Sampling(
        n=args["n"],
        max_new_tokens=args.get("max_new_tokens") or config.max_completion_length,
        temperature=config.temperature if temperature is None else float(temperature),
        top_p=config.top_p,
        seed=seed,
        batch_size=args["batch_size"],
    )
    options = {"endpoint": endpoint} if backend == "endpoint" else {"vllm_options": vllm_options}
    options["template"] = config.chat_template_kwargs or {}  # prompts rendered as the trainer renders them
    return Setup(config, model_path, tokenizer, backend, sampling, options)


def generate_and_score(recipe: Recipe, ds: Any, setup: Setup) -> tuple[Generations, Scored]:
    """Generate for every row of ``ds`` and score: the part ``eval`` and ``filter`` share."""
    rewards, weights = build_rewards(recipe)
    problems = column_problems(recipe, rewards, ds.column_names)
    if problems:
        raise RecipeError(problems)
    rewards = load_reward_models(recipe, rewards)
    prompts = (
        list(ds["prompt"])
        if not is_processor(setup.tokenizer)
        else [as_trainer_prompt(setup.tokenizer, r) for r in ds]
    )
    gens = generate(setup.backend, setup.model_path, setup.tokenizer, prompts, setup.sampling, **setup.options)
    return gens, score(recipe, rewards, weights, ds, gens)


def evaluate(
    recipe: Recipe,
    model: str | None = None,
    split: str | None = None,
    n: int | None = 8,
    limit: int | None = None,
    output_dir: str | None = None,
    max_new_tokens: int | None = None,
    batch_size: int = 16,
    seed: int = 0,
    backend: str = "transformers",
    temperature: float | None = None,
    endpoint: dict | None = None,
    vllm_options: dict | None = None,
) -> dict:
    """Evaluate ``model`` on the recipe's eval split with ``backend``; write and return the report.

    ``endpoint``: ``base_url``, ``api`` (completions | chat), ``api_key_env``, ``max_concurrency``, ``timeout``,
    ``retries`` for ``backend="endpoint"``, where ``model`` is the name the server gives the model.
    """
    setup = prepare(
        recipe,
        WHERE,
        then=lambda: require_split(recipe, split),
        model=model,
        backend=backend,
        n=8 if n is None else n,
        limit=limit,
        batch_size=batch_size,
        max_new_tokens=max_new_tokens,
        temperature=temperature,
        seed=seed,
        endpoint=endpoint,
        vllm_options=vllm_options,
    )
    config, model_path = setup.config, setup.model_path
    local = backend != "endpoint" and Path(model_path).is_dir()
    out = Path(output_dir or (model_path if local else config.output_dir))
    flag = "--output-dir" if output_dir else "--model" if model and local else "trainer.output_dir"
    writable(out / "eval.json", WHERE, flag)
    for name in ("eval.json", "eval_completions.jsonl"):  # before generating: the one writer's own rule
        writable_path(out / name, flag=flag, where=WHERE)
    ds = prompts_for(recipe, split, setup.tokenizer, limit)
    gens, scored = generate_and_score(recipe, ds, setup)
    report = {"model": model_path, "backend": backend, "split": split or "eval", **scored.summary}
    if gens.errors:
        report["generation_error_examples"] = gens.errors[:5]
    rows = "".join(json.dumps(r) + "\n" for r in scored.rows)
    for name, text in (("eval.json", json.dumps(report, indent=2)), ("eval_completions.jsonl", rows)):
        write(
            out / name, text, flag=flag, where=WHERE, ledger=True, hide=True
        )  # a later eval may replace them, unedited
    report["output_dir"] = str(out)
    return report
