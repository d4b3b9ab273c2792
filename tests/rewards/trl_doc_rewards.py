"""Rewards written the way TRL's documentation writes them, one per call shape TRL supports (referenced as
``tests.rewards.trl_doc_rewards:NAME``). Each records the keywords it received and when it ran, so the tests can
compare what grpo-trl hands them with what ``GRPOTrainer._calculate_rewards`` passes."""

from __future__ import annotations

import asyncio
import time

CALLS: dict[str, list[dict]] = {}  # reward -> [{"keys": sorted keyword names, "start": t, "end": t}]


def _record(name: str, kwargs: dict, start: float) -> None:
    CALLS.setdefault(name, []).append({"keys": sorted(kwargs), "start": start, "end": time.perf_counter()})


def _content(completion) -> str:
    return completion[0]["content"] if isinstance(completion, list) else completion


def length_reward(completions, **kwargs):
    """Shape 1: completions first, positional in TRL's docs, everything else in **kwargs."""
    start = time.perf_counter()
    _record("length_reward", {"completions": completions, **kwargs}, start)
    return [-abs(20 - len(_content(c))) / 20 for c in completions]


def prompt_echo(prompts, completions, **kwargs):
    """Shape 2: ``prompts`` first (TRL's docs use it to compare the completion with the question)."""
    start = time.perf_counter()
    _record("prompt_echo", {"prompts": prompts, "completions": completions, **kwargs}, start)
    return [float(_content(c)[:1] in str(p)) for p, c in zip(prompts, completions)]


def ids_only(completion_ids, **kwargs):
    """Shape 3: no ``completions`` parameter at all; scores the token ids."""
    start = time.perf_counter()
    _record("ids_only", {"completion_ids": completion_ids, **kwargs}, start)
    return [min(1.0, len(ids) / 10) for ids in completion_ids]


async def async_judge(completions, **kwargs):
    """Shape 4: an ``async def`` reward (a remote judge); TRL awaits it with the other async rewards."""
    start = time.perf_counter()
    await asyncio.sleep(0.2)
    _record("async_judge", {"completions": completions, **kwargs}, start)
    return [1.0 if "<" in _content(c) else 0.5 for c in completions]


class AsyncRubric:
    """Shape 5: an object whose ``__call__`` is ``async`` (TRL's ``is_async_callable`` looks at ``__call__``)."""

    __name__ = "async_rubric"

    async def __call__(self, prompts, completions, completion_ids, **kwargs):
        start = time.perf_counter()
        await asyncio.sleep(0.2)
        _record("async_rubric", {"prompts": prompts, "completions": completions, "completion_ids": completion_ids,
                                 **kwargs}, start)  # fmt: skip
        return [0.25 * (len(ids) % 4) for ids in completion_ids]


async_rubric = AsyncRubric()

SHAPES = ["length_reward", "prompt_echo", "ids_only", "async_judge", "async_rubric"]


async def slow_judge(completions, **kwargs):
    """An async reward that hangs (cut by ``timeout:``)."""
    await asyncio.sleep(3600)
    return [1.0] * len(completions)
