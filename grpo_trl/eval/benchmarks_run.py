"""Running one benchmark end to end: check the arguments, build its prompts, generate with the chosen backend, score,
and write ``benchmark-<name>.json`` (with the published references) and ``benchmark-<name>_completions.jsonl``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from grpo_trl.errors import Problem, RecipeError
from grpo_trl.eval.backends import Sampling, generate, preflight
from grpo_trl.eval.benchmarks import WHERE, build, references, spec_of, with_defaults
from grpo_trl.eval.run import check_arguments, writable
from grpo_trl.io import writable as writable_path
from grpo_trl.io import write


def _tokenizer(model: str, backend: str, endpoint: dict | None) -> Any:
    """The model's tokenizer (a LoRA run's folder holds its own); an endpoint without a local one chats instead."""
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(model)
    except (OSError, ValueError) as exc:
        if backend == "endpoint" and (endpoint or {}).get("api") == "chat":
            return None
        why = f"no tokenizer loads from {model!r} ({str(exc).splitlines()[0][:160]})"
        fix = "give a model folder or Hub id; with --backend endpoint, --api chat needs none"
        raise RecipeError([Problem(WHERE, "--model", why, fix)]) from None


def run_benchmark(
    name: str,
    model: str | None,
    *,
    data: str | None = None,
    backend: str = "transformers",
    n: int | None = None,
    limit: int | None = None,
    temperature: float | None = None,
    max_new_tokens: int | None = None,
    batch_size: int = 16,
    seed: int = 0,
    output_dir: str | None = None,
    endpoint: dict | None = None,
    vllm_options: dict | None = None,
) -> dict:
    """Evaluate ``model`` on benchmark ``name``; write and return the report (``references``: the published numbers
    for the model's base, each with its source)."""
    spec = spec_of(name)
    if not model:
        raise RecipeError([Problem(WHERE, "--model", "a benchmark needs the model to evaluate", "add --model PATH")])
    endpoint = {**(endpoint or {}), "model": model} if backend == "endpoint" else None
    check_arguments(
        WHERE,
        backend=backend,
        n=8 if n is None else n,
        limit=limit,
        batch_size=batch_size,
        max_new_tokens=max_new_tokens,
        temperature=temperature,
        endpoint=endpoint,
        seed=seed,
    )
    local = backend != "endpoint" and Path(model).is_dir()
    out = Path(output_dir) if output_dir else Path(model) if local else Path("outputs") / "benchmarks"
    report_path, rows_path = out / f"benchmark-{name}.json", out / f"benchmark-{name}_completions.jsonl"
    writable(report_path, WHERE, "--output-dir")
    for path in (report_path, rows_path):  # before generating: the one writer's own rule (no link, not theirs)
        writable_path(path, flag="--output-dir", where=WHERE)
    preflight(backend, endpoint)
    bench = build(name, data, limit, seed)
    tokenizer = _tokenizer(model, backend, endpoint)
    sampling = with_defaults(
        name, Sampling(seed=seed, batch_size=batch_size), n=n, temperature=temperature, max_new_tokens=max_new_tokens
    )
    ds = bench.dataset(tokenizer)
    options = {"endpoint": endpoint} if backend == "endpoint" else {"vllm_options": vllm_options}
    gens = generate(backend, model, tokenizer, list(ds["prompt"]), sampling, **options)
    scored = bench.score(ds, gens)
    base, refs = references(name, model)
    report = {
        "benchmark": name,
        "model": model,
        "backend": backend,
        "data": data
        or "hub:{}{}:{}".format(spec["hub"][0], f"/{spec['hub'][1]}" if spec["hub"][1] else "", spec["hub"][2]),
        "follows": spec["follows"],
        "sampling": {k: getattr(sampling, k) for k in ("n", "temperature", "top_p", "max_new_tokens", "seed")},
        **scored.summary,
        "reference_model": base,
        "references": refs,
    }
    if gens.errors:
        report["generation_error_examples"] = gens.errors[:5]
    rows = "".join(json.dumps(row) + "\n" for row in scored.rows)
    for path, text in ((report_path, json.dumps(report, indent=2)), (rows_path, rows)):
        write(
            path, text, flag="--output-dir", where=WHERE, ledger=True, hide=True
        )  # a later eval may replace them, unedited
    report["output_dir"] = str(out)
    return report
