"""The ``calculator`` tool: exact arithmetic on integers with ``+ - * / ( )``, through the Countdown reward's AST
evaluator (never ``eval``).

    >>> calculator("(78 + 9) - (58 - 44)")
    '73'
    >>> calculator("7 / 2")
    '7/2 = 3.5'
"""

from __future__ import annotations

from grpo_trl.rewards.countdown import MAX_EQUATION_CHARS, evaluate_equation
from grpo_trl.tools.registry import register_tool


@register_tool("calculator")
def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression exactly.

    Args:
        expression: Integers combined with +, -, *, / and parentheses, e.g. "(3 + 5) * 2".

    Returns:
        The exact value: an integer, or a fraction with its decimal value.
    """
    result = evaluate_equation(str(expression).split("=", 1)[0])
    if result is None:
        raise ValueError(
            f"cannot evaluate {str(expression)[:80]!r}: use integers with + - * / and parentheses "
            f"(at most {MAX_EQUATION_CHARS} characters; division by zero is undefined)"
        )
    value = result[0]
    return str(value.numerator) if value.denominator == 1 else f"{value} = {float(value):.6g}"
