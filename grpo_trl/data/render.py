"""How ``GRPOTrainer`` renders a recipe's prompts: the ``apply_chat_template`` keyword arguments it passes (tools,
its training template, ``chat_template_kwargs``, each environment's tool methods), so the token-length filter counts
the prompt the model is fed."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

logger = logging.getLogger(__name__)


def _schemas(tools: list) -> list[dict]:
    from transformers.utils import get_json_schema

    return [tool if isinstance(tool, dict) else get_json_schema(tool) for tool in tools]


def _trainer_template(tokenizer: Any, tools: list) -> dict:
    """``{"chat_template": ...}`` when TRL swaps in its training template (tools, not prefix-preserving)."""
    if not tools:
        return {}
    try:
        from grpo_trl.trl_adapter import prefix_preserving, training_chat_template

        if not prefix_preserving(tokenizer):
            return {"chat_template": training_chat_template(tokenizer)}
    except Exception as exc:  # an older TRL, or a template TRL cannot train with: `check` reports the latter
        logger.debug("prompt rendering: keeping the tokenizer's chat template (%s)", exc)
    return {}


@dataclass
class Rendering:
    """``apply_chat_template`` keyword arguments: ``common`` for every row, ``by_environment`` per environment name
    (``None``: a single environment)."""

    common: dict = field(default_factory=dict)
    by_environment: dict[Any, dict] | None = None

    @classmethod
    def of(
        cls,
        tokenizer: Any,
        tools: list | None,
        chat_template_kwargs: dict | None,
        environment: Callable | dict[str, Callable] | None = None,
    ) -> Rendering:
        """As ``GRPOTrainer(tools=..., environment_factory=...)`` with ``chat_template_kwargs`` renders prompts."""
        tools = list(tools or [])
        base = dict(chat_template_kwargs or {})
        if environment is None:
            common = {**base, **_trainer_template(tokenizer, tools)}
            return cls({**common, "tools": _schemas(tools)} if tools else common)
        from grpo_trl.environments.registry import tool_methods

        factories = environment if isinstance(environment, dict) else {None: environment}
        # grpo-trl's factories keep this instance for TRL's own probe (EnvironmentFactory.probe): no extra instance
        per = {name: tools + tool_methods(getattr(f, "probe", f)()) for name, f in factories.items()}
        common = {**base, **_trainer_template(tokenizer, [t for ts in per.values() for t in ts])}
        return cls(common, {name: {**common, "tools": _schemas(ts)} if ts else common for name, ts in per.items()})

    def kwargs_for(self, environment: Any) -> dict:
        """The keyword arguments for a row whose ``environment`` column holds ``environment`` (``None``: none)."""
        by_name = self.by_environment or {}  # a single environment is None; an unknown name is reported by check
        return by_name.get(environment, by_name.get(None, self.common))

    @property
    def per_row(self) -> bool:
        """Rows render differently by their ``environment`` column (several named environments)."""
        return bool(self.by_environment) and set(self.by_environment) != {None}


def recipe_rendering(recipe: Any, tokenizer: Any) -> Rendering:
    """``Rendering`` for a recipe: its ``data.tools``, ``data.environment`` and ``chat_template_kwargs``."""
    from grpo_trl.environments import build_environment_factory
    from grpo_trl.tools import build_tools

    section = recipe.data.get("environment")
    env = build_environment_factory(section) if section is not None else None
    tools = build_tools(recipe.data.get("tools"))
    return Rendering.of(tokenizer, tools, recipe.grpo_kwargs().get("chat_template_kwargs"), env)
