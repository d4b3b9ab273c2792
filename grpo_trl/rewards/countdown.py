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


def _walk(node: ast.AST, used: list[int]) -> Fraction:
    if isinstance(node, ast.Expression):
        return _walk(node.body, used)
    if isinstance(node, ast.Constant) and type(node.value) is int and 0 <= node.value <= MAX_OPERAND:
        used.append(node.value)
        return Fraction(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = _walk(node.left, used), _walk(node.right, used)
        return _BINOPS[type(node.op)](left, right)  # Fraction: exact; ZeroDivisionError handled by the caller
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _walk(node.operand, used)
        return -value if isinstance(node.op, ast.USub) else value
    raise ValueError(f"not allowed in a Countdown equation: {type(node).__name__}")


def evaluate_equation(equation: str) -> tuple[Fraction, list[int]] | None:
    """Exact value of an integer ``+ - * / ( )`` expression (bounded in length and operands) and the integers it
    uses, or ``None`` if not allowed (division by zero too)."""
    if len(equation) > MAX_EQUATION_CHARS or not _ALLOWED.match(equation):
        return None
    try:
        tree = ast.parse(equation.strip(), mode="eval")
        used: list[int] = []
        return _walk(tree, used), used
    except (SyntaxError, ValueError, ZeroDivisionError, RecursionError, MemoryError, TypeError):
        return None


def _as_numbers(value: Any) -> list[int] | None:
    if isinstance(value, str):
        value = re.findall(r"-?\d+", value)
    try:
        return sorted(int(v) for v in value)
    except (TypeError, ValueError):
        return None


def score_equation(equation: str | None, nums: Any, target: Any, tolerance: float = 1e-5) -> float:
    """1.0 if ``equation`` (text after ``=`` ignored) uses exactly ``nums`` once each and equals ``target``."""
    if equation is None:
        return 0.0
    equation = equation.split("=", 1)[0]
    expected = _as_numbers(nums)
    if expected is None or len(equation) > MAX_EQUATION_CHARS:
        return 0.0
    if sorted(int(d) for d in _INTEGER.findall(equation)) != expected:  # cheap rejection before parsing
        return 0.0
    result = evaluate_equation(equation)
    if result is None:
        return 0.0
    value, used = result
    try:
        goal = float(target)
    except (TypeError, ValueError):
        return 0.0
    if sorted(used) != expected:
        return 0.0
    return 1.0 if abs(float(value) - goal) < tolerance else 0.0


@register_reward("countdown", passes_at=1.0)
def countdown(completions: list, nums: list, target: list, tolerance: float = 1e-5, **kwargs) -> list[float]:
    """1.0 when the last ``<answer>`` equation uses every number in ``nums`` once and evaluates to ``target``."""
    return [
        score_equation(extract_tag(text), n, t, tolerance)
        for text, n, t in zip(text_of(completions), nums, target, strict=True)
    ]
