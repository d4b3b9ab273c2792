"""How math-verify reads an answer (``math_form``, ``request``, ``verdict``; plain numbers decided without it:
``number``, ``same_number``), and math-verify in a child: ``python -I path/to/_verify_worker.py`` (nothing from the
cwd). Protocol: ``"ready"`` once warm, then one JSON ``[gold, answer, latex]`` per stdin line, one ``verdict`` per
stdout line. Math-verify's signal timeouts are off: the parent bounds each item by killing this process.
"""
from __future__ import annotations

import functools
import json
import logging
import re
import sys
from fractions import Fraction

# Plain integers (no leading zeros) compare exactly like math-verify compares them; tested against math-verify.
_PLAIN_INT = re.compile(r"-?(?:0|[1-9][0-9]{0,14})\Z")
# A plain number, as math-verify reads it: an integer, a short decimal (a sympy Float), or \frac{a}{b} (a Rational)
_NUMBER = re.compile(r"(-?)(?:(0|[1-9]\d{0,14})(?:\.(\d{1,6}))?|\\[dt]?frac\{(0|[1-9]\d{0,5})\}\{([1-9]\d{0,5})\})")
_WRAPPED = re.compile(r"\$\s*(.*?)\s*\$|\\boxed\{\s*(.*?)\s*\}", re.DOTALL)
# A worked gold ("So the answer is $\boxed{72}$."): one \boxed number, prose without digits or commands around it
_GOLD_BOX = re.compile(r"[A-Za-z ,.:;!?'$]*\\boxed\{((?:[^{}]|\{[^{}]*\})*)\}[A-Za-z ,.:;!?'$]*\Z")
_DELIMITED = re.compile(r"\$|\\\(|\\\[|\\boxed|\\fbox")
_TEXT_ARG = re.compile(r"\\(?:text|textbf|mathrm|mbox|operatorname)\s*\{[^{}]*\}")
_COMMAND = re.compile(r"\\[A-Za-z]+")
_MATH_WORDS = re.compile(r"sqrt|pi|sin|cos|tan|log|ln|exp|infty|inf|deg", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z]{2,}")
_MATH_CHARS = re.compile(r"[\w\s\\{}^_+\-*/=().,\[\]|<>!:;'%&~]*")


def math_form(text: str) -> str:
    """``text`` as math-verify should read it: LaTeX and bare expressions go between ``$...$``; text that already
    has delimiters (``$``, ``\\(``, ``\\[``, ``\\boxed``) or reads as prose (words outside ``\\text{}``, or characters
    that are not math, like ``####``) is left as is.
    """
    if _DELIMITED.search(text) or is_prose(text):
        return text
    return f"${text}$"


def is_prose(text: str) -> bool:
    """``text`` has no math delimiters and reads as prose: words outside ``\\text{}``, or characters that are not
    math (``####``)."""
    if _DELIMITED.search(text):
        return False
    bare = _MATH_WORDS.sub(" ", _COMMAND.sub(" ", _TEXT_ARG.sub(" ", text)))
    return bool(_WORD.search(bare)) or not _MATH_CHARS.fullmatch(text)


def number(text: str, gold: bool = False) -> tuple[Fraction, bool] | None:
    """The exact value of ``text`` and whether it is a decimal, when it is a plain number as math-verify reads it
    (``72``, ``-0.25``, ``$\\boxed{\\frac{7}{12}}$``; a ``gold`` may be one boxed number in digit-free prose)."""
    text = text.strip()
    box = _GOLD_BOX.match(text) if gold else None
    text = box[1].strip() if box else text
    for _ in range(3):
        wrapped = _WRAPPED.fullmatch(text)
        text = (wrapped[1] if wrapped[1] is not None else wrapped[2]) if wrapped else text
    match = _NUMBER.fullmatch(text)
    if match is None or (match[3] and len(match[2]) > 9):  # at most 15 digits: exact in a sympy Float
        return None
    sign, whole, decimals, num, den = match.groups()
    value = Fraction(int(num), int(den)) if num else Fraction(f"{whole}.{decimals or 0}")
    return (-value if sign else value), decimals is not None


@functools.lru_cache(maxsize=4096)
def gold_number(gold: str) -> tuple[Fraction, bool] | None:
    return number(gold, gold=True) if len(gold) < 2_000 else None


def same_number(gold: tuple[Fraction, bool], answer: tuple[Fraction, bool]) -> float | None:
    """math-verify's verdict on two plain numbers where it is certain: exact values compare exactly, a decimal
    (a sympy Float) to 6 places, so values 1e-5 apart differ; None: ask math-verify (1/3 and 0.333333 are equal)."""
    if gold[0] == answer[0]:
        return 1.0
    return 0.0 if not (gold[1] or answer[1]) or abs(gold[0] - answer[0]) > 1e-5 else None


def request(gold: str, answer: str) -> tuple[str, str, bool]:
    """What a worker is sent: both in math form, and whether the answer is one LaTeX expression (see the worker)."""
    form = math_form(answer)
    return math_form(gold), form, form != answer or answer.startswith("\\boxed{")


_GOLDS: dict[str, list] = {}
# One of each common answer form (roots, fractions, intervals, sets, polynomials, prose), compared as in a run
_WARM = [
    ("$1$", "1"),
    ("$3\\sqrt{2}$", "\\sqrt{18}"),
    ("$\\frac{5}{8}$", "0.625"),
    ("The answer is $(-\\infty, 2]$.", "[2, \\infty)"),
    ("$\\{4, 5\\}$", "\\{5,4\\}"),
    ("$y^2 - 1$", "(y-1)(y+1)"),
    ("$2\\pi$", "\\pi \\cdot 2"),
]


def verdict(gold: str, answer: str, latex: bool) -> float | None:
    """1.0 / 0.0 as math-verify verifies ``answer`` against ``gold`` (parsed once), None when the gold has no value.

    ``latex``: the answer is one LaTeX expression (a ``\\boxed{}``, or bare LaTeX put between ``$...$``), read like
    TRL's ``accuracy_reward`` reads a completion (LaTeX only, boxed first, first match); otherwise with math-verify's
    default extraction (LaTeX and plain expressions, so "The answer is 72." reads 72).
    """
    from math_verify import LatexExtractionConfig, parse, verify

    if gold not in _GOLDS:
        if len(_GOLDS) > 10_000:
            _GOLDS.clear()
        _GOLDS[gold] = parse(gold, parsing_timeout=None)
    if not _GOLDS[gold]:
        return None
    if latex:  # its default normalization includes units, as TRL's
        config = [LatexExtractionConfig(boxed_match_priority=0)]
        parsed = parse(answer, config, extraction_mode="first_match", parsing_timeout=None)
    else:
        parsed = parse(answer, parsing_timeout=None)
    return float(verify(_GOLDS[gold], parsed, timeout_seconds=None))


def main() -> None:
    logging.disable(logging.WARNING)  # math-verify warns that its own timeout is disabled: the parent has one
    for gold, answer in _WARM:  # imports and sympy's first-use work, before "ready": the parent bounds each item apart
        verdict(gold, f"\\boxed{{{answer}}}", True)
    sys.stdout.buffer.write(b'"ready"\n')
    sys.stdout.buffer.flush()
    for line in sys.stdin.buffer:
        try:
            result = verdict(*json.loads(line))
        except Exception:  # noqa: BLE001 - math-verify failing on hostile input is a wrong answer
            result = 0.0
        sys.stdout.buffer.write(json.dumps(result).encode() + b"\n")
        sys.stdout.buffer.flush()


if __name__ == "__main__":
    main()
