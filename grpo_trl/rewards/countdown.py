"""The Countdown reward: a safe arithmetic evaluator (an AST walk, never ``eval``) and the 0/1 correctness check."""

from __future__ import annotations

import ast
import operator
import re
from fractions import Fraction
from typing import Any

from grpo_trl.rewards.registry import register_reward, text_of
from grpo_trl.rewards.text import extract_tag

MAX_EQUATION_CHARS = 256  # longer "equations" are not Countdown answers
MAX_OPERAND = 10**6  # bigger literals are rejected: keeps every intermediate value small
_ALLOWED = re.compile(r"[0-9+\-*/().\s]+\Z")  # ASCII digits only: str.isdigit() admits unicode digits
_INTEGER = re.compile(r"[0-9]+")
_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


def _walk(node: ast.AST) -> Fraction:
    if isinstance(node, ast.Expression):
        return _walk(node.body)
    if isinstance(node, ast.Constant) and type(node.value) is int and 0 <= node.value <= MAX_OPERAND:
        return Fraction(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        return _BINOPS[type(node.op)](_walk(node.left), _walk(node.right))  # exact; ZeroDivisionError: the caller's
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _walk(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    raise ValueError(f"not allowed in a Countdown equation: {type(node).__name__}")


def evaluate_equation(equation: str) -> tuple[Fraction, list[int]] | None:
    """Exact value of an integer ``+ - * / ( )`` expression (bounded in length and operands) and the integers it
    uses, or ``None`` if not allowed (division by zero too)."""
    if len(equation) > MAX_EQUATION_CHARS or not _ALLOWED.match(equation):
        return None
    try:
        value = _walk(ast.parse(equation.strip(), mode="eval"))
    except (SyntaxError, ValueError, ZeroDivisionError, RecursionError, MemoryError, TypeError):
        return None
    return value, [int(d) for d in _INTEGER.findall(equation)]  # each digit run is an int literal once it parsed


def _as_numbers(value: Any) -> list[int] | None:
    if isinstance(value, str):
        value = re.findall(r"-?\d+", value)
    try:
        return sorted(int(v) for v in value)
    except (TypeError, ValueError):
        return None


def score_equation(equation: str | None, nums: Any, target: Any, tolerance: float = 1e-5) -> float:
    """1.0 if ``equation`` (text after ``=`` ignored) uses exactly ``nums`` once each and equals ``target``."""
    equation = (equation or "").split("=", 1)[0]
    if len(equation) > MAX_EQUATION_CHARS or sorted(int(d) for d in _INTEGER.findall(equation)) != _as_numbers(nums):
        return 0.0  # cheap rejection before parsing
    result = evaluate_equation(equation)
    try:
        return 1.0 if result is not None and abs(float(result[0]) - float(target)) < tolerance else 0.0
    except (TypeError, ValueError, OverflowError):  # OverflowError: an int target past float's range
        return 0.0


@register_reward("countdown", passes_at=1.0)
def countdown(completions: list, nums: list, target: list, tolerance: float = 1e-5, **kwargs) -> list[float]:
    """1.0 when the last ``<answer>`` equation uses every number in ``nums`` once and evaluates to ``target``."""
    return [
        score_equation(extract_tag(text), n, t, tolerance)
        for text, n, t in zip(text_of(completions), nums, target, strict=True)
    ]
