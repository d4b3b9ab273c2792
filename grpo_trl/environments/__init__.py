"""Environments for TRL's ``environment_factory`` (multi-turn rollouts with state): registry, built-ins, and the
``environment`` reward that scores them. The built-ins register themselves when imported here."""

from grpo_trl.environments import countdown, reward  # noqa: F401 - the built-ins
from grpo_trl.environments.registry import (
    EnvError,
    build_environment_factory,
    environment_problems,
    environment_score,
    is_multi,
    lookup_environment,
    register_environment,
)

__all__ = [
    "EnvError",
    "build_environment_factory",
    "environment_problems",
    "environment_score",
    "is_multi",
    "lookup_environment",
    "register_environment",
]
