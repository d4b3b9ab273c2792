"""Tools the model can call during GRPO generation (TRL's ``tools=``): registry, built-ins, checks. The built-ins
register themselves when imported here."""

from grpo_trl.tools import calculator, python  # noqa: F401 - the built-ins
from grpo_trl.tools.registry import (
    ToolError,
    build_tools,
    get_tool,
    lookup_tool,
    register_tool,
    tool_problems,
    tool_schema,
)

__all__ = ["ToolError", "build_tools", "get_tool", "lookup_tool", "register_tool", "tool_problems", "tool_schema"]
