"""Tiny offline models (nothing is downloaded): a random ``Qwen2`` and a byte-level BPE tokenizer trained on the
spot; the task models warm one up with TRL's ``SFTTrainer`` (``warm_up``). Imported only to build a ``builtin:``."""

from __future__ import annotations

import json
from pathlib import Path

# Tags that the format rewards look for: one token each, so a tiny model can learn to emit them.
TAG_TOKENS = ["<think>", "</think>", "<answer>", "</answer>", "<reasoning>", "</reasoning>"]
# Qwen2.5's tool tokens (with TRL's qwen2_5 template, which TRL recognises and parses tool calls of)
TOOL_TOKENS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]

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
    """Write a tiny random ``Qwen2ForCausalLM`` (deterministic for ``seed``) and its tokenizer; return the path."""
    tokenizer = _tokenizer(_CORPUS * 4, vocab_size, TAG_TOKENS)
    model = _model(tokenizer, seed, hidden_size, num_layers, num_heads, num_kv_heads)
    return save(output_dir, model, tokenizer, {"seed": seed, "params": model.num_parameters()})


def build_tiny_reward_model(output_dir: str | Path, *, seed: int = 0) -> str:
    """``builtin:tiny-reward``: a tiny random (deterministic) ``Qwen2ForSequenceClassification`` with one label."""
    from transformers import Qwen2ForSequenceClassification

    tokenizer = _tokenizer(_CORPUS * 4, 512, TAG_TOKENS)
    return save(output_dir, _model(tokenizer, seed, 64, 2, 4, 2, Qwen2ForSequenceClassification), tokenizer)


def save(output_dir: str | Path, model, processing_class, meta: dict | None = None) -> str:
    """``model`` and its tokenizer (or processor) saved into ``output_dir``, ``meta`` into ``grpo_trl_tiny.json``."""
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    processing_class.save_pretrained(out)
    model.save_pretrained(out)
    if meta is not None:
        (out / "grpo_trl_tiny.json").write_text(json.dumps(meta))
    return str(out)


def stop_tokens(model, tokenizer) -> None:
    """Generation stops at the tokenizer's end of turn and pads with its pad token."""
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id


def _tokenizer(corpus: list[str], vocab_size: int, added: list[str], template: str = CHAT_TEMPLATE, digits=False):
    """A byte-level BPE trained on ``corpus`` with chat ``template``; ``added``: ordinary tokens, one id each (not
    special: they stay in completions TRL decodes with skip_special_tokens)."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    byte = pre_tokenizers.ByteLevel(add_prefix_space=False)
    split = pre_tokenizers.Digits(individual_digits=True)
    bpe.pre_tokenizer = pre_tokenizers.Sequence([split, byte]) if digits else byte
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - len(added),
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(corpus, trainer=trainer)
    bpe.add_tokens([AddedToken(t, special=False, normalized=False) for t in added])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>", bos_token=None, unk_token=None
    )
    tokenizer.chat_template = template
    return tokenizer


def qwen2_config(vocab_size: int, hidden_size: int, num_layers: int, num_heads: int, num_kv_heads: int) -> dict:
    """The ``Qwen2Config`` fields of every tiny language model (``builtin_config`` gives check the same)."""
    return {
        "vocab_size": vocab_size,
        "hidden_size": hidden_size,
        "intermediate_size": hidden_size * 2,
        "num_hidden_layers": num_layers,
        "num_attention_heads": num_heads,
        "num_key_value_heads": num_kv_heads,
        "max_position_embeddings": 1024,
        "tie_word_embeddings": True,
    }


def _model(tokenizer, seed: int, hidden_size: int, num_layers: int, num_heads: int, num_kv_heads: int, cls=None):
    """A random Qwen2 (a causal LM, or ``cls`` with one label) sized for ``tokenizer``, deterministic for ``seed``."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    sizes = qwen2_config(len(tokenizer), hidden_size, num_layers, num_heads, num_kv_heads)
    config = Qwen2Config(
        **sizes, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, bos_token_id=None
    )
    if cls is not None:
        config.num_labels = 1
        return cls(config)
    model = Qwen2ForCausalLM(config)
    stop_tokens(model, tokenizer)
    return model


def warm_up(out: Path, tokenizer, rows: dict, sizes: tuple = (128, 2, 4, 1), *, seed: int, steps: int, batch: int = 32,
            lr: float = 3e-3, max_length: int = 128) -> str:  # fmt: skip
    """A random Qwen2 of ``sizes`` (hidden, layers, heads, kv heads) trained by ``sft_warm_up`` on ``rows``."""
    from datasets import Dataset
    from trl import SFTConfig

    model = _model(tokenizer, seed, *sizes)
    args = SFTConfig(
        output_dir=str(out / "sft"),
        max_steps=steps,
        per_device_train_batch_size=batch,
        learning_rate=lr,
        lr_scheduler_type="constant",
        logging_steps=max(1, steps // 4),
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        bf16=False,
        seed=seed,
        max_length=max_length,
        disable_tqdm=True,
    )
    return sft_warm_up(model, tokenizer, args, Dataset.from_dict(rows), out, {"seed": seed, "warm_steps": steps})


def chat_rows(tokenizer, messages: list[list[dict]], completions: list[str]) -> dict[str, list[str]]:
    """``warm_up``'s rows: each conversation rendered up to the assistant's turn, then its completion and turn end."""
    prompts = [tokenizer.apply_chat_template(m, tokenize=False, add_generation_prompt=True) for m in messages]
    return {"prompt": prompts, "completion": [c + "<|im_end|>\n" for c in completions]}


def sft_warm_up(model, tokenizer, args, data, out: Path, meta: dict) -> str:
    """Train ``model`` with TRL's ``SFTTrainer`` on ``data`` (one thread); ``save`` it, its losses beside ``meta``."""
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
    stop_tokens(trainer.model, tokenizer)
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    if losses:
        print(f"warm-up (SFT, {args.max_steps} steps): loss {losses[0]:.3f} -> {losses[-1]:.3f}")
    return save(out, trainer.model, tokenizer, {**meta, "sft_loss": losses})


def builtin_tokenizer(name: str):
    """A tokenizer with the chat template of built-in model ``name``, without building the model (for checks)."""
    from grpo_trl.models.chat_templates import resolve_template

    template = resolve_template("trl:qwen2_5") if name == "builtin:tiny-tools" else CHAT_TEMPLATE
    return _tokenizer(_CORPUS, 300, TOOL_TOKENS + TAG_TOKENS, template)
