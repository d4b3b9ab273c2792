"""``builtin:tiny-gsm8k``: a tiny Qwen2 warmed by TRL ``SFTTrainer`` on generated GSM8K-shaped stories
(``grpo_trl.data.gsm8k``, ``warmup`` split) to answer in the ``<reasoning>/<answer>`` format. Partial on purpose:
``noise`` of the steps are written ``+``, so it learns the format but mostly adds (``make demo-gsm8k``)."""

from __future__ import annotations

import random
import re
from pathlib import Path

from grpo_trl.data.countdown import split_seed
from grpo_trl.data.gsm8k import ITEMS, NAMES, STEPS, apply, generate_problems
from grpo_trl.data.options import SYSTEM_PROMPTS
from grpo_trl.models import tiny
from grpo_trl.models.tiny import TAG_TOKENS

_LINE = re.compile(r"(\d+) ([-+*]) (\d+) = (\d+)")


def completion(steps: list[tuple[int, str, int]]) -> str:
    """Each step ``a op n = r`` in ``<reasoning>``, the last ``r`` in ``<answer>``."""
    lines, value = [], steps[0][0]
    for _, op, n in steps:
        new = apply(op, value, n)
        lines.append(f"{value} {op} {n} = {new}")
        value = new
    return "<reasoning>\n" + "\n".join(lines) + f"\n</reasoning>\n<answer>\n{value}\n</answer>"


def warmup_rows(n: int, seed: int = 0, noise: float = 0.0) -> list[dict]:
    """``n`` stories of the ``warmup`` split with the completion taught; a step is ``+`` with probability ``noise``."""
    rng = random.Random(seed)
    rows = generate_problems(n, split_seed("warmup", seed))
    out = []
    for row in rows:
        steps = [(int(a), "+" if rng.random() < noise else op, int(b)) for a, op, b, _ in _LINE.findall(row["answer"])]
        out.append({"question": row["question"], "answer": row["answer"], "completion": completion(steps)})
    return out


def story_chunks() -> list[str]:
    """Every text between two numbers of a story, and the completion's fixed parts: one token each, so a tiny model
    copies the numbers by position."""
    steps = {
        t.format(p=p, o=o, n="{n}") for ts in STEPS.values() for t in ts for p, o in (("she", "her"), ("he", "him"))
    }
    parts = [f"{name} has " for name in NAMES] + [f" {item}." for item in ITEMS]
    parts += [f" How many {item} does {name} have now?" for item in ITEMS for name in NAMES]
    parts += sorted({c for t in steps for c in (" " + t).split("{n}")})
    return parts + ["<reasoning>\n", "\n</reasoning>\n<answer>\n", "\n</answer>", " + ", " - ", " * ", " = "]


def _tokenizer(vocab_size: int = 768):
    """Byte-level BPE; the system prompt, ``story_chunks``, the tags and the numbers 0..99 one token each."""
    added = [SYSTEM_PROMPTS["xml"], "system\n", "assistant\n", "user\n"] + story_chunks() + TAG_TOKENS
    return tiny._tokenizer(tiny._CORPUS, vocab_size, added + [str(n) for n in range(100)])


def prompt_messages(question: str) -> list[dict]:
    return [{"role": "system", "content": SYSTEM_PROMPTS["xml"]}, {"role": "user", "content": question}]


def build_tiny_gsm8k_model(
    output_dir: str | Path, *, seed: int = 0, warm_steps: int = 600, problems: int = 4000, noise: float = 0.6
) -> str:
    """Write the warmed-up model and its tokenizer to ``output_dir``; return the path."""
    rows, tokenizer = warmup_rows(problems, seed, noise=noise), _tokenizer()
    data = tiny.chat_rows(tokenizer, [prompt_messages(r["question"]) for r in rows], [r["completion"] for r in rows])
    return tiny.warm_up(Path(output_dir), tokenizer, data, seed=seed, steps=warm_steps)
