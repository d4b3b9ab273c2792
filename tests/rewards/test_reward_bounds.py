"""Issue 20, items 4 and 5: a user's reward costs rows, never the run, and every time bound the README states holds
whatever the reward does (stuck in C code, blocking its own event loop, raising any BaseException, moving the
working directory, closing sys.stdout, leaving a process running)."""

from __future__ import annotations

import asyncio
import io
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grpo_trl.check.rewards import build_rewards
from grpo_trl.rewards.call import NamedReward, SafeReward, call_sync
from grpo_trl.rewards.registry import get_reward
from tests.rewards import faulty_rewards as faulty

pytestmark = pytest.mark.fault

M = "tests.rewards.faulty_rewards:"
ROOT = Path(__file__).resolve().parents[2]


def kwargs(n: int = 4) -> tuple[dict, dict]:
    logged: dict[str, float] = {}
    return {
        "prompts": [f"p{i}" for i in range(n)],
        "completions": [f"c{i}" for i in range(n)],
        "log_metric": logged.__setitem__,
        "log_extra": lambda column, values: logged.__setitem__(f"extra/{column}", values),
    }, logged


def timed(func, timeout: float) -> tuple[list, float, SafeReward]:
    wrapped = SafeReward(NamedReward(func.__name__, func), timeout=timeout)
    args, _ = kwargs()
    start = time.monotonic()
    out = call_sync(wrapped, **args)
    return out, time.monotonic() - start, wrapped


@pytest.mark.parametrize("func", [faulty.regex_hang, faulty.blocks_loop], ids=["regex-in-C", "async-blocks-loop"])
def test_timeout_holds_for_a_reward_a_thread_cannot_stop(func):
    """`timeout: 1` on a regex stuck in C ran 13 s and used its value; an async reward blocking its loop with
    time.sleep(30) under `timeout: 2` ran 35 s. Now: the rows are None as timed out, within the bound."""
    out, elapsed, wrapped = timed(func, 1.0)
    assert out == [None] * 4 and "did not return within 1.0 s (timeout)" in wrapped.cause
    assert elapsed < 1.0 + 0.75, elapsed  # measured 1.03-1.06 s on 2 loaded cores


def test_a_timed_reward_still_reports_faults_and_logs_metrics():
    """The child process sends back what the reward reported and logged; the trainer replays it."""

    def reports(completions, log_metric, log_extra, **kw):
        from grpo_trl.rewards.results import report_fault

        log_metric("judge/calls", 4.0)
        log_extra("why", ["a", "b", "c", "d"])
        report_fault("request failed")
        return [1.0, None, 0.5, 1.0]

    wrapped = SafeReward(NamedReward("reports", reports), timeout=5.0)
    args, logged = kwargs()
    assert call_sync(wrapped, **args) == [1.0, None, 0.5, 1.0]
    assert logged["judge/calls"] == 4.0 and logged["extra/why"] == ["a", "b", "c", "d"]
    assert logged["reward_faults/reports"] == 1.0 and wrapped.cause == "request failed"


def test_a_timed_reward_that_returns_in_time_keeps_its_values_and_row_by_row_fallback():
    def picky(completions, **kw):
        if len(completions) > 1:
            raise RuntimeError("batch")
        return [0.0 if completions[0] == "c1" else 1.0]

    wrapped = SafeReward(NamedReward("picky", picky), timeout=5.0)
    args, logged = kwargs()
    assert call_sync(wrapped, **args) == [1.0, 0.0, 1.0, 1.0]
    assert logged["reward_faults/picky"] == 0.0  # the batch failed, every row scored on its own


@pytest.mark.parametrize(
    "name", ["raises_cancelled", "raises_generator_exit", "raises_custom_base", "awaits_cancelled_task"]
)
@pytest.mark.parametrize("timeout", [None, 5.0])
def test_any_base_exception_of_a_reward_costs_rows(name, timeout):
    wrapped = SafeReward(get_reward(M + name), timeout=timeout)
    args, logged = kwargs()
    assert call_sync(wrapped, **args) == [None] * 4
    assert logged[f"reward_faults/{name}"] == 4.0 and wrapped.cause


def test_a_cancelled_call_is_still_cancelled():
    """Only the reward's own CancelledError is a fault: the trainer cancelling the call still cancels it."""

    async def slow(completions, **kw):
        await asyncio.sleep(10)
        return [1.0] * len(completions)

    wrapped = SafeReward(NamedReward("slow", slow))

    async def cancel_it():
        task = asyncio.ensure_future(wrapped(**kwargs()[0]))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_it())


def test_chdir_and_a_closed_stdout_are_put_back(tmp_path, monkeypatch, caplog):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(io.BytesIO()))  # the reward closes this one, not pytest's
    for name in ("changes_dir", "closes_stdout"):
        wrapped = SafeReward(get_reward(M + name))
        assert call_sync(wrapped, **kwargs()[0]) == [1.0] * 4
    assert Path.cwd() == tmp_path and not sys.stdout.closed
    print("still printing")  # a closed stdout raised ValueError here (the summary)
    assert "changed the working directory" in caplog.text and "closed or replaced sys.stdout" in caplog.text


@pytest.mark.parametrize(
    ("name", "what"), [("FactoryRaises", "ValueError: cannot build"), ("FactoryExits", "exit(0)")]
)
def test_a_failing_reward_factory_is_one_error_naming_the_entry(make_recipe, name, what):
    """A factory raising ValueError was exit 70; one calling sys.exit(0) made `train` exit 0 having trained
    nothing."""
    from grpo_trl.check import load_recipe
    from grpo_trl.errors import RewardError

    reg = f"issue20_{name.lower()}"
    path = make_recipe(rewards=[{"name": "xml_format"}, {"name": reg}], extra={"plugins": ["plug.py"]})
    (path.parent / "plug.py").write_text(
        f"from grpo_trl import register_reward\nfrom {M[:-1]} import {name}\nregister_reward({reg!r})({name})\n"
    )
    recipe = load_recipe(path)
    with pytest.raises(RewardError) as info:
        build_rewards(recipe)
    (problem,) = info.value.problems
    assert problem.key == "rewards.1.args" and problem.file == str(recipe.path) and what in problem.message


@pytest.mark.slow
def test_train_survives_rewards_that_end_runs_and_exits_when_done(tmp_path, tiny_model):
    """One real run (`python -m grpo_trl.train`, relative output_dir) with every reward that ended a run, hung it
    past its timeout, or kept the process alive after the summary (a child process, a non-daemon thread): it trains,
    saves where it was told, prints its summary, names what it left behind and exits 0 within a bound."""
    from tests.conftest import tiny_recipe

    rewards = [
        {"name": "xml_format"},
        *({"name": M + n} for n in ("raises_cancelled", "raises_generator_exit", "raises_custom_base")),
        {"name": M + "awaits_cancelled_task"},
        {"name": M + "changes_dir"},
        {"name": M + "closes_stdout"},
        {"name": M + "starts_process"},
        {"name": M + "leaves_thread"},
        {"name": M + "regex_hang", "timeout": 1.0},
        {"name": M + "blocks_loop", "timeout": 1.0},
    ]
    path = tiny_recipe(tmp_path, tiny_model, rewards=rewards, trainer={"max_steps": 2, "output_dir": "out"})
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "grpo_trl.train", str(path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )
    elapsed = time.monotonic() - start
    assert done.returncode == 0, done.stderr[-3000:]
    assert "grpo-trl: trained 2 steps" in done.stdout
    assert (tmp_path / "out" / "model.safetensors").exists() or any((tmp_path / "out").glob("*.safetensors"))
    assert "left process" in done.stderr and "(terminated)" in done.stderr
    assert "reward 'leaves_thread' left thread 'forgotten-worker' running" in done.stderr  # not kept alive by it
    assert elapsed < 300  # two timeouts of 1 s per step, not 2 x 13 s or 35 s; no wait for the process


def _check_with_plugin(tmp_path, tiny_model, source: str) -> subprocess.CompletedProcess:
    """`grpo-trl check` as a program on a tiny recipe whose ``plugins:`` file holds ``source``."""
    from tests.conftest import tiny_recipe

    (tmp_path / "plug.py").write_text(source)
    path = tiny_recipe(tmp_path, tiny_model, extra={"plugins": ["plug.py"]})
    done = subprocess.run(
        [sys.executable, "-m", "grpo_trl.cli", "check", str(path)],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and "OK" in done.stdout, done.stderr[-2000:]
    return done


@pytest.mark.slow
def test_check_exits_when_a_plugin_leaves_a_thread_running(tmp_path, tiny_model):
    """A plugin whose import starts a non-daemon thread kept `check` alive forever after its verdict."""
    start = time.monotonic()
    source = "import threading, time\nthreading.Thread(target=time.sleep, args=(3600,), name='plugin-worker').start()"
    done = _check_with_plugin(tmp_path, tiny_model, source)
    assert "left thread 'plugin-worker' running" in done.stderr
    assert time.monotonic() - start < 240


@pytest.mark.slow
def test_check_exits_when_a_plugin_registers_an_exit_handler_that_hangs(tmp_path, tiny_model):
    """An atexit handler that never returns kept the process alive after the verdict; it gets the grace period."""
    done = _check_with_plugin(tmp_path, tiny_model, "import atexit, time\natexit.register(time.sleep, 10**6)\n")
    assert "exit handler (atexit) did not return" in done.stderr


def test_call_sync_waits_for_any_awaitable_not_only_a_coroutine():
    class Later:  # an awaitable that is not a coroutine (what a Future or a Task is to inspect)
        def __await__(self):
            yield from ()
            return [0.5]

    assert call_sync(lambda **kw: Later(), completions=["x"]) == [0.5]


CTRL_C_WHILE_SCORING = """
import asyncio, os, signal, threading, time
from grpo_trl.rewards.call import call_sync
started, ended = threading.Event(), []
async def slow(completions, **kw):
    started.set()
    try:
        await asyncio.sleep(10)
    except asyncio.CancelledError:
        ended.append("cancelled")
        raise
    ended.append("finished")
    return [1.0]
threading.Thread(target=lambda: started.wait(10) and os.kill(os.getpid(), signal.SIGINT), daemon=True).start()
t = time.monotonic()
try:
    call_sync(slow, completions=["x"])
except KeyboardInterrupt:
    print("interrupted", ended, time.monotonic() - t < 5)
"""


def test_ctrl_c_while_call_sync_waits_cancels_the_async_reward():
    """Ctrl-C during eval's scoring cancels an async reward (its cleanup runs), not leaving it running in a thread."""
    done = subprocess.run([sys.executable, "-c", CTRL_C_WHILE_SCORING], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "interrupted ['cancelled'] True", done.stdout + done.stderr


def test_a_row_whose_inputs_cannot_be_copied_costs_that_row_only():
    """The per-row retry copies each row inside its guard: an uncopyable value ended the run (before 8820920)."""

    class NoCopy:
        def __deepcopy__(self, memo):
            raise TypeError("cannot copy")

    def reward(completions, obj, **kwargs):
        return [1.0] * len(completions)

    objs = [object(), NoCopy(), object()]
    wrapped = SafeReward(reward)
    assert call_sync(wrapped, completions=["a", "b", "c"], obj=objs) == [1.0, None, 1.0]
    assert wrapped.faults == 1 and "cannot copy" in wrapped.cause
