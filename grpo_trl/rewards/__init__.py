"""Rewards in TRL's ``(completions, **kwargs) -> list[float | None]`` signature, and the registry that names them."""

from grpo_trl.rewards.registry import (
    NamedReward,
    RewardError,
    RewardInfo,
    SafeReward,
    check_reward_args,
    get_reward,
    list_rewards,
    load_plugin,
    register_reward,
    unregister_reward,
)
from grpo_trl.rewards.text import completion_text, extract_answer, extract_tag, parse_number

__all__ = [
    "NamedReward",
    "RewardError",
    "RewardInfo",
    "SafeReward",
    "check_reward_args",
    "completion_text",
    "extract_answer",
    "extract_tag",
    "get_reward",
    "list_rewards",
    "load_plugin",
    "parse_number",
    "register_reward",
    "unregister_reward",
]

# The built-ins register themselves when imported; the package imports them (the registry never imports its members).
from grpo_trl.rewards import code, countdown, format, judge, math, shaping  # noqa: E402, F401, I001
