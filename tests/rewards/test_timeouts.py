"""The bounded calls: ``grpo_trl.timeouts`` (a thread, as tools called off the main thread use it) and a timed
reward's forked child (``rewards/isolated.py``)."""

from __future__ import annotations

import threading
import time

import pytest

from grpo_trl.rewards import isolated
from grpo_trl.timeouts import in_thread
from grpo_trl.tools.registry import bounded


def test_value_error_and_lateness_come_back_to_the_caller():
    assert in_thread(lambda: 42, 1.0, TimeoutError("late")) == 42
    with pytest.raises(KeyError, match="inside"):
        in_thread(lambda: {}["inside"], 1.0, TimeoutError("late"))
    start = time.monotonic()
    with pytest.raises(TimeoutError, match="late"):
        in_thread(lambda: time.sleep(5), 0.1, TimeoutError("late"))
    assert time.monotonic() - start < 2


def test_a_timed_reward_is_abandoned_at_its_deadline():
    async def scored(completions, **kwargs):
        return [1.0] * len(completions)

    assert isolated.call(scored, {"completions": ["a", "b"]}, 2.0) == [1.0, 1.0]
    with pytest.raises(isolated.RewardTimeout, match=r"did not return within 0.1 s \(timeout\)"):
        isolated.call(lambda **kw: time.sleep(5), {}, 0.1)


def test_a_tool_called_off_the_main_thread_is_bounded_by_a_worker_thread():
    def slow(x: int) -> int:
        """Sleep.

        Args:
            x: Seconds.
        """
        time.sleep(x)
        return x

    tool = bounded(slow, timeout=0.2)
    box = {}

    def caller() -> None:
        try:
            box["fast"] = tool(x=0)
            tool(x=5)
        except TimeoutError as exc:
            box["error"] = str(exc)

    worker = threading.Thread(target=caller)
    worker.start()
    worker.join(5)
    assert box == {"fast": 0, "error": "tool 'slow' did not return within 0.2 s"}
    assert tool.cause == "TimeoutError: tool 'slow' did not return within 0.2 s"
