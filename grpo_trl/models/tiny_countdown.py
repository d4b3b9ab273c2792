"""``builtin:tiny-countdown``: a tiny model that can partly do two-number Countdown, built offline in seconds.

A random ``Qwen2ForCausalLM`` (hidden 128, 2 layers) and a byte-level BPE tokenizer (numbers 10..99 and the fixed
parts of the Countdown prompt one token each) are warmed by TRL ``SFTTrainer`` on generated two-number problems
(``grpo_trl.data.countdown.generate_problems``: never the rows a recipe trains or evaluates on, which come from other
seeds) to answer ``<answer>a op b</answer>``. The warm-up is partial on purpose: ``noise`` (60%) of its answers are
"larger - smaller" whatever the target, so the model learns the answer format and to copy the numbers but mostly
subtracts (20% of held-out problems solved greedily), which leaves GRPO room to improve it
(``recipes/demo/tiny-countdown.yaml``, ``make demo``). Deterministic for a given seed.

Example:
    >>> rows = warmup_rows(2, seed=0)
    >>> sorted(rows[0]), rows[0]["completion"].startswith("<answer>")
    (['completion', 'nums', 'target'], True)
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

from grpo_trl.data.countdown import USER_TEMPLATE, generate_problems, split_seed
from grpo_trl.models.tiny import _CORPUS, CHAT_TEMPLATE, TAG_TOKENS, _model, sft_warm_up


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
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
    )
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - len(added),
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(_CORPUS * 4, trainer=trainer)
    bpe.add_tokens([AddedToken(t, special=False, normalized=False) for t in added])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>", bos_token=None, unk_token=None
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def warm_up(out: Path, tokenizer, messages: list[list[dict]], completions: list[str], *, seed: int, warm_steps: int,
            learning_rate: float, hidden_size: int, num_layers: int, num_heads: int) -> str:  # fmt: skip
    """A random Qwen2 trained by TRL ``SFTTrainer`` (batch 32, constant ``learning_rate``) to answer each prompt
    ``messages`` with its completion; saved with ``tokenizer`` into ``out``."""
    from datasets import Dataset
    from trl import SFTConfig

    out.mkdir(parents=True, exist_ok=True)
    model = _model(tokenizer, seed, hidden_size, num_layers, num_heads, 1)
    prompts = [tokenizer.apply_chat_template(m, tokenize=False, add_generation_prompt=True) for m in messages]
    data = Dataset.from_dict({"prompt": prompts, "completion": [c + "<|im_end|>\n" for c in completions]})
    args = SFTConfig(
        output_dir=str(out / "sft"),
        max_steps=warm_steps,
        per_device_train_batch_size=32,
        learning_rate=learning_rate,
        lr_scheduler_type="constant",
        logging_steps=max(1, warm_steps // 4),
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        bf16=False,
        seed=seed,
        max_length=128,
        disable_tqdm=True,
    )
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


def main(argv: list[str] | None = None) -> int:
    """``python -m grpo_trl.models.tiny_countdown BEFORE AFTER``: print the accuracy table of two eval folders."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("before")
    parser.add_argument("after")
    args = parser.parse_args(argv)
    print(accuracy_table(args.before, args.after))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
