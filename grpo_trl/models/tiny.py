"""A tiny offline model for tests, the CPU demo and benchmarks: nothing is downloaded.

``build_tiny_model`` writes a randomly initialised ``Qwen2ForCausalLM`` (~100k parameters) and a byte-level BPE
tokenizer trained on the spot, with a chat template, to a folder that ``from_pretrained`` and ``GRPOTrainer`` accept.

Example:
    >>> import tempfile
    >>> from grpo_trl.models.tiny import build_tiny_model
    >>> path = build_tiny_model(tempfile.mkdtemp())
    >>> from transformers import AutoTokenizer
    >>> tok = AutoTokenizer.from_pretrained(path)
    >>> "<answer>" in tok.get_vocab()
    True
"""

from __future__ import annotations

import json
import re
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
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = _tokenizer(_CORPUS * 4, vocab_size, TAG_TOKENS)
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(out)
    model = _model(tokenizer, seed, hidden_size, num_layers, num_heads, num_kv_heads)
    model.save_pretrained(out)
    (out / "grpo_trl_tiny.json").write_text(json.dumps({"seed": seed, "params": model.num_parameters()}))
    return str(out)


def _tokenizer(corpus: list[str], vocab_size: int, added: list[str]):
    """A byte-level BPE trained on ``corpus``; ``added`` are ordinary (non-special) tokens, one id each."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - len(added),
        special_tokens=special,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(corpus, trainer=trainer)
    # Tags are ordinary (non-special) added tokens: one id each, and still present in decoded text
    # (TRL decodes completions with skip_special_tokens=True).
    bpe.add_tokens([AddedToken(t, special=False, normalized=False) for t in added])
    return PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        bos_token=None,
        unk_token=None,
    )


def _model(tokenizer, seed: int, hidden_size: int, num_layers: int, num_heads: int, num_kv_heads: int, cls=None):
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

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
    if cls is not None:  # a sequence classifier (reward model): one score
        config.num_labels = 1
        return cls(config)
    model = Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model


def build_tiny_reward_model(output_dir: str | Path, *, seed: int = 0) -> str:
    """A tiny random ``Qwen2ForSequenceClassification`` (one label) and the tiny tokenizer: ``builtin:tiny-reward``.

    Its scores are random but deterministic: enough to prove reward models run end to end offline.
    """
    from transformers import Qwen2ForSequenceClassification

    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = _tokenizer(_CORPUS * 4, 512, TAG_TOKENS)
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(out)
    _model(tokenizer, seed, 64, 2, 4, 2, cls=Qwen2ForSequenceClassification).save_pretrained(out)
    return str(out)


# Tool-calling: TRL's qwen2_5 template (so TRL recognises it and parses tool calls) and Qwen2.5's tool tokens.
TOOL_TOKENS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]


def _trl_template(name: str) -> str:
    import trl

    return (Path(trl.__file__).parent / "chat_templates" / f"{name}.jinja").read_text()


def tool_conversations(n: int, seed: int = 0) -> list[tuple[list[dict], list]]:
    """Synthetic Countdown conversations that call a tool, with the tools they were rendered with (offline).

    Each writes a flat expression over the row's numbers (``a + b - c``); half call the ``calculator`` tool, half the
    Countdown environment's ``check_equation`` (right half of the time), then answer in ``<answer>`` tags.
    """
    import random

    from grpo_trl.data.countdown import USER_TEMPLATE
    from grpo_trl.environments.countdown import Countdown
    from grpo_trl.tools.calculator import calculator

    rng = random.Random(seed)
    out = []
    for i in range(n):
        nums = [rng.randint(1, 99) for _ in range(rng.randint(3, 4))]
        expression = str(nums[0]) + "".join(f" {rng.choice('+-*')} {x}" for x in nums[1:])
        value = int(calculator(expression))
        target = value if i % 4 < 2 else rng.randint(1, 999)
        if i % 2:
            name, args, tools, result = "calculator", {"expression": expression}, [calculator], str(value)
        else:
            env = Countdown()
            env.reset(nums=nums, target=target)
            name, args, tools = "check_equation", {"equation": expression}, [env.check_equation]
            result = env.check_equation(expression)
        call = {"type": "function", "function": {"name": name, "arguments": args}}
        messages = [
            {"role": "user", "content": USER_TEMPLATE.format(numbers=nums, target=target)},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "name": name, "content": result},
            {"role": "assistant", "content": f"<answer>{expression} = {value}</answer>"},
        ]
        out.append((messages, tools))
    return out


def _fixed_text(convs: list, tokenizer) -> list[str]:
    """Text every prompt or tool call repeats (system turn with the tool schemas, the user template's fixed parts,
    the call prefix): one token each, so prompts stay a few dozen tokens and the tiny model trains in seconds."""
    from grpo_trl.data.countdown import USER_TEMPLATE

    chunks = [c for c in re.split(r"\{numbers\}|\{target\}", USER_TEMPLATE) if c]
    # the generation prompt's last token: one token, so that what follows it (a tool call on the first turn) does
    # not share a context with every other line break of the tool schemas and calls
    chunks.append("assistant\n")
    for messages, tools in convs[:2]:
        text = tokenizer.apply_chat_template(messages[:1], tools=tools, tokenize=False)
        chunks.append(text.split("<|im_start|>system\n", 1)[1].split("<|im_end|>", 1)[0])
        call = messages[1]["tool_calls"][0]["function"]
        key = next(iter(call["arguments"]))
        chunks.append(f'{{"name": "{call["name"]}", "arguments": {{"{key}": "')
    return sorted(set(chunks), key=len, reverse=True)


def build_tiny_tool_model(
    output_dir: str | Path, *, seed: int = 0, warm_steps: int = 500, conversations: int = 256, vocab_size: int = 1024
) -> str:
    """A tiny model that emits tool calls: ``builtin:tiny-tools``.

    A random ``Qwen2ForCausalLM`` (hidden 128, head_dim 64 so vLLM's CPU backend runs it too) with TRL's ``qwen2_5``
    chat template and Qwen2.5's tool tokens, warmed for ``warm_steps`` steps of TRL ``SFTTrainer`` on
    ``tool_conversations`` (a few seconds on a CPU). It calls tools often, but not always nor always well: room for
    GRPO to improve.
    """
    from datasets import Dataset
    from trl import SFTConfig

    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    template = _trl_template("qwen2_5")
    convs = tool_conversations(conversations, seed=seed)
    probe = _tokenizer(_CORPUS, 300, TOOL_TOKENS + TAG_TOKENS)
    probe.chat_template = template
    texts = [probe.apply_chat_template(m, tools=t, tokenize=False) for m, t in convs]
    tokenizer = _tokenizer(_CORPUS + texts, vocab_size, TOOL_TOKENS + TAG_TOKENS + _fixed_text(convs, probe))
    tokenizer.chat_template = template
    model = _model(tokenizer, seed, 128, 2, 2, 1)
    args = SFTConfig(
        output_dir=str(out / "sft"),
        max_steps=warm_steps,
        per_device_train_batch_size=8,
        learning_rate=5e-3,
        lr_scheduler_type="constant",
        logging_steps=max(1, warm_steps // 4),
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        bf16=False,
        seed=seed,
        max_length=1024,
    )
    # prompt-completion rows, one per assistant turn: the loss is on what the model writes (the tool call; the answer
    # after the tool's reply), never on the tool schemas or on the tool's reply itself
    rows: dict[str, list[str]] = {"prompt": [], "completion": []}
    for messages, tools in convs:
        for end in (2, 4):  # [user, assistant tool call] and [..., tool reply, assistant answer]
            prompt = probe.apply_chat_template(
                messages[: end - 1], tools=tools, tokenize=False, add_generation_prompt=True
            )
            full = probe.apply_chat_template(messages[:end], tools=tools, tokenize=False)
            rows["prompt"].append(prompt)
            rows["completion"].append(full[len(prompt) :])
    data = Dataset.from_dict(rows)
    return sft_warm_up(model, tokenizer, args, data, out, {"seed": seed, "warm_steps": warm_steps})


def sft_warm_up(model, tokenizer, args, data, out: Path, meta: dict) -> str:
    """Train ``model`` with TRL's ``SFTTrainer`` on ``data`` (one thread), save it with ``tokenizer`` into ``out``
    with the SFT losses in ``grpo_trl_tiny.json`` beside ``meta``."""
    import torch
    from transformers.trainer_callback import PrinterCallback
    from trl import SFTTrainer

    trainer = SFTTrainer(model=model, args=args, train_dataset=data, processing_class=tokenizer)
    trainer.remove_callback(PrinterCallback)  # its dicts: the loss is summed up in one line below
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a model this small trains faster on one thread than on contended cores
    try:
        trainer.train()
    finally:
        torch.set_num_threads(threads)
    model = trainer.model
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    if losses:
        print(f"warm-up (SFT, {args.max_steps} steps): loss {losses[0]:.3f} -> {losses[-1]:.3f}")
    (out / "grpo_trl_tiny.json").write_text(json.dumps({**meta, "sft_loss": losses}))
    return str(out)


def builtin_tokenizer(name: str):
    """A tokenizer with the chat template of built-in model ``name``, without building the model (for checks)."""
    tokenizer = _tokenizer(_CORPUS, 300, TOOL_TOKENS + TAG_TOKENS)
    tokenizer.chat_template = _trl_template("qwen2_5") if name == "builtin:tiny-tools" else CHAT_TEMPLATE
    return tokenizer


def main(argv: list[str] | None = None) -> int:
    """``python -m grpo_trl.models.tiny OUTPUT_DIR``: build the tiny model (used by ``make demo``)."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("output_dir")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tools", action="store_true", help="the tool-calling model (builtin:tiny-tools)")
    args = parser.parse_args(argv)
    path = (build_tiny_tool_model if args.tools else build_tiny_model)(args.output_dir, seed=args.seed)
    print(f"tiny model written to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
