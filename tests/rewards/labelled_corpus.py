"""A labelled corpus of final answers, for comparing correctness rewards with their references.

Each row is a gold (as the data builders store it), the content of an answer block, and a label: does the block state
the gold's value? Right answers are the gold's value written the ways models write it (``VALUES``: ``1,200``,
``72.0``, ``\\dfrac{1}{2}``, ``0.5`` ...) inside the ways models wrap it (``WRAPPERS``: Markdown emphasis, ``$...$``,
``\\boxed{}`` with or without prose, a sentence ending in the value, units, a trailing period ...). Wrong answers are
near misses of the value (off by one, a factor of ten, the sign, a dropped digit) in the same wrappers.

``completion(row, layout)`` puts the block in a completion: ``tag`` (``<answer>..</answer>``), ``lines``
(``<answer>\\n..\\n</answer>``, the layout seed 004 and open-r1 read), ``think`` (a full think/answer completion) or
``bare`` (no tag).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction


@dataclass(frozen=True)
class Row:
    gold: str  # as the builder stores it (gsm8k: after ####, commas removed; math: the LaTeX of \boxed{})
    answer: str  # the answer block's content
    correct: bool
    style: str  # "gsm8k" or "math"
    wrapper: str  # the wrapper's name (for reports)
    value: str  # the value written inside the wrapper


def _thousands(n: int) -> str:
    return f"{n:,}"


def _int_values(n: int) -> tuple[list[str], list[str]]:
    right = [str(n), f"{n}.0", f"{n}.00"]
    if abs(n) >= 1000:
        right += [_thousands(n), _thousands(n).replace(",", "{,}"), _thousands(n).replace(",", "\\,")]
    wrong = {str(n + 1), str(n - 1), str(n * 10), str(-n) if n else "1", f"{n / 10:g}"}
    if abs(n) >= 10:
        wrong.add(str(n)[:-1])  # a dropped digit
    if n > 1:  # expressions whose last number is the gold: the value is not
        wrong |= {f"\\frac{{{n + 1}}}{{{n}}}", f"\\sqrt{{{n}}}", f"{n + 1}/{n}"}
    if abs(n) >= 1000:
        wrong.add(_thousands(n + 1))
    return right, sorted(wrong - {str(n)})


def _decimal_values(d: str) -> tuple[list[str], list[str]]:
    f = Fraction(d)
    right = [d, d + "0"]
    if f.denominator in (2, 4, 5):
        right.append(f"\\frac{{{f.numerator}}}{{{f.denominator}}}")
    wrong = {str(float(f * 10)), str(float(f / 10)), str(float(f + 1)), str(float(-f)), d.replace(".", "")}
    return right, sorted(w.removesuffix(".0") for w in wrong if Fraction(w) != f)


# GSM8K golds: integers small and large, negatives, decimals (money in cents), zero.
GSM8K_INTS = [0, 5, 18, 72, 100, 464, 1200, 5600, 12345, 1000000, -3, -15]
GSM8K_DECIMALS = ["2.5", "0.75", "12.25", "-1.5"]
MONEY = ["${v}", "\\${v}", "{v} dollars", "\\${v}.", "The total is ${v}."]  # currency: numbers >= 0 only

# MATH golds (the LaTeX inside \boxed{} of the worked solution): right and wrong values.
MATH = {
    "\\frac{1}{2}": (
        ["\\frac{1}{2}", "\\dfrac{1}{2}", "\\frac12", "1/2", "0.5", "\\tfrac{1}{2}"],
        ["2", "\\frac{1}{3}", "-\\frac{1}{2}", "0.25", "12"],
    ),
    "-\\frac{3}{4}": (
        ["-\\frac{3}{4}", "-\\dfrac{3}{4}", "-3/4", "-0.75", "\\frac{-3}{4}"],
        ["\\frac{3}{4}", "-\\frac{4}{3}", "-0.7"],
    ),
    "2\\sqrt{3}": (["2\\sqrt{3}", "2\\sqrt3", "\\sqrt{12}"], ["2", "3", "\\sqrt{3}", "2\\sqrt{2}", "6"]),
    "\\frac{\\sqrt{3}}{2}": (
        ["\\frac{\\sqrt{3}}{2}", "\\dfrac{\\sqrt{3}}{2}", "\\frac{1}{2}\\sqrt{3}"],
        ["\\frac{1}{2}", "\\sqrt{3}", "\\frac{\\sqrt{2}}{2}"],
    ),
    "3\\pi": (["3\\pi", "3 \\pi"], ["3", "\\pi", "6\\pi"]),
    "x^2+2x+1": (["x^2+2x+1", "(x+1)^2", "x^{2} + 2x + 1"], ["x^2+1", "(x-1)^2", "x^2+2x"]),
    "10": (["10", "10.0"], ["11", "100", "1"]),
    "2500": (["2500", "2,500", "2{,}500", "2,\\!500"], ["250", "25000", "2501"]),
}

# Wrappers: {v} is the value. (name, template, which golds it fits: "all", "gsm8k", "math")
WRAPPERS = [
    ("plain", "{v}", "all"),
    ("period", "{v}.", "all"),
    ("bold", "**{v}**", "all"),
    ("bold_period", "**{v}**.", "all"),
    ("bold_inner_period", "**{v}.**", "all"),
    ("italic", "*{v}*", "all"),
    ("underscore_bold", "__{v}__", "all"),
    ("inline_math", "${v}$", "all"),
    ("inline_math_period", "${v}$.", "all"),
    ("paren_math", "\\({v}\\)", "all"),
    ("display_math", "\\[{v}\\]", "all"),
    ("dollar_display", "$${v}$$", "all"),
    ("boxed", "\\boxed{{{v}}}", "all"),
    ("boxed_in_math", "$\\boxed{{{v}}}$", "all"),
    ("boxed_period", "\\boxed{{{v}}}.", "all"),
    ("bold_math", "**${v}$**", "all"),
    ("boxed_prose", "\\boxed{{The answer is {v}.}}", "all"),
    ("boxed_equation", "\\boxed{{x = {v}}}", "all"),
    ("sentence", "The answer is {v}.", "all"),
    ("sentence_final", "The final answer is {v}", "all"),
    ("sentence_bold", "The answer is **{v}**.", "all"),
    ("sentence_math", "Therefore, the answer is ${v}$.", "all"),
    ("answer_colon", "Answer: {v}", "all"),
    ("bold_answer_colon", "**Answer:** {v}", "all"),
    ("equation", "x = {v}", "all"),
    ("equation_period", "x = {v}.", "all"),
    ("so_equation", "So x = {v}", "all"),
    ("units", "{v} apples", "gsm8k"),
    ("units_period", "{v} apples.", "gsm8k"),
    ("sentence_units", "She has {v} apples.", "gsm8k"),
    ("text_units", "{v}\\text{{ cm}}", "gsm8k"),
    ("math_text_units", "${v} \\text{{ cm}}$", "gsm8k"),
]


def _fits(scope: str, style: str) -> bool:
    return scope == "all" or scope == style


def _rows_for(gold: str, style: str, right: list[str], wrong: list[str], extra: list[str]) -> list[Row]:
    rows = []
    for name, template, scope in WRAPPERS:
        if not _fits(scope, style) or ("x =" in template and "x" in gold):  # "x = (x+1)^2" states no value
            continue
        for v in right:
            rows.append(Row(gold, template.format(v=v), True, style, name, v))
        for v in wrong:
            rows.append(Row(gold, template.format(v=v), False, style, name, v))
    for i, template in enumerate(extra):
        for v in right[:2]:
            rows.append(Row(gold, template.format(v=v), True, style, f"money{i}", v))
        for v in wrong:
            rows.append(Row(gold, template.format(v=v), False, style, f"money{i}", v))
    return rows


def gsm8k_rows() -> list[Row]:
    rows = []
    for n in GSM8K_INTS:
        right, wrong = _int_values(n)
        rows += _rows_for(str(n), "gsm8k", right, wrong, MONEY if n >= 0 else [])
    for d in GSM8K_DECIMALS:
        right, wrong = _decimal_values(d)
        rows += _rows_for(d, "gsm8k", right, wrong, MONEY if not d.startswith("-") else [])
    return rows


def math_rows() -> list[Row]:
    rows = []
    for gold, (right, wrong) in MATH.items():
        rows += _rows_for(gold, "math", right, wrong, [])
    return rows


def corpus() -> list[Row]:
    """Every row, GSM8K-style golds first."""
    return gsm8k_rows() + math_rows()


LAYOUTS = {
    "tag": "<answer>{a}</answer>",
    "lines": "<answer>\n{a}\n</answer>",
    "think": "<think>\nLet me work it out.\n</think>\n<answer>\n{a}\n</answer>",
    "bare": "{a}",
}


def completion(row: Row, layout: str = "tag") -> str:
    return LAYOUTS[layout].format(a=row.answer)
