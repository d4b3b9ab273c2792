"""Token-length filter at corpus scale: the old row-at-a-time filter (``tests/data/naive_filter.py``), the pipeline in
``grpo_trl/data/filters.py`` cold (empty cache) and warm (second call), and the floor: one plain batched
``datasets.map`` of the same rendering and tokenization. Same rows asserted. Tiny model's tokenizer, generated rows.

Also the ceiling: the Rust tokenizer alone, all cores, no Python around it, on the already-rendered prompts longer (in
bytes) than the bound. An exact filter must tokenize at least those, so old / ceiling is about the most any exact
filter can gain over the old one on this machine.

And datasets' own cache beside ours: the same counting function through ``Dataset.map(load_from_cache_file=True)`` on
the rows saved to disk (datasets caches only a dataset with cache files, as ``load_dataset`` gives), second call."""

from __future__ import annotations

import os
import random
import tempfile
import time
from pathlib import Path


def make_rows(n: int, seed: int = 0) -> list[dict]:
    """GSM8K-shaped rows: the ``xml`` system prompt, a word problem of 40 to 1,200 characters (a long tail), a short
    numeric solution; the shipped recipe's filters (300 prompt tokens, 200 solution tokens) then drop a few."""
    from grpo_trl.data.options import resolve_system_prompt
    from grpo_trl.data.registry import to_conversation

    rng = random.Random(seed)
    system = resolve_system_prompt("xml")
    words = "Natalia sold clips to her friends in April and then half as many in May How many did she sell".split()
    rows = []
    for _ in range(n):
        k = min(200, int(rng.lognormvariate(3.6, 0.5)))  # ~40 words typical, a tail up to 200
        text = " ".join(rng.choice(words) for _ in range(k)) + f" {rng.randint(2, 999)} dollars?"
        rows.append({"prompt": to_conversation(text, system), "solution": str(rng.randint(0, 10**6))})
    return rows


def bench_data_filter(n: int = 50_000, old_rows: int | None = None) -> dict:
    from datasets.utils.logging import disable_progress_bar

    disable_progress_bar()
    tmp = Path(tempfile.mkdtemp(prefix="grpo-filter-bench-"))
    saved, os.environ["GRPO_TRL_CACHE"] = os.environ.get("GRPO_TRL_CACHE"), str(tmp / "cache")
    try:
        return _measure(tmp, n, old_rows)
    finally:
        if saved is None:
            os.environ.pop("GRPO_TRL_CACHE", None)
        else:
            os.environ["GRPO_TRL_CACHE"] = saved


def _measure(tmp: Path, n: int, old_rows: int | None) -> dict:
    from datasets import Dataset
    from transformers import AutoTokenizer

    from grpo_trl.data.filters import filter_by_tokens
    from grpo_trl.models.tiny import build_tiny_model
    from tests.data.naive_filter import naive_filter

    tok = AutoTokenizer.from_pretrained(build_tiny_model(tmp / "model"))
    ds = Dataset.from_list(make_rows(n))
    cfg = {"max_prompt_tokens": 300, "max_solution_tokens": 200}  # recipes/gsm8k/qwen2.5-0.5b-lora-1gpu.yaml

    def timed(fn):
        start = time.perf_counter()
        out = fn()
        return out, time.perf_counter() - start

    def floor_map(batch):
        p = tok.apply_chat_template(batch["prompt"], tokenize=True, add_generation_prompt=True, return_dict=False)
        s = tok([str(x) for x in batch["solution"]], add_special_tokens=False)["input_ids"]
        return {"n_p": [len(x) for x in p], "n_s": [len(x) for x in s]}

    floor, floor_s = timed(
        lambda: ds.map(floor_map, batched=True, batch_size=1000, keep_in_memory=True, remove_columns=ds.column_names)
    )
    (cold, dropped), cold_s = timed(lambda: filter_by_tokens(ds, cfg, tok))
    (warm, _), warm_s = timed(lambda: filter_by_tokens(ds, cfg, tok))
    expected = [i for i, (p, s) in enumerate(zip(floor["n_p"], floor["n_s"])) if p <= 300 and s <= 200]
    assert cold["solution"] == warm["solution"] == ds.select(expected)["solution"], "pipeline rows differ"
    texts = tok.apply_chat_template(ds["prompt"][:], tokenize=False, add_generation_prompt=True)
    texts = [t for t in texts if len(t.encode()) > cfg["max_prompt_tokens"]]  # what no byte bound can decide
    _, tokenize_s = timed(lambda: tok.backend_tokenizer.encode_batch_fast(texts, add_special_tokens=False))
    m = old_rows or n  # the old filter on all rows (or a prefix, scaled, in --quick)
    sub = ds.select(range(m))
    (old, _), old_s = timed(lambda: naive_filter(sub, cfg, tok))
    assert old[:] == filter_by_tokens(sub, cfg, tok)[0][:], "pipeline rows differ from the row-at-a-time filter"
    old_s *= n / m
    ds.save_to_disk(str(tmp / "rows"))
    _, datasets_cold_s = timed(lambda: datasets_cache_filter(tmp / "rows", tok, cfg))
    kept_ds, datasets_warm_s = timed(lambda: datasets_cache_filter(tmp / "rows", tok, cfg))
    assert kept_ds["solution"] == cold["solution"], "datasets' cache path keeps other rows"
    return {
        "rows": n,
        "kept": len(cold),
        "dropped": dropped,
        "old_s": old_s,
        "floor_s": floor_s,
        "cold_s": cold_s,
        "warm_s": warm_s,
        "datasets_cold_s": datasets_cold_s,
        "datasets_warm_s": datasets_warm_s,
        "tokenize_s": tokenize_s,
        "old_vs_tokenize": old_s / tokenize_s,
        "cold_vs_floor": cold_s / floor_s,
        "old_vs_cold": old_s / cold_s,
    }


def datasets_cache_filter(folder: Path, tok, cfg: dict):
    """The pipeline's counting function, cached by datasets' fingerprints instead of by content."""
    from datasets import load_from_disk

    from grpo_trl.data.filters import _token_counter
    from grpo_trl.data.render import Rendering

    ds = load_from_disk(str(folder))
    counter = _token_counter(tok, cfg["max_prompt_tokens"], cfg["max_solution_tokens"], "solution", Rendering())
    part = ds.select_columns(["prompt", "solution"])
    flags = part.map(counter, batched=True, batch_size=1000, remove_columns=part.column_names)
    return ds.select([i for i, (p, s) in enumerate(zip(flags["_ok_p"], flags["_ok_s"])) if p and s])


def run(quick: bool) -> dict:
    """``make bench``: 50,000 rows (the old filter on all of them); ``--quick``: 4,000 rows, the old on 1,000."""
    result = bench_data_filter(4_000, 1_000) if quick else bench_data_filter(50_000)
    return {**result, "rows": table_rows(result)}


def table_rows(r: dict | None) -> list[str]:
    if not r:
        return []
    return [
        f"| token-length filter, {r['rows']:,} GSM8K-shaped rows: new cold / plain batched map (floor) | "
        f"{r['cold_vs_floor']:.2f}x ({r['cold_s']:.1f} s vs {r['floor_s']:.1f} s) |",
        f"| token-length filter: old row-at-a-time / new cold (same rows) | {r['old_vs_cold']:.1f}x "
        f"({r['old_s']:.1f} s vs {r['cold_s']:.1f} s) |",
        f"| token-length filter: old / the Rust tokenizer alone on the rendered prompts no byte bound decides, all "
        f"cores (about the ceiling of any exact filter) | {r['old_vs_tokenize']:.1f}x ({r['old_s']:.1f} s vs "
        f"{r['tokenize_s']:.1f} s) |",
        f"| token-length filter: new warm (cached), {r['rows']:,} rows | {r['warm_s']:.2f} s |",
        f"| token-length filter: datasets' own fingerprint cache instead (map on the rows saved to disk), warm | "
        f"{r['datasets_warm_s']:.2f} s (cold {r['datasets_cold_s']:.1f} s) |",
    ]
