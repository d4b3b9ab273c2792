"""MATH-style data (``problem``, ``solution`` with ``\\boxed{}``): ``solution`` becomes the boxed answer.

Example:
    >>> boxed_solution("So the answer is $\\\\boxed{\\\\frac{1}{2}}$.")
    '\\\\frac{1}{2}'
"""

from __future__ import annotations

from pathlib import Path

from grpo_trl.data.registry import load_hub_or_file, register_builder, require_columns
from grpo_trl.rewards.text import extract_boxed


def boxed_solution(solution: str) -> str:
    """The last ``\\boxed{...}`` of a worked solution, or the whole text when there is none."""
    return extract_boxed(solution) or solution.strip()


@register_builder(
    "math", system_prompt="r1", known_sizes={"train": 7500, "test": 5000}, columns=("solution", "worked_solution")
)
def math(
    split: str = "train",
    *,
    source: str = "DigitalLearningGmbH/MATH-lighteval",
    config: str | None = "default",
    path: str | None = None,
    base_dir: Path | None = None,
    problem_column: str = "problem",
    solution_column_in: str = "solution",
):
    """Competition math: columns ``user`` (the problem), ``solution`` (boxed answer), ``worked_solution``."""
    ds = load_hub_or_file(source, config, split, path, base_dir)
    require_columns(ds, [problem_column, solution_column_in], f"math data ({path or source})")
    return ds.map(
        lambda row: {
            "user": row[problem_column],
            "solution": boxed_solution(row[solution_column_in]),
            "worked_solution": row[solution_column_in],
        },
        remove_columns=ds.column_names,
    )
