"""Turn completions into text and pull answers out of them: the one place rewards share this logic."""

from __future__ import annotations

import re
from typing import Any

# Numbers as people write them in answers: optional sign, thousands separators, decimals.
_NUMBER = re.compile(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?|-?\.\d+")
_DIGIT = re.compile(r"\d")
_NUMBER_CHARS_BACKWARD = re.compile(r"[-\d,.]*")  # matched on the reversed text: a run of number characters
_BOXED = "\\boxed{"
MAX_NUMBER_CHARS = 64  # longer digit runs are not treated as numbers (bounded float conversion)
MAX_BOXED_CHARS = 10_000  # a \boxed{ not closed within this many characters holds no answer
MAX_NUMBER_RUN = 4_096  # of a longer run of number characters ("1,2,3,..."), only the tail is read
_DELIMITED = re.compile(r"\$|\\\(|\\\[|\\boxed|\\fbox")
_TEXT_ARG = re.compile(r"\\(?:text|textbf|mathrm|mbox|operatorname)\s*\{[^{}]*\}")
_COMMAND = re.compile(r"\\[A-Za-z]+")
_MATH_WORDS = re.compile(r"sqrt|pi|sin|cos|tan|log|ln|exp|infty|inf|deg", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z]{2,}")
_MATH_CHARS = re.compile(r"[\w\s\\{}^_+\-*/=().,\[\]|<>!:;'%&~]*")


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
    """Content of the last ``\\boxed{...}`` (braces balanced, closed within ``MAX_BOXED_CHARS``), or ``None``."""
    start = text.rfind(_BOXED)
    if start < 0:
        return None
    i = start + len(_BOXED)
    stop = min(len(text), i + MAX_BOXED_CHARS)
    depth, j = 1, i
    while True:  # one step per closing brace, counting the opening ones between in C: linear
        close = text.find("}", j, stop)
        if close < 0:
            return None
        depth += text.count("{", j, close) - 1
        if depth <= 0:
            return text[i:close].strip() if depth == 0 else None
        j = close + 1


def extract_hash_answer(text: str) -> str | None:
    """GSM8K reference style: the text after the last ``####``, or ``None``."""
    idx = text.rfind("####")
    if idx < 0:
        return None
    return text[idx + 4 :].strip()


def last_number(text: str) -> str | None:
    """The last number-looking substring of ``text`` (as written), or ``None``; reads only the run of ``-0-9,.``
    around the last digit (its last ``MAX_NUMBER_RUN`` characters): linear time."""
    rev = text[::-1]
    digit = _DIGIT.search(rev)
    if digit is None:
        return None
    run = _NUMBER_CHARS_BACKWARD.match(rev, digit.start())
    end, start = len(text) - digit.start(), len(text) - run.end()
    found = _NUMBER.findall(text, max(start, end - MAX_NUMBER_RUN), end)
    return found[-1] if found else None


def extract_answer(text: str, tag: str = "answer") -> str | None:
    """Final answer of a completion: last ``<tag>``, else last ``\\boxed{}``, else ``####``, else the last number."""
    for candidate in (extract_tag(text, tag), extract_boxed(text), extract_hash_answer(text)):
        if candidate is not None:
            return candidate
    return last_number(text)


def parse_number(text: str | None) -> float | None:
    """The last number in an answer string (``$``, commas, units, trailing ``.0`` ignored: "$18.00" is 18.0)."""
    if text is None:
        return None
    num = last_number(text)
    return None if num is None or len(num) > MAX_NUMBER_CHARS else float(num.replace(",", ""))  # _NUMBER: parseable


def math_form(text: str) -> str:
    """``text`` as math-verify should read it: bare LaTeX and expressions between ``$...$``; text with delimiters
    (``$``, ``\\(``, ``\\[``, ``\\boxed``) or prose (words outside ``\\text{}``, or ``####``) as is."""
    return text if _DELIMITED.search(text) or is_prose(text) else f"${text}$"


def is_prose(text: str) -> bool:
    """No math delimiters, and words outside ``\\text{}`` or characters that are not math (``####``)."""
    if _DELIMITED.search(text):
        return False
    bare = _MATH_WORDS.sub(" ", _COMMAND.sub(" ", _TEXT_ARG.sub(" ", text)))
    return bool(_WORD.search(bare)) or not _MATH_CHARS.fullmatch(text)
