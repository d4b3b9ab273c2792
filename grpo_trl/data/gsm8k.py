"""GSM8K (``openai/gsm8k``, config ``main``): the question as the user turn, ``solution`` = the answer after ``####``.
``source: generate`` makes GSM8K-shaped stories offline (one or two +, -, * steps); each problem's numbers and
operations fall in the ``test`` split or in the others, never both (``held_out``)."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

from grpo_trl.data.countdown import split_seed
from grpo_trl.data.registry import load_hub_or_file, map_rows, register_builder, require_columns
from grpo_trl.rewards.text import extract_hash_answer

NAMES = {"Natalia": "she", "Tom": "he", "Maya": "she", "Ben": "he", "Lena": "she", "Omar": "he", "Sara": "she"}
ITEMS = ["apples", "marbles", "stickers", "cards", "coins", "pencils", "shells", "books", "stamps"]
STEPS = {  # each operation's sentences: which one a story uses is what tells its operation
    "+": ["Then {p} buys {n} more.", "Then {p} finds {n} more.", "Then a friend gives {o} {n} more."],
    "-": ["Then {p} gives away {n}.", "Then {p} sells {n} of them.", "Then {p} loses {n}."],
    "*": ["Then {p} ends up with {n} times as many.", "Then {p} collects {n} times as many."],
}
MAX_VALUE = 20  # every count a story reaches, the answer included, is in 1..MAX_VALUE


def apply(op: str, a: int, b: int) -> int:
    return a + b if op == "+" else a - b if op == "-" else a * b


def held_out(key: tuple) -> bool:
    """Whether a problem's numbers and operations ``(a, op, n, ...)`` belong to the ``test`` split (1 in 5)."""
    return hashlib.sha256(repr(key).encode()).digest()[0] % 5 == 0


def word_problem(rng: random.Random) -> dict | None:
    """One story: ``question``, ``answer`` (``a op n = r`` lines, then ``#### r``), ``key``; None when out of range."""
    name, item = rng.choice(list(NAMES)), rng.choice(ITEMS)
    pronoun = NAMES[name]
    value, lines = rng.randint(2, 12), []
    key, sentences = [value], [f"{name} has {value} {item}."]
    for _ in range(rng.randint(1, 2)):
        op, n = rng.choice("+-*"), rng.randint(2, 5)
        new = apply(op, value, n)
        if not 1 <= new <= MAX_VALUE:
            return None
        sentences.append(rng.choice(STEPS[op]).format(p=pronoun, o="her" if pronoun == "she" else "him", n=n))
        lines.append(f"{value} {op} {n} = {new}")
        key, value = key + [op, n], new
    sentences.append(f"How many {item} does {name} have now?")
    return {"question": " ".join(sentences), "answer": "\n".join(lines) + f"\n#### {value}", "key": tuple(key)}


def generate_problems(size: int, seed: int = 0, test: bool = False) -> list[dict]:
    """``size`` stories whose keys are ``held_out`` (``test``) or not."""
    rng, rows = random.Random(seed), []
    while len(rows) < size:
        row = word_problem(rng)
        if row is not None and held_out(row["key"]) == test:
            rows.append(row)
    return rows


def gsm8k_solution(answer: str) -> str:
    """The short answer after ``####`` with thousands commas removed.

    >>> gsm8k_solution("Natalia sold 48/2 = 24 clips in May.\\n#### 1,072")
    '1072'
    """
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
    size: int = 1000,
    generator_seed: int = 0,
):
    """GSM8K grade-school math: columns ``user``, ``solution`` (short answer), ``reasoning`` (the reference steps)."""
    from datasets import Dataset

    if source == "generate":
        rows = generate_problems(size, split_seed(split, generator_seed), test=split == "test")
        ds = Dataset.from_list([{"question": r["question"], "answer": r["answer"]} for r in rows])
    else:
        ds = load_hub_or_file(source, config, split, path, base_dir)
    require_columns(ds, ["question", "answer"], f"gsm8k data ({path or source})")
    return map_rows(
        ds,
        lambda row: {"user": row["question"], "solution": gsm8k_solution(row["answer"]), "reasoning": row["answer"]},
        str(path or source),
        remove_columns=ds.column_names,
    )
