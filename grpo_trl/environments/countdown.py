"""The built-in Countdown environment: the model checks equations with a tool; rows need ``nums`` and ``target``."""

from __future__ import annotations

from typing import Any

from grpo_trl.environments.registry import register_environment
from grpo_trl.rewards.countdown import _as_numbers, evaluate_equation


@register_environment("countdown")
class Countdown:
    """A Countdown puzzle per rollout: reach ``target`` with each of ``nums`` exactly once."""

    def __init__(self, max_attempts: int = 4):
        self.max_attempts = int(max_attempts)
        self.reset()

    def reset(self, nums: Any = None, target: Any = None, **row: Any) -> None:
        self.nums = _as_numbers(nums) or []
        self.target = target
        self.attempts = 0
        self.score = 0.0

    def check_equation(self, equation: str) -> str:
        """Check a candidate equation against this puzzle's numbers and target.

        Args:
            equation: An arithmetic expression using each given number exactly once, e.g. "(3 + 5) * 2".

        Returns:
            Whether the equation is correct, and what it evaluates to.
        """
        if self.attempts >= self.max_attempts:
            raise ValueError(f"no attempts left (at most {self.max_attempts} per puzzle)")
        self.attempts += 1
        self.score = max(self.score, 0.1)
        text = str(equation).split("=", 1)[0].strip()
        result = evaluate_equation(text)
        if result is None:
            return "invalid: use integers with + - * / and parentheses"
        value, used = result
        if sorted(used) != self.nums:
            return f"wrong numbers: use each of {self.nums} exactly once"
        shown = int(value) if value.denominator == 1 else float(value)
        try:
            hit = abs(float(value) - float(self.target)) < 1e-6
        except (TypeError, ValueError):  # a row's target that is not a number
            hit = False
        self.score = max(self.score, 1.0 if hit else 0.2)
        return f"correct: {text} = {shown}" if hit else f"wrong: {text} = {shown}, the target is {self.target}"

    def get_reward(self) -> float:
        """1.0 solved, 0.2 right numbers but missed, 0.1 tried, 0.0 no attempt."""
        return self.score
