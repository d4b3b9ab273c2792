"""Format rewards: does the completion use the tags the system prompt asked for (``tool_success``: did a tool call
succeed)?"""

from __future__ import annotations

import itertools
import re
from typing import Any

from grpo_trl.rewards.registry import register_reward, text_of

_OPEN, _SEP, _CLOSE = "<think>\n", "\n</think>\n<answer>\n", "\n</answer>"
_STEPS = r"(Step \d+:|^\d+\.|\n-|\n\*|First,|Second,|Next,|Finally,)"
_WHITESPACE = re.compile(r"\s*")
_STEP_MARKERS = {True: re.compile(_STEPS, re.MULTILINE), False: re.compile(_STEPS)}


@register_reward("think_format")
def think_format(
    completions: list,
    prefilled_think: bool = False,
    trailing_lines: bool = False,
    newlines: bool = True,
    **kwargs,
) -> list[float]:
    """1.0 for exactly ``<think>\\n...\\n</think>\\n<answer>\\n...\\n</answer>``, else 0.0; ``prefilled_think``,
    ``trailing_lines`` (open-r1's ``format``) and ``newlines=False`` (ms-swift's ``format``): docs/rewards.md."""
    out = []
    layout = _think_layout if newlines else _inline_layout
    opening = "<think>\n" if newlines else "<think>"
    for text in text_of(completions):
        if prefilled_think and not text.startswith("<think>"):
            text = opening + (text.lstrip("\n") if newlines else text)
        out.append(1.0 if layout(text, trailing_lines) else 0.0)
    return out


def _think_layout(text: str, trailing_lines: bool = False) -> bool:
    """``<think>\\n T \\n</think>\\n<answer>\\n A \\n</answer>``, no second ``<think>`` (as TRL), in linear time."""
    if not text.startswith(_OPEN) or text.find("<think>", 1) >= 0:
        return False
    sep = text.find(_SEP, len(_OPEN))  # the think and answer bodies may be empty, not shared with the tags
    if sep < 0:
        return False
    start = sep + len(_SEP)
    if not trailing_lines:
        return text.endswith(_CLOSE) and start + len(_CLOSE) <= len(text)
    end = text.find(_CLOSE + "\n", start)  # the first </answer> that ends a line, else one that ends the text
    return end >= 0 or (text.endswith(_CLOSE) and start + len(_CLOSE) <= len(text))


def _inline_layout(text: str, trailing_lines: bool = False) -> bool:
    """ms-swift's ``^<think>.*?</think>\\s*<answer>.*?</answer>$`` (DOTALL) in linear time: the earliest ``</think>``
    followed by ``<answer>`` gives the earliest answer body; then a closing ``</answer>`` after it decides."""
    if not text.startswith("<think>"):
        return False
    body = -1
    close = text.find("</think>", len("<think>"))
    while close >= 0:
        after = _WHITESPACE.match(text, close + len("</think>")).end()  # the same \s as the reference regex
        if text.startswith("<answer>", after):
            body = after + len("<answer>")
            break
        close = text.find("</think>", after)
    if body < 0:
        return False
    if text.endswith("</answer>") and len(text) - len("</answer>") >= body:
        return True
    return trailing_lines and text.find("</answer>\n", body) >= 0


@register_reward("tag_count")
def tag_count(completions: list, **kwargs) -> list[float]:
    """0.25 for each of ``<think>\\n``, ``\\n</think>\\n``, ``\\n<answer>\\n``, ``\\n</answer>`` found exactly once."""
    markers = ("<think>\n", "\n</think>\n", "\n<answer>\n", "\n</answer>")
    return [float(sum(0.25 for m in markers if text.count(m) == 1)) for text in text_of(completions)]


@register_reward("reasoning_steps")
def reasoning_steps(completions: list, min_steps: int = 3, numbered_lines: bool = True, **kwargs) -> list[float]:
    """min(1, step markers found / ``min_steps``): ``Step 1:``, ``1.``, bullets, ``First,`` ... ``Finally,``
    (``numbered_lines=False``: ``1.`` counts only at the start of the text, as open-r1's)."""
    markers = _STEP_MARKERS[bool(numbered_lines)]
    # stops at min_steps markers: a long text of markers costs no more than a short one
    return [
        min(1.0, sum(1 for _ in itertools.islice(markers.finditer(text), max(1, min_steps))) / min_steps)
        for text in text_of(completions)
    ]


@register_reward("xml_format")
def xml_format(
    completions: list, tags: tuple[str, ...] | list[str] = ("reasoning", "answer"), per_tag: float = 0.2, **kwargs
) -> list[float]:
    """``per_tag`` for each opening and closing tag present, ``<reasoning>``/``<answer>`` by default (0.8 max)."""
    needles = [f"<{t}>" for t in tags] + [f"</{t}>" for t in tags]
    return [float(round(sum(per_tag for n in needles if n in text), 10)) for text in text_of(completions)]


@register_reward("tool_success")
def tool_success(completions: list, **kwargs: Any) -> list[float]:
    """1.0 when the rollout got at least one tool result that was not an error.

    >>> tool_success([[{"role": "tool", "content": "7"}], [{"role": "tool", "content": "{'error': 'x'}"}], "no tools"])
    [1.0, 0.0, 0.0]
    """
    return [1.0 if isinstance(c, list) and any(_tool_ok(m) for m in c) else 0.0 for c in completions]


def _tool_ok(message: Any) -> bool:
    if not isinstance(message, dict) or message.get("role") != "tool":
        return False
    content = message.get("content")
    return not (isinstance(content, str) and content.startswith("{'error'"))  # TRL's str({"error": ...})
