"""System prompts shipped with grpo-trl, chosen by name in a recipe's ``data.system_prompt``."""

from __future__ import annotations

from grpo_trl.errors import DataError, suggest

SYSTEM_PROMPTS: dict[str, str | None] = {
    # DeepSeek-R1 / open-r1: reasoning in <think>, answer in <answer> (the single-GPU GSM8K write-up).
    "r1": (
        "A conversation between User and Assistant. The user asks a question, and the Assistant solves it. "
        "The assistant first thinks about the reasoning process in the mind and then provides the user with the "
        "answer. The reasoning process and answer are enclosed within <think> </think> and <answer> </answer> tags, "
        "respectively, i.e., <think>\nreasoning process here\n</think>\n<answer>\nanswer here\n</answer>"
    ),
    # The from-scratch GSM8K tutorial (Qwen2.5-1.5B-Instruct): <reasoning>/<answer> XML.
    "xml": "Respond in the following format:\n<reasoning>\n...\n</reasoning>\n<answer>\n...\n</answer>",
    # The Countdown write-up's system prompt.
    "countdown": (
        "You are a helpful assistant. You first thinks about the reasoning process in the mind and then provides "
        "the user with the answer."
    ),
    "none": None,
}


def resolve_system_prompt(value: str | None) -> str | None:
    """A shipped prompt by name, or ``value`` itself when it is literal text (it holds a space or newline); a
    single word that is not a shipped name is an error (a typo would otherwise become the prompt)."""
    if value is None or value in SYSTEM_PROMPTS:
        return SYSTEM_PROMPTS.get(value) if value is not None else None
    if any(ch.isspace() for ch in value.strip()):
        return value
    hint = suggest(value, SYSTEM_PROMPTS, cutoff=0.5)
    raise DataError(
        f"unknown system prompt {value!r}{hint}; use one of {', '.join(SYSTEM_PROMPTS)} or write the literal text"
    )
