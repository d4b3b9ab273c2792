"""Environments for TRL's ``environment_factory`` (multi-turn rollouts with state): registry, built-ins, and the
``environment`` reward that scores them."""

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

# The built-ins register themselves when imported; the package imports them (the registry never imports its members).
from grpo_trl.environments import countdown, reward  # noqa: E402, F401, I001
