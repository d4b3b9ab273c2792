"""A tiny offline model for tests, the CPU demo and benchmarks: nothing is downloaded.

``build_tiny_model`` writes a randomly initialised ``Qwen2ForCausalLM`` (~100k parameters) and a byte-level BPE
tokenizer trained on the spot, with a chat template, to a folder that ``from_pretrained`` and ``GRPOTrainer`` accept.

Example:
    >>> import tempfile
    >>> from grpo_trl.testing import build_tiny_model
    >>> path = build_tiny_model(tempfile.mkdtemp())
    >>> from transformers import AutoTokenizer
    >>> tok = AutoTokenizer.from_pretrained(path)
    >>> "<answer>" in tok.get_vocab()
    True
"""

from __future__ import annotations

import json
from pathlib import Path

# Tags that the format rewards look for: one token each, so a tiny model can learn to emit them.
TAG_TOKENS = ["<think>", "</think>", "<answer>", "</answer>", "<reasoning>", "</reasoning>"]

CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

_CORPUS = [
    "Using the numbers [19, 36, 55, 7], create an equation that equals 65.",
    "You can use basic arithmetic operations (+, -, *, /) and each number can only be used once.",
    "Show your work in <think> </think> tags. And return the final equation and answer in <answer> </answer> tags.",
    "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May.",
    "How many clips did Natalia sell altogether in April and May? The answer is 72.",
    "Step 1: First, Second, Next, Finally, so the result is 0 1 2 3 4 5 6 7 8 9 10 100 1000.",
    "A conversation between User and Assistant. The assistant first thinks about the reasoning process.",
    "Respond in the following format: <reasoning> ... </reasoning> <answer> ... </answer>",
    "(78 + 9) - (58 - 44) = 73. \\boxed{42} #### 18 $ 3.5 1,234 x y z a b c",
]


def build_tiny_model(
    output_dir: str | Path,
    *,
    seed: int = 0,
    vocab_size: int = 512,
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 4,
    num_kv_heads: int = 2,
) -> str:
    """Write a tiny random ``Qwen2ForCausalLM`` and its tokenizer to ``output_dir`` and return the path as a string.

    Deterministic for a given ``seed``. Takes well under a second on a CPU.
    """
    import torch
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)

    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - len(TAG_TOKENS),
        special_tokens=special,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(_CORPUS * 4, trainer=trainer)
    # Tags are ordinary (non-special) added tokens: one id each, and still present in decoded text
    # (TRL decodes completions with skip_special_tokens=True).
    bpe.add_tokens([AddedToken(t, special=False, normalized=False) for t in TAG_TOKENS])

    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        bos_token=None,
        unk_token=None,
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(out)

    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 2,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_kv_heads,
        max_position_embeddings=1024,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    model = Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(out)
    (out / "grpo_trl_tiny.json").write_text(json.dumps({"seed": seed, "params": model.num_parameters()}))
    return str(out)


def main(argv: list[str] | None = None) -> int:
    """``python -m grpo_trl.testing OUTPUT_DIR``: build the tiny model (used by ``make demo``)."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("output_dir")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    path = build_tiny_model(args.output_dir, seed=args.seed)
    print(f"tiny model written to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
