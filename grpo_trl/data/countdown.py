"""Countdown: reach ``target`` from ``nums`` with + - * /, each number once. From the Hub, or ``source: generate``:
solvable problems from a seed (a random expression over the drawn numbers, redrawn unless its value is a positive
integer), the expression kept in ``reference_equation`` (it scores 1.0 with the ``countdown`` reward)."""

from __future__ import annotations

import hashlib
import operator
import random
from fractions import Fraction
from pathlib import Path

from grpo_trl.data.registry import DataError, load_hub_or_file, register_builder, require_columns

# The user turn of the Countdown write-up (ms-swift CoundownTaskPreprocessor / mini-deepseek-r1).
USER_TEMPLATE = (
    "Using the numbers {numbers}, create an equation that equals {target}. You can use basic arithmetic operations "
    "(+, -, *, /) and each number can only be used once. Show your work in <think> </think> tags. And return the "
    "final equation and answer in <answer> </answer> tags, for example <answer> (1 + 2) / 3 * 4 = 4 </answer>."
)

_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}


def _random_expression(nums: list[int], rng: random.Random) -> tuple[str, Fraction] | None:
    """Combine all numbers pairwise in random order with random operators; None on division by zero."""
    items = [(str(n), Fraction(n)) for n in nums]
    rng.shuffle(items)
    while len(items) > 1:
        i, j = rng.sample(range(len(items)), 2)
        (ea, va), (eb, vb) = items[i], items[j]
        op = rng.choice("+-*/")
        if op == "/" and vb == 0:
            return None
        merged = (f"({ea} {op} {eb})", _OPS[op](va, vb))
        items = [it for k, it in enumerate(items) if k not in (i, j)] + [merged]
    expr, value = items[0]
    return (expr[1:-1] if expr.startswith("(") else expr), value


MAX_NUMBERS = 32  # numbers per problem (the Countdown tasks have 3 to 6): each one is drawn and held in memory
TRIES_PER_ROW = 1000


def generate_problems(
    size: int, seed: int = 0, min_numbers: int = 3, max_numbers: int = 4, max_number: int = 99, max_target: int = 999
) -> list[dict]:
    """``size`` solvable problems: ``nums``, ``target`` (a positive integer), ``reference_equation``."""
    if not 2 <= min_numbers <= max_numbers <= MAX_NUMBERS:
        raise DataError(
            f"countdown generator needs 2 <= min_numbers <= max_numbers <= {MAX_NUMBERS} (got {min_numbers}, "
            f"{max_numbers})",
            key="data.max_numbers",
        )
    if max_number < 1:
        raise DataError(
            f"countdown draws numbers from 1 to max_number (got {max_number}); set 1 or more", key="data.max_number"
        )
    rng = random.Random(seed)
    rows: list[dict] = []
    for _ in range(TRIES_PER_ROW * size):  # a search that cannot succeed (targets out of reach) ends
        if len(rows) == size:
            break
        nums = [rng.randint(1, max_number) for _ in range(rng.randint(min_numbers, max_numbers))]
        expr, value = _random_expression(nums, rng) or ("", Fraction(0))  # a division by zero: drawn again
        if value.denominator == 1 and 1 <= value <= max_target:
            rows.append({"nums": nums, "target": int(value), "reference_equation": expr})
    if len(rows) < size:
        raise DataError(
            f"countdown found {len(rows)} of {size} problems with a target from 1 to {max_target} in "
            f"{TRIES_PER_ROW * size:,} draws of numbers from 1 to {max_number}; lower data.max_number",
            key="data.max_number",
        )
    return rows


def split_seed(split: str, seed: int) -> int:
    """The generator seed of ``split``: ``seed`` for ``train``, for another split its own (never the training ones).

    >>> split_seed("test", 0) != split_seed("validation", 0) != split_seed("train", 0) == 0
    True
    """
    return seed if split == "train" else int.from_bytes(hashlib.sha256(f"{split}:{seed}".encode()).digest()[:8], "big")


def _columns(options: dict, base_dir: Path | None) -> set[str]:
    return {"nums", "target"} | ({"reference_equation"} if options.get("source") == "generate" else set())


@register_builder("countdown", system_prompt="countdown", known_sizes={"train": 490364}, columns=_columns)
def countdown(
    split: str = "train",
    *,
    source: str = "Jiayi-Pan/Countdown-Tasks-3to4",
    config: str | None = None,
    path: str | None = None,
    base_dir: Path | None = None,
    size: int = 1000,
    generator_seed: int = 0,
    min_numbers: int = 3,
    max_numbers: int = 4,
    max_number: int = 99,
):
    """Countdown numbers game: columns ``user``, ``nums``, ``target`` (+ ``reference_equation`` when generated)."""
    from datasets import Dataset

    if source == "generate":
        rows = generate_problems(size, split_seed(split, generator_seed), min_numbers, max_numbers, max_number)
        ds = Dataset.from_list(rows)
    else:
        ds = load_hub_or_file(source, config, split, path, base_dir)
    require_columns(ds, ["nums", "target"], f"countdown data ({path or source})")
    return ds.map(lambda row: {"user": USER_TEMPLATE.format(numbers=row["nums"], target=row["target"])})
