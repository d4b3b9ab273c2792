"""Format rewards: does the completion use the tags the system prompt asked for (``tool_success``: did a tool call
succeed)?"""

from __future__ import annotations

import itertools
import re
from typing import Any

from grpo_trl.rewards.registry import register_reward, text_of

_STEPS = r"(Step \d+:|^\d+\.|\n-|\n\*|First,|Second,|Next,|Finally,)"
_STEP_MARKERS = {True: re.compile(_STEPS, re.MULTILINE), False: re.compile(_STEPS)}
# (opening, what separates the think and answer bodies, closing) with and without the newlines (ms-swift's layout)
_LAYOUTS = {
    True: ("<think>\n", re.compile(r"\n</think>\n<answer>\n"), "\n</answer>"),
    False: ("<think>", re.compile(r"</think>\s*<answer>"), "</answer>"),
}


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
    opening = _LAYOUTS[bool(newlines)][0]
    for text in text_of(completions):
        if prefilled_think and not text.startswith("<think>"):
            text = opening + (text.lstrip("\n") if newlines else text)
        out.append(1.0 if _layout(text, bool(newlines), trailing_lines) else 0.0)
    return out


def _layout(text: str, newlines: bool, trailing_lines: bool) -> bool:
    """The opening, the earliest separator after it (with newlines: no second ``<think>``, as TRL), then the closing
    ending the text (``trailing_lines``: or a line) after the separator, as the reference regexes read: linear time."""
    opening, separator, closing = _LAYOUTS[newlines]
    if not text.startswith(opening) or (newlines and text.find("<think>", 1) >= 0):
        return False
    found = separator.search(text, len(opening))  # the bodies may be empty, not shared with the tags
    if found is None:
        return False
    if text.endswith(closing) and len(text) - len(closing) >= found.end():
        return True
    return trailing_lines and text.find(closing + "\n", found.end()) >= 0


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
