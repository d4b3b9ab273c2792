"""Environments for TRL's ``environment_factory`` (multi-turn rollouts with state): registry and built-ins."""

from grpo_trl.environments.registry import (
    EnvError,
    build_environment_factory,
    check_environment,
    environment_problems,
    environment_score,
    is_multi,
    lookup_environment,
    register_environment,
)

__all__ = [
    "EnvError",
    "build_environment_factory",
    "check_environment",
    "environment_problems",
    "environment_score",
    "is_multi",
    "lookup_environment",
    "register_environment",
]
