"""Token counts without the cost of ``tokenizer(...)``, for the token-length filters: one Rust call per batch, and a
byte bound that lets a short text skip the tokenizer."""

from __future__ import annotations

import json
from typing import Any

_SAME_BYTES_PRE = {"ByteLevel", "Split", "Digits", "Punctuation"}  # split text, never add bytes
_UNICODE_NORMALIZERS = {"NFC", "NFD", "NFKC", "NFKD"}  # identity on ASCII


def byte_bound_mode(tokenizer: Any) -> str | None:
    """When a byte-level BPE's token count is bounded by the text's UTF-8 length (each token is >= 1 byte):
    ``"any"`` without a normalizer, ``"ascii"`` for ASCII texts under NFC-like normalizers, else ``None``."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return None
    spec = json.loads(backend.to_str())
    pre, norm = spec.get("pre_tokenizer") or {}, spec.get("normalizer")
    pres = pre.get("pretokenizers", [pre]) if pre.get("type") == "Sequence" else [pre]
    types = {p.get("type") for p in pres}
    if (spec.get("model") or {}).get("type") != "BPE" or "ByteLevel" not in types or types - _SAME_BYTES_PRE:
        return None
    if norm is None:
        return "any"
    norms = norm.get("normalizers", [norm]) if norm.get("type") == "Sequence" else [norm]
    return "ascii" if {n.get("type") for n in norms} <= _UNICODE_NORMALIZERS else None


def _forwards_to_backend(tokenizer: Any) -> bool:
    """True when ``tokenizer(texts, ...)`` only forwards to its Rust tokenizer (nothing transformers would reset)."""
    try:
        from transformers.tokenization_utils_base import PreTrainedTokenizerBase
        from transformers.tokenization_utils_tokenizers import TokenizersBackend
    except ImportError:  # another transformers layout
        return False
    backend = getattr(tokenizer, "_tokenizer", None)
    cls = type(tokenizer)
    return (
        isinstance(tokenizer, TokenizersBackend)
        and cls._encode_plus is TokenizersBackend._encode_plus
        and cls.__call__ is PreTrainedTokenizerBase.__call__
        and backend is not None
        and backend.truncation is None
        and backend.padding is None
        and backend.encode_special_tokens == bool(getattr(tokenizer, "split_special_tokens", False))
    )


def token_lengths(tokenizer: Any, texts: list[str], special: bool = False) -> list[int]:
    """``len(tokenizer(text, add_special_tokens=special)["input_ids"])`` for each text, each distinct text once."""
    if not texts:
        return []
    unique = list(dict.fromkeys(texts))
    if _forwards_to_backend(tokenizer):
        backend = tokenizer._tokenizer
        encode = getattr(backend, "encode_batch_fast", backend.encode_batch)
        counts = [len(e) for e in encode(unique, add_special_tokens=special)]
    else:
        counts = [len(ids) for ids in tokenizer(unique, add_special_tokens=special)["input_ids"]]
    by_text = dict(zip(unique, counts))
    return [by_text[t] for t in texts]
