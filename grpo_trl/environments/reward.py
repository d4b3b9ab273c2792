"""The ``environment`` reward: each rollout's environment's ``get_reward()`` with a recipe weight (TRL then does not
add the same score a second time)."""

from __future__ import annotations

import asyncio
import functools
import inspect
import threading
from typing import Any

from grpo_trl.environments.registry import environment_score
from grpo_trl.rewards.registry import register_reward


@register_reward("environment")
def environment(completions: list, environments: list | None = None, **kwargs: Any) -> list[float | None]:
    """The environment's get_reward() for each rollout (needs an environment: section)."""
    if environments is None:
        raise ValueError("the 'environment' reward needs an environment: section (TRL passes no environments)")
    scores = [environment_score(env) for env in environments]
    if any(inspect.isawaitable(s) for s in scores):  # an async get_reward(), which TRL supports: await it
        return asyncio.run_coroutine_threadsafe(_gather(scores), _loop()).result()
    return scores


async def _gather(scores: list) -> list:
    return [await s if inspect.isawaitable(s) else s for s in scores]


@functools.cache
def _loop() -> asyncio.AbstractEventLoop:
    """One event loop, in a daemon thread, for every async ``get_reward()`` of the run (as TRL runs them on one)."""
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, name="grpo-trl-environment-reward", daemon=True).start()
    return loop
