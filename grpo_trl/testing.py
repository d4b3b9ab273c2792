"""Tiny offline models for your own tests and demos (nothing is downloaded); the library never imports this module.

>>> from grpo_trl.testing import BUILDERS, build_tiny_model
>>> BUILDERS["builtin:tiny"] is build_tiny_model
True
"""

from grpo_trl.models.builtin import BUILDERS
from grpo_trl.models.tiny import CHAT_TEMPLATE, TAG_TOKENS, TOOL_TOKENS, build_tiny_model, build_tiny_reward_model
from grpo_trl.models.tiny_countdown import build_tiny_countdown_model
from grpo_trl.models.tiny_tools import build_tiny_tool_model, tool_conversations
from grpo_trl.models.tiny_vlm import VLM_CHAT_TEMPLATE, build_tiny_vlm_model

__all__ = [
    "BUILDERS",
    "CHAT_TEMPLATE",
    "TAG_TOKENS",
    "TOOL_TOKENS",
    "VLM_CHAT_TEMPLATE",
    "build_tiny_countdown_model",
    "build_tiny_model",
    "build_tiny_reward_model",
    "build_tiny_tool_model",
    "build_tiny_vlm_model",
    "tool_conversations",
]
