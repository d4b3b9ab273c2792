"""Rewards for tool-calling rollouts: ``environment`` (the environment's own ``get_reward()``, with a recipe weight)
and ``tool_success`` (the rollout got at least one tool result that was not an error).

TRL passes ``environments`` (one instance per rollout) to every reward when ``environment_factory`` is set. Listing
``environment`` in ``rewards:`` puts ``get_reward()`` in the reward table with its own weight; grpo-trl then keeps TRL
from adding the same score a second time.

Example:
    >>> tool_success([[{"role": "assistant", "content": ""}, {"role": "tool", "name": "calculator", "content": "7"}],
    ...               [{"role": "tool", "name": "calculator", "content": "{'error': 'bad'}"}], "no tools"])
    [1.0, 0.0, 0.0]
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import threading
from typing import Any

from grpo_trl.rewards.registry import register_reward


@register_reward("environment")
def environment(completions: list, environments: list | None = None, **kwargs: Any) -> list[float | None]:
    """The environment's get_reward() for each rollout (needs an environment: section)."""
    if environments is None:
        raise ValueError("the 'environment' reward needs an environment: section (TRL passes no environments)")
    from grpo_trl.environments import environment_score

    scores = [environment_score(env) for env in environments]
    if any(inspect.isawaitable(s) for s in scores):  # an async get_reward(), which TRL supports: await it
        return asyncio.run_coroutine_threadsafe(_gather(scores), _loop()).result()
    return scores


async def _gather(scores: list) -> list:
    return [await s if inspect.isawaitable(s) else s for s in scores]


@functools.cache
def _loop() -> asyncio.AbstractEventLoop:
    """One event loop for every async ``get_reward()`` of the run (as TRL runs them on one), in a daemon thread:
    an environment's async client made on the first call still works on the next."""
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, name="grpo-trl-environment-reward", daemon=True).start()
    return loop


def _ok(message: Any) -> bool:
    if not isinstance(message, dict) or message.get("role") != "tool":
        return False
    content = message.get("content")
    return not (isinstance(content, str) and content.startswith("{'error'"))  # TRL's str({"error": ...})


@register_reward("tool_success")
def tool_success(completions: list, **kwargs: Any) -> list[float]:
    """1.0 when the rollout got at least one tool result that was not an error."""
    return [1.0 if isinstance(c, list) and any(_ok(m) for m in c) else 0.0 for c in completions]
