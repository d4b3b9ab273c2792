"""``builtin:tiny-countdown``: a tiny Qwen2 warmed by TRL ``SFTTrainer`` on generated two-number Countdown problems
(a ``warmup`` split, never a recipe's rows) to answer ``<answer>a op b</answer>``. Partial on purpose: ``noise`` of
the answers are "larger - smaller", so it mostly subtracts (20% solved greedily), leaving GRPO room (``make demo``).

    >>> sorted(warmup_rows(2, seed=0)[0])
    ['completion', 'nums', 'target']
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

from grpo_trl.data.countdown import USER_TEMPLATE, generate_problems, split_seed
from grpo_trl.models.tiny import _CORPUS, CHAT_TEMPLATE, TAG_TOKENS, _model, _tokenizer, sft_args, sft_warm_up


def warmup_rows(n: int, seed: int = 0, max_number: int = 99, noise: float = 0.0) -> list[dict]:
    """``n`` two-number problems (``nums``, ``target``) with the answer the warm-up teaches (``completion``).

    Drawn with the seed of a ``warmup`` split: other rows than the ``train`` and ``test`` splits of a recipe's
    ``source: generate`` data with the same ``generator_seed``.
    """
    rng = random.Random(seed)
    rows = generate_problems(n, split_seed("warmup", seed), 2, 2, max_number)
    answers = [_answer(r, rng.random() < noise) for r in rows]
    return [
        {"nums": r["nums"], "target": r["target"], "completion": f"<answer>{a}</answer>"}
        for r, a in zip(rows, answers, strict=True)
    ]


def _answer(row: dict, noisy: bool = False) -> str:
    """The reference equation with its numbers in the prompt's order where that order is right too; when ``noisy``,
    the larger number minus the smaller whatever the target."""
    a, b = row["nums"]
    if noisy:
        return f"{max(a, b)} - {min(a, b)}"
    op = row["reference_equation"].split()[1]
    value = {"+": a + b, "-": a - b, "*": a * b, "/": a / b}[op]
    return f"{a} {op} {b}" if value == row["target"] else f"{b} {op} {a}"


def number_tokenizer(added: list[str], vocab_size: int = 512):
    """Byte-level BPE (digits split) with ``added`` one token each: a task's fixed text, its tags, its numbers."""
    tokenizer = _tokenizer(_CORPUS * 4, vocab_size, added, digits=True)
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def warm_up(out: Path, tokenizer, messages: list[list[dict]], completions: list[str], *, seed: int, warm_steps: int,
            learning_rate: float, hidden_size: int, num_layers: int, num_heads: int) -> str:  # fmt: skip
    """A random Qwen2 trained by TRL ``SFTTrainer`` (batch 32, constant ``learning_rate``) to answer each prompt
    ``messages`` with its completion; saved with ``tokenizer`` into ``out``."""
    from datasets import Dataset

    out.mkdir(parents=True, exist_ok=True)
    model = _model(tokenizer, seed, hidden_size, num_layers, num_heads, 1)
    prompts = [tokenizer.apply_chat_template(m, tokenize=False, add_generation_prompt=True) for m in messages]
    data = Dataset.from_dict({"prompt": prompts, "completion": [c + "<|im_end|>\n" for c in completions]})
    args = sft_args(out, warm_steps, 32, learning_rate, seed, 128, disable_tqdm=True)
    return sft_warm_up(model, tokenizer, args, data, out, {"seed": seed, "warm_steps": warm_steps})


def build_tiny_countdown_model(
    output_dir: str | Path,
    *,
    seed: int = 0,
    warm_steps: int = 600,
    problems: int = 4000,
    learning_rate: float = 3e-3,
    hidden_size: int = 128,
    num_layers: int = 2,
    num_heads: int = 4,
    noise: float = 0.6,
) -> str:
    """Write the warmed-up model and its tokenizer to ``output_dir`` and return the path as a string."""
    # the prompt's fixed text and the numbers 10..99 one token each (a three-digit target is two: "73" "7"), so the
    # answer copies two tokens
    fixed = [c for c in re.split(r"\{numbers\}|\{target\}", USER_TEMPLATE) if c] + ["assistant\n", "user\n"]
    tokenizer = number_tokenizer(TAG_TOKENS + fixed + [str(n) for n in range(10, 100)])
    rows = warmup_rows(problems, seed, noise=noise)
    user = [[{"role": "user", "content": USER_TEMPLATE.format(numbers=r["nums"], target=r["target"])}] for r in rows]
    return warm_up(Path(output_dir), tokenizer, user, [r["completion"] for r in rows], seed=seed,
                   warm_steps=warm_steps, learning_rate=learning_rate, hidden_size=hidden_size, num_layers=num_layers,
                   num_heads=num_heads)  # fmt: skip


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
