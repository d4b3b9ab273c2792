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
