"""How ``GRPOTrainer`` renders a recipe's prompts, in one place: the keyword arguments it passes to
``apply_chat_template`` for every prompt (``GRPOTrainer._tokenize_prompts``).

TRL renders a conversational prompt with ``tools=<the trainer's tools> or None``, ``chat_template=`` the training
template it swaps in when tools meet a template that is not prefix-preserving (else the tokenizer's own), and the
config's ``chat_template_kwargs`` (``enable_thinking``...). With environments, each row's tools are the trainer's
tools plus the tool methods of that row's environment, listed from one probed instance per environment (TRL probes
one too). The token-length filter counts the prompt TRL will feed the model with these, and ``grpo-trl data`` shows
it: tool schemas alone can add hundreds of tokens.

Not rendered here: the text an environment's ``reset(**row)`` returns, which TRL appends to the last message at
rollout time (calling ``reset`` for every row of a corpus would run the environment itself).

Example:
    >>> Rendering.of(None, [], {"enable_thinking": False}).kwargs_for(None)
    {'enable_thinking': False}
"""

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
    """``{"chat_template": ...}`` when TRL swaps in its training template (tools and a template that is not
    prefix-preserving), else ``{}``."""
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
    """``apply_chat_template`` keyword arguments for a prompt: ``common`` for every row, ``by_environment`` per
    environment name (``None``: a single environment) when the recipe has environments."""

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
        """As ``GRPOTrainer(processing_class=tokenizer, tools=tools, environment_factory=environment)`` with
        ``GRPOConfig(chat_template_kwargs=...)`` renders prompts."""
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
