"""A tool-calling rollout as separate turns (assistant text, tool calls, tool results), for ``completions.jsonl``
and ``report.html``.

Example:
    >>> turns([{"role": "assistant", "content": "", "tool_calls": [
    ...     {"type": "function", "function": {"name": "calculator", "arguments": {"expression": "2 + 3"}}}]},
    ...     {"role": "tool", "name": "calculator", "content": "5"},
    ...     {"role": "assistant", "content": "<answer>5</answer>"}])
    [{'role': 'tool_call', 'content': 'calculator(expression="2 + 3")'}, {'role': 'tool', 'content': '5'}, \
{'role': 'assistant', 'content': '<answer>5</answer>'}]
    >>> turns("plain text") is None
    True
"""

from __future__ import annotations

import json
from typing import Any


def _call(call: Any) -> str:
    fn = call.get("function", call) if isinstance(call, dict) else {}
    args = fn.get("arguments", {})
    shown = ", ".join(f"{k}={json.dumps(v)}" for k, v in args.items()) if isinstance(args, dict) else str(args)
    return f"{fn.get('name', '?')}({shown})"


def turns(completion: Any) -> list[dict] | None:
    """``[{role, content}]`` with ``tool_call`` and ``tool`` turns, or None when the rollout used no tools."""
    if not isinstance(completion, list) or not any(
        isinstance(m, dict) and (m.get("tool_calls") or m.get("role") == "tool") for m in completion
    ):
        return None
    out = []
    for m in completion:
        if not isinstance(m, dict):
            continue
        if m.get("content"):
            out.append({"role": "tool" if m.get("role") == "tool" else "assistant", "content": str(m["content"])})
        for call in m.get("tool_calls") or []:
            out.append({"role": "tool_call", "content": _call(call)})
    return out
