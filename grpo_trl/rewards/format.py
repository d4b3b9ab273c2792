"""Format rewards: does the completion use the tags the system prompt asked for?

Example:
    >>> think_format(["<think>\\nplan\\n</think>\\n<answer>\\n4\\n</answer>", "4"])
    [1.0, 0.0]
    >>> tag_count(["<think>\\nx\\n</think>\\n<answer>\\n4\\n</answer>"])
    [1.0]
    >>> xml_format(["<reasoning>r</reasoning><answer>4</answer>"])
    [0.8]
"""

from __future__ import annotations

import re

from grpo_trl.rewards.registry import register_reward, text_of

# Strict DeepSeek-R1 layout, anchored at both ends (re.match + \Z), as in open-r1's format_reward.
_THINK_FORMAT = re.compile(r"<think>\n(?:(?!<think>).)*?\n</think>\n<answer>\n.*?\n</answer>\Z", re.DOTALL)
_STEP_MARKERS = re.compile(r"(Step \d+:|^\d+\.|\n-|\n\*|First,|Second,|Next,|Finally,)", re.MULTILINE)


@register_reward("think_format")
def think_format(completions: list, prefilled_think: bool = False, **kwargs) -> list[float]:
    """1.0 for exactly ``<think>\\n...\\n</think>\\n<answer>\\n...\\n</answer>``, else 0.0.

    ``prefilled_think=True`` is for chat templates that open ``<think>`` in the prompt: the completion then starts
    inside the think block.
    """
    out = []
    for text in text_of(completions):
        if prefilled_think and not text.startswith("<think>"):
            text = "<think>\n" + text.lstrip("\n")
        out.append(1.0 if _THINK_FORMAT.match(text) else 0.0)
    return out


@register_reward("tag_count")
def tag_count(completions: list, **kwargs) -> list[float]:
    """0.25 for each of ``<think>\\n``, ``\\n</think>\\n``, ``\\n<answer>\\n``, ``\\n</answer>`` found exactly once."""
    markers = ("<think>\n", "\n</think>\n", "\n<answer>\n", "\n</answer>")
    return [float(sum(0.25 for m in markers if text.count(m) == 1)) for text in text_of(completions)]


@register_reward("reasoning_steps")
def reasoning_steps(completions: list, min_steps: int = 3, **kwargs) -> list[float]:
    """min(1, step markers found / ``min_steps``): ``Step 1:``, ``1.``, bullets, ``First,`` ... ``Finally,``."""
    return [min(1.0, len(_STEP_MARKERS.findall(text)) / min_steps) for text in text_of(completions)]


@register_reward("xml_format")
def xml_format(
    completions: list, tags: tuple[str, ...] | list[str] = ("reasoning", "answer"), per_tag: float = 0.2, **kwargs
) -> list[float]:
    """``per_tag`` for each opening and closing tag present, ``<reasoning>``/``<answer>`` by default (0.8 max).

    ``args: {tags: [think, answer]}`` gives the ``<think>`` variant.
    """
    needles = [f"<{t}>" for t in tags] + [f"</{t}>" for t in tags]
    return [float(round(sum(per_tag for n in needles if n in text), 10)) for text in text_of(completions)]
