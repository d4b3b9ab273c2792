"""``tool_success``: the rollout got at least one tool result that was not an error (tool-calling rollouts).

Example:
    >>> tool_success([[{"role": "assistant", "content": ""}, {"role": "tool", "name": "calculator", "content": "7"}],
    ...               [{"role": "tool", "name": "calculator", "content": "{'error': 'bad'}"}], "no tools"])
    [1.0, 0.0, 0.0]
"""

from __future__ import annotations

from typing import Any

from grpo_trl.rewards.registry import register_reward


def _ok(message: Any) -> bool:
    if not isinstance(message, dict) or message.get("role") != "tool":
        return False
    content = message.get("content")
    return not (isinstance(content, str) and content.startswith("{'error'"))  # TRL's str({"error": ...})


@register_reward("tool_success")
def tool_success(completions: list, **kwargs: Any) -> list[float]:
    """1.0 when the rollout got at least one tool result that was not an error."""
    return [1.0 if isinstance(c, list) and any(_ok(m) for m in c) else 0.0 for c in completions]
