"""GSM8K (``openai/gsm8k``, config ``main``): the question as the user turn, ``solution`` = the answer after ``####``.

Example:
    >>> gsm8k_solution("Natalia sold 48/2 = 24 clips in May.\\n#### 72")
    '72'
"""

from __future__ import annotations

from pathlib import Path

from grpo_trl.data.registry import load_hub_or_file, register_builder, require_columns
from grpo_trl.rewards.text import extract_hash_answer


def gsm8k_solution(answer: str) -> str:
    """The short answer after ``####`` with thousands commas removed (GSM8K writes e.g. ``#### 1,000``)."""
    return (extract_hash_answer(answer) or answer).replace(",", "").strip()


@register_builder(
    "gsm8k", system_prompt="xml", known_sizes={"train": 7473, "test": 1319}, columns=("solution", "reasoning")
)
def gsm8k(
    split: str = "train",
    *,
    source: str = "openai/gsm8k",
    config: str = "main",
    path: str | None = None,
    base_dir: Path | None = None,
):
    """GSM8K grade-school math: columns ``user``, ``solution`` (short answer), ``reasoning`` (the reference steps)."""
    ds = load_hub_or_file(source, config, split, path, base_dir)
    require_columns(ds, ["question", "answer"], f"gsm8k data ({path or source})")
    return ds.map(
        lambda row: {"user": row["question"], "solution": gsm8k_solution(row["answer"]), "reasoning": row["answer"]},
        remove_columns=ds.column_names,
    )
