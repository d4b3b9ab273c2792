"""The token-length filter as it was before grpo_trl/data/filters.py: one row at a time, the whole source, then
``limit``. The reference that tests/data/test_filters.py and bench/data_filter.py compare the pipeline against."""

from __future__ import annotations

from typing import Any


def _prompt_ids(tokenizer: Any, prompt: list[dict]) -> list[int]:
    ids = tokenizer.apply_chat_template(prompt, tokenize=True, add_generation_prompt=True)
    if hasattr(ids, "keys"):  # transformers 5 may return a BatchEncoding
        ids = ids["input_ids"]
    return list(ids)


def naive_filter(ds: Any, cfg: dict, tokenizer: Any) -> tuple[Any, dict[str, int]]:
    """Row-at-a-time ``max_prompt_tokens`` / ``max_solution_tokens`` filters, then ``limit``."""
    dropped: dict[str, int] = {}
    max_p, max_s = cfg.get("max_prompt_tokens"), cfg.get("max_solution_tokens")
    sol_col = cfg.get("solution_column", "solution")
    if max_p:
        before = len(ds)
        ds = ds.filter(lambda row: len(_prompt_ids(tokenizer, row["prompt"])) <= max_p)
        dropped["max_prompt_tokens"] = before - len(ds)
    if max_s:
        before = len(ds)
        ds = ds.filter(lambda row: len(tokenizer.encode(str(row[sol_col]), add_special_tokens=False)) <= max_s)
        dropped["max_solution_tokens"] = before - len(ds)
    if cfg.get("limit") is not None:
        ds = ds.select(range(min(cfg["limit"], len(ds))))
    return ds, dropped
