"""``grpo-trl eval``: ``n`` completions per prompt of the recipe's eval split (or ``--split``) from a backend, scored
with the recipe's rewards, into ``eval.json`` (means, pass@k with intervals, length, format failures, errors) and
``eval_completions.jsonl`` (one row per completion); the console gets a short table (docs/eval.md).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grpo_trl.data.image_tokens import as_trainer_prompt, is_processor
from grpo_trl.eval.backends import BACKENDS, Generations, Sampling, generate, preflight
from grpo_trl.eval.score import Scored, recipe_scorer
from grpo_trl.io import writable, write
from grpo_trl.recipe import Problem, Recipe, RecipeError

WHERE = "grpo-trl eval"
MAX_N = 1_000_000  # completions per prompt, prompts per batch: beyond it is a typo
RESULTS = ("eval.json", "eval_completions.jsonl")


def _short(value: Any) -> str:
    if isinstance(value, int) and abs(value) >= 10**30:  # repr() refuses ints of more than 4,300 digits
        return f"a number of about {int(abs(value).bit_length() * 0.30103) + 1} digits"
    return repr(value)[:80]


def check_arguments(
    where: str = WHERE, *, backend: str = "transformers", n: Any = None, limit: Any = None, batch_size: Any = 16,
    max_new_tokens: Any = None, temperature: Any = None, endpoint: dict | None = None, seed: Any = 0,
) -> None:  # fmt: skip
    """One ``error:`` line per bad value, all at once (``RecipeError``)."""
    problems = []
    if backend not in BACKENDS:
        problems.append(Problem(where, "--backend", f"unknown backend {backend!r}; choose {', '.join(BACKENDS)}"))
    for flag, value, low, high, optional in (
        ("--n", n, 1, MAX_N, True),
        ("--limit", limit, 1, 2**31 - 1, True),
        ("--batch-size", batch_size, 1, MAX_N, False),
        ("--max-new-tokens", max_new_tokens, 1, 2**31 - 1, True),
        ("--seed", seed, 0, 2**32 - 1, False),
    ):
        if optional and value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            why = f"from 0 to {high}" if flag == "--seed" else f">= {low}"
            problems.append(Problem(where, flag, f"must be an integer {why}, got {_short(value)}"))
        elif value > high:
            why = f"an integer from 0 to {high}" if flag == "--seed" else f"at most {high:,}"
            problems.append(Problem(where, flag, f"must be {why}, got {_short(value)}"))
    t = temperature
    if t is not None and not (isinstance(t, int | float) and not isinstance(t, bool) and math.isfinite(t) and t >= 0):
        problems.append(Problem(where, "--temperature", f"must be a number >= 0 (0 is greedy), got {t!r}"))
    if backend == "endpoint":
        endpoint = endpoint or {}
        for key, flag in (("base_url", "--base-url"), ("model", "--model")):
            if not endpoint.get(key):
                problems.append(Problem(where, flag, f"--backend endpoint needs {flag} (the server's {key})"))
        if endpoint.get("api", "completions") not in ("completions", "chat"):
            problems.append(Problem(where, "--api", f"must be completions or chat, got {endpoint['api']!r}"))
    if problems:
        raise RecipeError(problems)


def require_split(recipe: Recipe, split: str | None) -> None:
    """No split named and none in the recipe: an error, never a silent fall-back to the training prompts."""
    if not (split or recipe.dataset.get("eval_size") or recipe.dataset.get("eval_split")):
        why = "the recipe has no eval split to evaluate on (set data.eval_size: N or data.eval_split); "
        raise RecipeError(
            [Problem(recipe.file, "data", why + "to use the training prompts, say so with --split train")]
        )


def prompts_for(recipe: Recipe, split: str | None, tokenizer: Any, limit: int | None, data: dict | None = None) -> Any:
    """The recipe's eval split, or the whole ``split`` named, or the training rows of ``data`` (filter's)."""
    from grpo_trl.data import build_dataset
    from grpo_trl.data.render import recipe_rendering

    cfg = dict(recipe.dataset if data is None else data)
    if split:  # an explicit split is taken whole (no held-out carving)
        cfg.pop("eval_size", None)
        cfg["split"] = split
    built = build_dataset(
        cfg, tokenizer=tokenizer, base_dir=recipe.base_dir, rendering=recipe_rendering(recipe, tokenizer)
    )
    ds = built.train if split or data is not None or built.eval is None else built.eval
    return ds.select(range(min(limit, len(ds)))) if limit else ds


def model_and_tokenizer(
    recipe: Recipe, model: str | None, backend: str, where: str = WHERE
) -> tuple[str, Any, Sampling, dict | None]:
    """The local model path (the served name for an endpoint), the recipe's tokenizer for rendering prompts, and the
    trainer's sampling and chat template kwargs."""
    from grpo_trl.models.load import load_processing_class, resolve_model
    from grpo_trl.run.export import is_adapter

    c = recipe.to_grpo_config()
    output_dir = c.output_dir
    trained = (Path(output_dir) / "config.json").exists() or is_adapter(output_dir)  # a LoRA run: its adapter
    if backend == "endpoint":  # the served name; the tokenizer from the run or its base
        path, source = str(model), output_dir if trained else resolve_model(recipe.model)
    else:
        path = source = model or (output_dir if trained else resolve_model(recipe.model))  # builtin:*: from the cache
    key = "--model" if source == model else "trainer.output_dir" if trained else "model.name"
    refuse_unloadable(source, where, key, recipe)
    if backend == "vllm" and is_adapter(path):
        why = f"{path!r} is a LoRA adapter; the vllm backend loads whole models"
        raise RecipeError([Problem(where, "--model", why, f"merge it first: grpo-trl export {path}")])
    tokenizer = load_processing_class(recipe.model, source, recipe.file, recipe.base_dir)  # a VLM: its processor
    return path, tokenizer, Sampling.of_trainer(c, n=8), c.chat_template_kwargs


def refuse_unloadable(model: str, where: str, key: str, recipe: Recipe | None = None) -> None:
    """``model`` refused as check and train refuse one, before anything loads: its config.json read bounded and built
    on the meta device (``check.model.meta_model``), a LoRA adapter's config built by peft."""
    from grpo_trl.check.model import meta_model
    from grpo_trl.run.export import adapter_config, is_adapter

    if is_adapter(model):
        adapter_config(model)
    elif problems := meta_model(recipe or Recipe({}), str(model), (where, key))[1]:
        raise RecipeError(problems)


@dataclass
class Setup:
    """What ``eval``, ``filter`` and ``--benchmark`` resolve before generating."""

    model_path: str
    tokenizer: Any
    backend: str
    sampling: Sampling
    options: dict

    def generate(self, prompts: list) -> Generations:
        return generate(self.backend, self.model_path, self.tokenizer, prompts, self.sampling, **self.options)


def prepare(
    where: str, model: str | None, resolve: Callable[[], tuple], then: Callable[[], Any] | None = None,
    *, backend: str = "transformers", endpoint: dict | None = None, **args: Any,
) -> Setup:  # fmt: skip
    """Check the arguments (``error:`` lines naming ``where``), run ``then`` (more checks), probe the backend,
    ``resolve`` the model path, tokenizer, default ``Sampling`` and chat_template_kwargs."""
    endpoint = {**(endpoint or {}), "model": model} if backend == "endpoint" else None
    check_arguments(where, backend=backend, endpoint=endpoint, **args)
    if then is not None:
        then()
    preflight(backend, endpoint)
    model_path, tokenizer, defaults, template = resolve()
    options = {"template": template or {}, **({"endpoint": endpoint} if endpoint else {})}  # rendered as in training
    sampling = defaults.updated(
        **{k: args.get(k) for k in ("n", "temperature", "max_new_tokens", "seed", "batch_size")}
    )
    return Setup(model_path, tokenizer, backend, sampling, options)


def prepare_recipe(recipe: Recipe, where: str, model: str | None, then: Any = None, **args: Any) -> Setup:
    """``prepare`` for a recipe's model (trained, else its base) and trainer."""
    resolve = lambda: model_and_tokenizer(recipe, model, args.get("backend", "transformers"), where)  # noqa: E731
    return prepare(where, model, resolve, then, **args)


def writable_results(out: Path, names: tuple[str, ...], flag: str, where: str) -> None:
    """Before generating: a place that cannot be written must not cost the generation."""
    for name in names:
        writable(out / name, flag=flag, where=where, folder=True)


def generate_and_score(recipe: Recipe, ds: Any, setup: Setup) -> tuple[Generations, Scored]:
    """Generate for every row of ``ds`` and score with the recipe's rewards: what ``eval`` and ``filter`` share."""
    scorer = recipe_scorer(recipe, ds.column_names)
    tok = setup.tokenizer
    gens = setup.generate([as_trainer_prompt(tok, r) for r in ds] if is_processor(tok) else list(ds["prompt"]))
    return gens, scorer(ds, gens)


def write_results(out: Path, names: tuple[str, str], report: dict, rows: list[dict], flag: str, where: str) -> dict:
    """The report and its rows through the one writer, recorded so a later eval may replace them unedited."""
    texts = (json.dumps(report, indent=2), "".join(json.dumps(r) + "\n" for r in rows))
    for name, text in zip(names, texts):
        write(out / name, text, flag=flag, where=where, ledger=True, hide=True)
    return {**report, "output_dir": str(out)}


def evaluate(
    recipe: Recipe, model: str | None = None, split: str | None = None, output_dir: str | None = None, **options: Any
) -> dict:
    """Evaluate ``model`` on the recipe's eval split; write and return the report. ``options``: ``limit`` and
    ``prepare``'s (``endpoint``: ``grpo_trl.endpoint.Endpoint``'s options; ``model`` is then the served name)."""
    setup = prepare_recipe(recipe, WHERE, model, then=lambda: require_split(recipe, split), **options)
    local = setup.backend != "endpoint" and Path(setup.model_path).is_dir()
    out = Path(output_dir or (setup.model_path if local else recipe.to_grpo_config().output_dir))
    flag = "--output-dir" if output_dir else "--model" if model and local else "trainer.output_dir"
    writable_results(out, RESULTS, flag, WHERE)
    ds = prompts_for(recipe, split, setup.tokenizer, options.get("limit"))
    _, scored = generate_and_score(recipe, ds, setup)
    report = {"model": setup.model_path, "backend": setup.backend, "split": split or "eval", **scored.summary}
    return write_results(out, RESULTS, report, scored.rows, flag, WHERE)


def _num(value: Any, digits: int = 3) -> str:
    return f"{value:.{digits}f}" if isinstance(value, int | float) and math.isfinite(value) else "n/a"


def format_summary(report: dict, seconds: float) -> str:
    """``report`` (what ``evaluate`` returns) as a few aligned lines: pass@1, pass@n, counts, time, the files."""
    n, prompts = report.get("n", 0), report.get("prompts", 0)
    rows = []
    for k in sorted({1, n} - {0}):
        entry = report.get("pass@k", {}).get(str(k)) or {"estimate": report.get(f"pass@{k}")}
        low, high = entry.get("ci_low"), entry.get("ci_high")
        interval = f"  (95% interval {_num(low)}-{_num(high)})" if low is not None and high is not None else ""
        rows.append((f"pass@{k}", _num(entry.get("estimate")) + interval))
    per = ", ".join(f"{name} {_num(v)}" for name, v in report.get("rewards", {}).items())
    failures = _num(100 * (report.get("format_failure_rate") or 0.0), 1)
    rows += [
        ("rows", f"{prompts} prompts x {n} completions = {prompts * n}"),
        ("reward", _num(report.get("reward_mean")) + (f"  ({per})" if per else "")),
        ("length", f"{_num(report.get('mean_completion_length'), 0)} tokens; {failures}% without an <answer> block"),
    ]
    if report.get("generation_errors"):
        rows.append(("errors", f"{report['generation_errors']} failed requests (examples in eval.json)"))
    out = Path(str(report.get("output_dir", ".")))
    rows += [("time", f"{seconds:.1f} s"), ("results", ", ".join(str(out / name) for name in RESULTS))]
    head = f"grpo-trl eval: {report.get('model')} on split {report.get('split')} ({report.get('backend')})"
    return "\n".join([head, *(f"  {key:<12} {value}" for key, value in rows)])
