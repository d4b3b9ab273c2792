"""Tools the model can call during GRPO generation (TRL's ``tools=``): registry, built-ins, checks."""

from grpo_trl.tools.registry import (
    ToolError,
    build_tools,
    get_tool,
    list_tools,
    lookup_tool,
    register_tool,
    tool_problems,
    tool_schema,
)

__all__ = [
    "ToolError",
    "build_tools",
    "get_tool",
    "list_tools",
    "lookup_tool",
    "register_tool",
    "tool_problems",
    "tool_schema",
]

# The built-ins register themselves when imported; the package imports them (the registry never imports its members).
from grpo_trl.tools import calculator, python  # noqa: E402, F401, I001
