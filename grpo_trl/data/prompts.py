"""System prompts shipped with grpo-trl, chosen by name in a recipe's ``data.system_prompt``.

Example:
    >>> resolve_system_prompt("r1").startswith("A conversation between User and Assistant")
    True
    >>> resolve_system_prompt("Answer briefly.")
    'Answer briefly.'
"""

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


class PromptError(DataError):
    """An unknown system prompt name."""


def resolve_system_prompt(value: str | None) -> str | None:
    """A shipped prompt by name, or ``value`` itself when it is literal text (it contains a space or newline).

    A single word that is not a shipped name is an error (a typo would otherwise become the prompt).
    """
    if value is None:
        return None
    if value in SYSTEM_PROMPTS:
        return SYSTEM_PROMPTS[value]
    if any(ch.isspace() for ch in value.strip()):
        return value
    hint = suggest(value, SYSTEM_PROMPTS, cutoff=0.5)
    raise PromptError(
        f"unknown system prompt {value!r}{hint}; use one of {', '.join(SYSTEM_PROMPTS)} or write the literal text"
    )
