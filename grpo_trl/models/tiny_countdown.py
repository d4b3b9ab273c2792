"""``builtin:tiny-countdown``: a tiny Qwen2 warmed by TRL ``SFTTrainer`` on generated two-number Countdown problems
(a ``warmup`` split, never a recipe's rows) to answer ``<answer>a op b</answer>``. Partial on purpose: ``noise`` of
the answers are "larger - smaller", so it mostly subtracts (20% solved greedily), leaving GRPO room (``make demo``)."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

from grpo_trl.data.countdown import USER_TEMPLATE, generate_problems, split_seed
from grpo_trl.models.tiny import _CORPUS, TAG_TOKENS, _tokenizer, chat_rows, warm_up


def warmup_rows(n: int, seed: int = 0, max_number: int = 99, noise: float = 0.0) -> list[dict]:
    """``n`` two-number problems of the ``warmup`` split (never a recipe's rows) with the answer taught."""
    rng = random.Random(seed)
    rows = generate_problems(n, split_seed("warmup", seed), 2, 2, max_number)
    answers = [_answer(r, rng.random() < noise) for r in rows]
    return [
        {"nums": r["nums"], "target": r["target"], "completion": f"<answer>{a}</answer>"}
        for r, a in zip(rows, answers, strict=True)
    ]


def _answer(row: dict, noisy: bool = False) -> str:
    """The reference equation in the prompt's order where that is right too; ``noisy``: larger minus smaller."""
    a, b = row["nums"]
    if noisy:
        return f"{max(a, b)} - {min(a, b)}"
    op = row["reference_equation"].split()[1]
    value = {"+": a + b, "-": a - b, "*": a * b, "/": a / b}[op]
    return f"{a} {op} {b}" if value == row["target"] else f"{b} {op} {a}"


def build_tiny_countdown_model(
    output_dir: str | Path, *, seed: int = 0, warm_steps: int = 600, problems: int = 4000, noise: float = 0.6
) -> str:
    """Write the warmed-up model and its tokenizer to ``output_dir``; return the path."""
    # the prompt's fixed text and the numbers 10..99 one token each: the answer copies two tokens
    fixed = [c for c in re.split(r"\{numbers\}|\{target\}", USER_TEMPLATE) if c] + ["assistant\n", "user\n"]
    tokenizer = _tokenizer(_CORPUS * 4, 512, TAG_TOKENS + fixed + [str(n) for n in range(10, 100)], digits=True)
    rows = warmup_rows(problems, seed, noise=noise)
    user = [[{"role": "user", "content": USER_TEMPLATE.format(numbers=r["nums"], target=r["target"])}] for r in rows]
    data = chat_rows(tokenizer, user, [r["completion"] for r in rows])
    return warm_up(Path(output_dir), tokenizer, data, seed=seed, steps=warm_steps)


def accuracy_table(before: str | Path, after: str | Path) -> str:
    """The demos' last lines: held-out greedy accuracy before -> after GRPO, from two ``grpo-trl eval`` folders."""
    runs = [json.loads((Path(d) / "eval.json").read_text()) for d in (before, after)]
    (b, a), last = (r["pass@1"] for r in runs), runs[1]
    return (
        f"held-out accuracy ({last['pass_reward']} reward, greedy, {last['prompts']} problems of the "
        f"'{last['split']}' split)\n"
        f"  before GRPO (warm-up only)  {b:6.1%}\n"
        f"  after GRPO                  {a:6.1%}   ({(a - b) * 100:+.1f} points)\n"
        f"  (grpo-trl eval's results: {Path(before) / 'eval.json'}, {Path(after) / 'eval.json'})"
    )
