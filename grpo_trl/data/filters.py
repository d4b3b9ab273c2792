"""Token-length filters (``data.max_prompt_tokens`` / ``max_solution_tokens``) and ``limit``: the rows a row-at-a-time
filter keeps (prompts rendered as ``GRPOTrainer`` renders them), but batched, short texts never tokenized, in parallel,
lazily up to ``limit``, cached by content in ``$GRPO_TRL_CACHE/token-filter``; a stream is counted as it is read."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

from grpo_trl.data.image_tokens import IMAGE_COLUMNS, is_processor, prompt_lengths, row_images, text_tokenizer
from grpo_trl.data.render import Rendering
from grpo_trl.data.sources import column_names
from grpo_trl.data.token_count import byte_bound_mode, token_lengths
from grpo_trl.errors import DataError, GrpoTrlError, shown
from grpo_trl.io import read_json, write

logger = logging.getLogger(__name__)

ENV_COLUMN = "environment"  # names the row's environment when there are several (TRL's column)
BATCH_SIZE = 1000  # rows per apply_chat_template / tokenizer call
MIN_ROWS_PER_PROC = 20_000  # below this, one more process costs more (fork, pickling) than it saves
CHAR_SLACK = 4  # normalizers may merge characters; the bound stays far above any row that could fit
FORMAT_VERSION = "2"  # bump when what is cached changes meaning
PARALLELISM = "TOKENIZERS_PARALLELISM"


def num_proc_for(rows: int) -> int | None:
    """Processes for ``rows`` rows: one per available core, at least ``MIN_ROWS_PER_PROC`` rows each."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    n = min(cores, rows // MIN_ROWS_PER_PROC)
    return n if n > 1 else None


def _token_counter(tokenizer: Any, max_p: int | None, max_s: int | None, sol_col: str, rendering: Rendering):
    """A batched ``map`` function giving ``_ok_p`` / ``_ok_s`` (prompt / solution within bounds), counted as TRL
    tokenizes them."""
    processor = tokenizer if is_processor(tokenizer) else None
    tokenizer = text_tokenizer(tokenizer)
    longest = max((len(t) for t in tokenizer.get_vocab()), default=1) or 1  # chars one token can stand for
    p_chars = (max_p or 0) * longest * CHAR_SLACK
    s_chars = (max_s or 0) * longest * CHAR_SLACK
    mode = byte_bound_mode(tokenizer)
    extra = tokenizer.num_special_tokens_to_add() if hasattr(tokenizer, "num_special_tokens_to_add") else None

    def surely_fits(text: str, limit: int) -> bool:  # tokens <= bytes <= limit
        if mode == "ascii":
            return text.isascii() and len(text) <= limit
        return mode == "any" and len(text) <= limit and len(text.encode("utf-8", "surrogatepass")) <= limit

    def content_chars(prompt: list | str) -> int:
        if isinstance(prompt, str):  # TRL's standard format: the text itself, no chat template
            return len(prompt)
        return sum(len(str(m.get("content") or "")) for m in prompt if isinstance(m, dict))

    def lengths_ok(texts: list[str], rows: list[int], limit: int, flags: list[bool], special: bool = False) -> None:
        bound = limit if not special else -1 if extra is None else limit - extra  # special tokens on top of the text
        todo = [i for i in rows if not surely_fits(texts[i], bound)]
        for i, length in zip(todo, token_lengths(tokenizer, [texts[i] for i in todo], special)):
            flags[i] = length <= limit

    def count(batch: dict) -> dict:
        n = len(batch["prompt"] if "prompt" in batch else batch[sol_col])
        ok_p, ok_s = [True] * n, [True] * n
        if max_p:
            prompts = batch["prompt"]
            ok_p = [content_chars(p) <= p_chars for p in prompts]  # cannot fit: never rendered nor tokenized
            chats = [i for i in range(n) if ok_p[i] and not isinstance(prompts[i], str)]
            strings = [i for i in range(n) if ok_p[i] and isinstance(prompts[i], str)]
            texts = [p if isinstance(p, str) else "" for p in prompts]
            groups: dict[Any, list[int]] = {}  # rows rendered alike: by environment when tools differ by it
            envs = batch.get(ENV_COLUMN) if rendering.per_row else None
            for i in chats:
                groups.setdefault(envs[i] if envs else None, []).append(i)
            for env, rows in groups.items():  # apply_chat_template(tokenize=True) in two steps: short texts skip one
                if processor is not None:  # as GRPOTrainer tokenizes a VLM's prompts: images expanded to their tokens
                    pics = [row_images(batch, i) for i in rows]
                    counts = prompt_lengths(processor, [prompts[i] for i in rows], pics, rendering.kwargs_for(env))
                    for i, n in zip(rows, counts):
                        ok_p[i] = n <= max_p
                    continue
                rendered = tokenizer.apply_chat_template(
                    [prompts[i] for i in rows], tokenize=False, add_generation_prompt=True, **rendering.kwargs_for(env)
                )
                for i, text in zip(rows, rendered):
                    texts[i] = text
            if chats and processor is None:
                lengths_ok(texts, chats, max_p, ok_p)
            if strings:
                lengths_ok(texts, strings, max_p, ok_p, special=True)
        if max_s:  # only rows the prompt filter kept, as when the filters ran one after the other
            texts = [str(x) for x in batch[sol_col]]
            fits = [i for i in range(n) if ok_p[i] and len(texts[i]) <= s_chars]
            ok_s = [not ok_p[i] or len(texts[i]) <= s_chars for i in range(n)]  # too long: never tokenized
            lengths_ok(texts, fits, max_s, ok_s)
        return {"_ok_p": ok_p, "_ok_s": ok_s}

    return count


def _once_per_node():
    """Local main process first under a multi-process launch (the others then hit its cache); else nothing."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return contextlib.nullcontext()
    from accelerate import PartialState

    return PartialState().local_main_process_first()


def _kept(ds: Any, counter, limit: int | None, max_p: Any, max_s: Any) -> tuple[list[int], dict[str, int]]:
    n = len(ds)
    kept: list[int] = []
    dropped_p = dropped_s = 0
    start, chunk = 0, n if limit is None else max(2 * limit, BATCH_SIZE)
    while start < n and (limit is None or len(kept) < limit):
        end = min(n, start + chunk)
        part, before = ds.select(range(start, end)), os.environ.get(PARALLELISM)
        try:
            flags = part.map(
                counter,
                batched=True,
                batch_size=BATCH_SIZE,
                num_proc=num_proc_for(end - start),
                remove_columns=part.column_names,
                keep_in_memory=True,
                load_from_cache_file=False,
                new_fingerprint=f"grpo-trl-token-filter-{start}-{end}",
                desc="token-length filter",
            )
        finally:  # map(num_proc>1) leaves TOKENIZERS_PARALLELISM=false in the C environment (then 1 core)
            os.unsetenv(PARALLELISM) if before is None else os.putenv(PARALLELISM, before)
        for i, (ok_p, ok_s) in enumerate(zip(flags["_ok_p"], flags["_ok_s"]), start):
            if limit is not None and len(kept) == limit:
                break
            if ok_p and ok_s:
                kept.append(i)
            dropped_p += not ok_p
            dropped_s += ok_p and not ok_s
        start, chunk = end, chunk * 2
    counts = (("max_prompt_tokens", max_p, dropped_p), ("max_solution_tokens", max_s, dropped_s))
    return kept, {name: count for name, on, count in counts if on}


def _cache_key(ds: Any, tokenizer: Any, columns: list[str], options: dict) -> str | None:
    """A hash of the rows, the tokenizer (``tokenizer.json``, template, processor) and the options."""
    import pyarrow as pa

    backend = getattr(text_tokenizer(tokenizer), "backend_tokenizer", None)
    if backend is None:
        return None
    table = ds.select_columns(columns).with_format("arrow")[:]
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    h = hashlib.sha256(FORMAT_VERSION.encode())
    processor = tokenizer.to_json_string() if is_processor(tokenizer) else ""  # its settings decide image tokens
    for part in (sink.getvalue(), backend.to_str(), str(tokenizer.chat_template), processor):
        h.update(part.encode() if isinstance(part, str) else part)
    h.update(json.dumps(options, sort_keys=True, default=str).encode())
    return h.hexdigest()


def filter_by_tokens(
    ds: Any, cfg: dict, tokenizer: Any, rendering: Rendering | None = None
) -> tuple[Any, dict[str, int]]:
    """``cfg``'s token bounds and ``limit`` applied to ``ds``: the kept rows and ``{filter: rows dropped}``."""
    max_p, max_s, limit = cfg.get("max_prompt_tokens"), cfg.get("max_solution_tokens"), cfg.get("limit")
    streamed = not hasattr(ds, "__len__")
    if not (max_p or max_s):
        if limit is None:
            return ds, {}
        return (ds.take(limit) if streamed else ds.select(range(min(limit, len(ds))))), {}
    if tokenizer is None:
        raise DataError("data.max_prompt_tokens / max_solution_tokens need the recipe's tokenizer")
    sol_col = cfg.get("solution_column", "solution")
    names = column_names(ds)
    if max_s and sol_col not in names:
        raise DataError(f"data.max_solution_tokens: no column {sol_col!r}; columns: {', '.join(map(shown, names))}")
    columns = (["prompt"] if max_p else []) + ([sol_col] if max_s else [])
    rendering = rendering or Rendering()
    if rendering.per_row and max_p and ENV_COLUMN in names and ENV_COLUMN not in columns:
        columns.insert(1, ENV_COLUMN)
    if max_p and is_processor(tokenizer):
        columns += [c for c in IMAGE_COLUMNS if c in names]
    if streamed:  # lazily: each batch counted as training reads it
        counter = _token_counter(tokenizer, max_p, max_s, sol_col, rendering)
        kept = ds.map(counter, batched=True, batch_size=BATCH_SIZE).filter(lambda row: row["_ok_p"] and row["_ok_s"])
        kept = kept.remove_columns(["_ok_p", "_ok_s"])
        return (kept.take(limit) if limit is not None else kept), {}
    options = {"max_prompt_tokens": max_p, "max_solution_tokens": max_s, "limit": limit, "columns": columns}
    options["rendering"] = [rendering.common, rendering.by_environment]
    with _once_per_node():
        key = _cache_key(ds, tokenizer, columns, options)
        root = Path(os.environ.get("GRPO_TRL_CACHE") or Path.home() / ".cache" / "grpo-trl")
        path = root / "token-filter" / f"{key}.json" if key else None
        try:  # a corrupt or missing entry is computed again
            hit = read_json(path) if path else None
            kept, dropped = [int(i) for i in hit["kept"]], {k: int(v) for k, v in hit["dropped"].items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError, GrpoTrlError):
            counter = _token_counter(tokenizer, max_p, max_s, sol_col, rendering)
            kept, dropped = _kept(ds.select_columns(columns), counter, limit, max_p, max_s)
            try:
                if path is not None:
                    write(path, json.dumps({"kept": kept, "dropped": dropped}), mine=True)
            except GrpoTrlError as exc:  # a read-only home: filter every time rather than fail
                logger.warning("token-length filter: cannot write the cache (%s)", exc)
    return ds.select(kept), dropped
