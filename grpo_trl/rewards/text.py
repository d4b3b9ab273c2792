"""Turn completions into text and pull answers out of them: the one place rewards share this logic.

Example:
    >>> completion_text([{"role": "assistant", "content": "<answer>42</answer>"}])
    '<answer>42</answer>'
    >>> extract_tag("a <answer> 1 </answer> b <answer>2</answer>", "answer")
    '2'
    >>> parse_number("$1,234.50 dollars")
    1234.5
"""

from __future__ import annotations

import re
from typing import Any

# Numbers as people write them in answers: optional sign, thousands separators, decimals.
_NUMBER = re.compile(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?|-?\.\d+")
_BOXED = "\\boxed{"
MAX_NUMBER_CHARS = 64  # longer digit runs are not treated as numbers (bounded float conversion)


def completion_text(completion: Any) -> str:
    """Text of one completion: a plain string, or a conversational list of messages (assistant contents joined)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        return str(completion.get("content") or "")
    if isinstance(completion, (list, tuple)):
        parts = [
            completion_text(m)
            for m in completion
            if not isinstance(m, dict) or m.get("role", "assistant") == "assistant"
        ]
        return "".join(parts)
    return "" if completion is None else str(completion)


def extract_tag(text: str, tag: str = "answer") -> str | None:
    """Stripped content of the last ``<tag>...</tag>`` in ``text``, or ``None``. Linear time, no regex backtracking."""
    close = f"</{tag}>"
    end = text.rfind(close)
    if end < 0:
        return None
    start = text.rfind(f"<{tag}>", 0, end)
    if start < 0:
        return None
    return text[start + len(tag) + 2 : end].strip()


def extract_boxed(text: str) -> str | None:
    """Content of the last ``\\boxed{...}`` (nested braces balanced), or ``None``."""
    start = text.rfind(_BOXED)
    if start < 0:
        return None
    depth, i = 1, start + len(_BOXED)
    for j in range(i, len(text)):
        ch = text[j]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[i:j].strip()
    return None


def extract_hash_answer(text: str) -> str | None:
    """GSM8K reference style: the text after the last ``####``, or ``None``."""
    idx = text.rfind("####")
    if idx < 0:
        return None
    return text[idx + 4 :].strip()


def last_number(text: str) -> str | None:
    """The last number-looking substring of ``text`` (as written), or ``None``."""
    found = None
    for m in _NUMBER.finditer(text):
        found = m.group(0)
    return found


def extract_answer(text: str, tag: str = "answer") -> str | None:
    """Final answer of a completion: last ``<tag>``, else last ``\\boxed{}``, else ``####``, else the last number."""
    for candidate in (extract_tag(text, tag), extract_boxed(text), extract_hash_answer(text)):
        if candidate is not None:
            return candidate
    return last_number(text)


def parse_number(text: str | None) -> float | None:
    """The single number in an answer string (``$``, commas, units, trailing ``.0`` ignored), else ``None``.

    Only the last number counts, so "18 dollars" and "$18.00" are both 18.0; text with no number gives ``None``.
    """
    if text is None:
        return None
    num = last_number(text)
    if num is None or len(num) > MAX_NUMBER_CHARS:
        return None
    try:
        return float(num.replace(",", ""))
    except ValueError:  # pragma: no cover - the regex only admits parseable numbers
        return None
