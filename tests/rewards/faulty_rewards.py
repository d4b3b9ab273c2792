"""Deliberately broken rewards for the fault tests (referenced as tests.rewards.faulty_rewards:NAME)."""

import math
import time

from grpo_trl.rewards.text import completion_text


def _texts(completions):
    return [completion_text(c) for c in completions]


def _first_batch(kwargs) -> bool:
    """In a training run, the first generation batch: the rewards broken on every row behave there, since a reward
    failing on all rows of the first batch stops the run (tests/faults/test_reward_broken_stops.py)."""
    state = kwargs.get("trainer_state")
    return state is not None and state.global_step == 0


def raises_sometimes(completions, **kwargs):
    """Raises whenever a batch holds a completion whose text hashes to 0 mod 10 (about 10% of rows)."""
    texts = _texts(completions)
    if any(sum(map(ord, t)) % 10 == 0 for t in texts):
        raise RuntimeError("bad row")
    return [1.0] * len(texts)


def wrong_length(completions, **kwargs):
    if _first_batch(kwargs):
        return [1.0] * len(completions)
    return [1.0] * (len(completions) - 1)


def hangs_on_a_row(completions, **kwargs):
    """Never returns when the batch holds a given row (here: the first batch of every run)."""
    if kwargs["trainer_state"].global_step == 0:
        time.sleep(3600)
    return [1.0] * len(completions)


def returns_nan(completions, **kwargs):
    return [math.nan if i % 2 else 1.0 for i in range(len(completions))]


def vandal(prompts, completions, nums, **kwargs):
    """Edits everything it is handed in place: a message dict, the completion list, a prompt turn, a column."""
    completions[0][0]["content"] = "EDITED BY VANDAL"
    completions.append([{"role": "assistant", "content": "EXTRA"}])
    prompts[0][-1].pop("content", None)
    nums[0].append(12345)
    nums.pop()
    return [0.5] * (len(completions) - 1)


def overflows(completions, **kwargs):
    """Finite in float64, inf in TRL's float32 tensor."""
    return [1e308 if i % 2 else 1.0 for i in range(len(completions))]


def calls_sys_exit(completions, **kwargs):
    if _first_batch(kwargs):
        return [1.0] * len(completions)
    import sys

    sys.exit("a plugin gave up")


async def _judge(completions):
    return [1.0] * len(completions)


def returns_coroutine(completions, **kwargs):
    """Forgot ``async def``: returns the judge's coroutine instead of its scores."""
    if _first_batch(kwargs):
        return [1.0] * len(completions)
    return _judge(completions)


def leaves_thread(completions, **kwargs):
    """Starts a non-daemon worker that never ends (once)."""
    import threading

    if not any(t.name == "forgotten-worker" for t in threading.enumerate()):
        threading.Thread(target=time.sleep, args=(3600,), name="forgotten-worker").start()
    return [1.0] * len(completions)


# ------------------------------------------------------------------------------------------------ issue 20 items 4, 5
class Custom(BaseException):
    """A user's own BaseException (not an Exception): it ended the run before."""


def raises_cancelled(completions, **kwargs):
    if _first_batch(kwargs):
        return [1.0] * len(completions)
    import asyncio

    raise asyncio.CancelledError("the reward's own")


def raises_generator_exit(completions, **kwargs):
    if _first_batch(kwargs):
        return [1.0] * len(completions)
    raise GeneratorExit


def raises_custom_base(completions, **kwargs):
    if _first_batch(kwargs):
        return [1.0] * len(completions)
    raise Custom("mine")


async def awaits_cancelled_task(completions, **kwargs):
    if _first_batch(kwargs):
        return [1.0] * len(completions)
    import asyncio

    task = asyncio.ensure_future(asyncio.sleep(10))
    task.cancel()
    await task
    return [1.0] * len(completions)


def changes_dir(completions, **kwargs):
    import os
    import tempfile

    os.chdir(tempfile.gettempdir())  # a relative output_dir then pointed elsewhere at the save
    return [1.0] * len(completions)


def closes_stdout(completions, **kwargs):
    import sys

    sys.stdout.close()
    return [1.0] * len(completions)


def regex_hang(completions, **kwargs):
    """Stuck in C code for many seconds (a catastrophic regular expression holds the GIL), then scores 1.0."""
    import re

    re.match(r"(a+)+$", "a" * 30 + "!")
    return [1.0] * len(completions)


async def blocks_loop(completions, **kwargs):
    """An async reward that blocks its event loop: asyncio.wait_for can never fire."""
    time.sleep(30)
    return [1.0] * len(completions)


_STARTED = []


def starts_process(completions, **kwargs):
    """Starts one non-daemon multiprocessing.Process that never ends (Python waits for it at exit)."""
    import multiprocessing

    if not _STARTED:
        proc = multiprocessing.get_context("fork").Process(target=time.sleep, args=(3600,), daemon=False)
        proc.start()
        _STARTED.append(proc)
    return [1.0] * len(completions)


class FactoryRaises:
    """A reward factory (a class) whose construction fails."""

    def __init__(self):
        raise ValueError("cannot build the scorer")

    def __call__(self, completions, **kwargs):
        return [1.0] * len(completions)


class FactoryExits(FactoryRaises):
    """A reward factory that calls sys.exit(0): train exited 0 having trained nothing."""

    def __init__(self):
        import sys

        sys.exit(0)
