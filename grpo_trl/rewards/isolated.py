"""A reward with a ``timeout:`` runs in a forked child process, so that the bound holds whatever the reward does (a
thread cannot be stopped: C code holding the GIL, an ``async`` reward blocking its loop). At the deadline the child
and all it started get ``SIGKILL`` and the rows score ``None``; its faults and ``log_metric`` / ``log_extra`` calls
are sent back and replayed; where ``os.fork`` is missing, a thread abandoned at the deadline (docs/rewards.md).
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import os
import pickle
import select
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from grpo_trl.rewards.results import collecting_faults, describe, report_fault
from grpo_trl.timeouts import in_thread

CAN_FORK = hasattr(os, "fork") and sys.platform != "win32"
LOGGERS = ("log_metric", "log_extra")  # TRL's callables: recorded in the child, replayed in the trainer


class RewardTimeout(TimeoutError):
    """A reward did not return within its ``timeout:``."""


class ChildFault(Exception):
    """The reward raised (or called ``exit()``) in its child process; ``described`` is its ``describe()`` there."""

    def __init__(self, described: str):
        super().__init__(described)
        self.described = described


class Child:
    """A forked call in flight: its pid, the read end of its pipe and its deadline."""

    def __init__(self, pid: int, fd: int, deadline: float, timeout: float):
        self.pid, self.fd, self.deadline, self.timeout = pid, fd, deadline, timeout


def start(func: Callable, kwargs: dict, timeout: float) -> Child:
    """Fork a child that calls ``func(**kwargs)`` (running it to completion when it is ``async``)."""
    for stream in (sys.stdout, sys.stderr):  # else the child would print what the parent had buffered again
        try:
            stream.flush()
        except Exception:  # noqa: BLE001, S110 - a closed or odd stream: nothing to flush
            pass
    read, write = os.pipe()
    deadline = time.monotonic() + timeout
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child (coverage does not follow a fork)
        try:
            os.close(read)
            _child(func, kwargs, write)
        finally:  # whatever escapes _child (a BaseException from pickling), the child never returns into the trainer
            os._exit(1)
    os.close(write)
    return Child(pid, read, deadline, timeout)


def _child(func: Callable, kwargs: dict, fd: int) -> None:  # pragma: no cover - runs in the child
    try:
        os.setpgid(0, 0)  # its own group: the deadline kills what it started too
        calls: list[tuple[str, tuple, dict]] = []
        for key in LOGGERS:
            if callable(kwargs.get(key)):
                kwargs[key] = _recorder(key, calls)
        with collecting_faults() as reported:
            value = func(**kwargs)
            if inspect.isawaitable(value):
                value = _run_coroutine(value)
        payload = ("ok", _sendable(value), list(reported), calls)
    except BaseException as exc:  # noqa: BLE001 - everything goes back to the trainer, Ctrl-C included
        payload = ("error", describe(exc), [], [])
    try:
        data = pickle.dumps(payload)
    except BaseException as exc:  # noqa: BLE001 - calls or faults that do not pickle (a __reduce__ may even exit)
        data = pickle.dumps(("error", f"its result cannot be sent back ({type(exc).__name__})", [], []))
    try:
        # its length first: the trainer stops reading at its end, not at EOF (a grandchild holding the pipe open
        # would delay EOF to the deadline and turn a prompt answer into a timeout)
        view = memoryview(len(data).to_bytes(8, "big") + data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os._exit(0)


def _recorder(key: str, calls: list) -> Callable:
    def record(*args: Any, **kwargs: Any) -> None:
        calls.append((key, args, kwargs))

    return record


def _run_coroutine(awaitable: Any) -> Any:  # pragma: no cover - runs in the child
    """Run ``awaitable`` on a fresh loop in a fresh thread (the forked thread still thinks TRL's loop runs)."""
    box: dict[str, Any] = {}

    def target() -> None:
        async def wrapped() -> Any:
            return await awaitable

        try:
            box["value"] = asyncio.run(wrapped())
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            box["error"] = exc

    worker = threading.Thread(target=contextvars.copy_context().run, args=(target,))  # faults reach the collector
    worker.start()
    worker.join()
    if "error" in box:
        raise box["error"]
    return box.get("value")


def _sendable(value: Any) -> Any:  # pragma: no cover - runs in the child
    """``value`` if it pickles, else as a list (a generator, an array type the trainer may lack)."""
    try:
        pickle.dumps(value)
        return value
    except Exception:  # noqa: BLE001
        return list(value.tolist() if hasattr(value, "tolist") else value)


def finish(child: Child) -> tuple[Any, list[str], list]:
    """Wait for ``child`` until its deadline: ``(value, reported faults, logger calls)``; ``RewardTimeout`` when it
    is late (it is killed), ``ChildFault`` when the reward failed. Blocking: run it off an event loop."""
    chunks: list[bytes] = []
    got, need = 0, None
    poller = select.poll()  # not select.select: it fails on a descriptor above 1023 (a trainer with many files open)
    poller.register(child.fd, select.POLLIN)
    try:
        while need is None or got < need:
            left = child.deadline - time.monotonic()
            if left <= 0:
                raise RewardTimeout(f"did not return within {child.timeout} s (timeout)")
            if poller.poll(max(1, int(left * 1000))):
                chunk = os.read(child.fd, 1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
                got += len(chunk)
                if need is None and got >= 8:
                    need = 8 + int.from_bytes(b"".join(chunks)[:8], "big")
    finally:
        os.close(child.fd)
        _reap(child.pid)
    data = b"".join(chunks)
    if need is None or got < need:
        raise ChildFault("its process ended without an answer (killed, out of memory, or os._exit())")
    try:
        status, value, reported, calls = pickle.loads(data[8:need])
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - what it sent fails to load here (an unpickling that raises, exits)
        raise ChildFault(f"its result cannot be read back ({type(exc).__name__})") from None
    if status != "ok":
        raise ChildFault(value)
    return value, reported, calls


def _reap(pid: int) -> None:
    """Kill the child and every process it started (its group), and collect it."""
    for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            kill()
        except OSError:  # already gone, or not yet its own group
            pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def replay(result: tuple[Any, list[str], list], kwargs: dict) -> Any:
    """In the trainer (the caller's context): report the child's faults, make its ``log_metric`` / ``log_extra``
    calls; the reward's value."""
    value, reported, calls = result
    for why in reported:
        report_fault(why)
    for key, args, kw in calls:
        target = kwargs.get(key)
        if callable(target):
            try:
                target(*args, **kw)
            except Exception:  # noqa: BLE001, S110 - a bad metric call costs that metric, as it would in-process
                pass
    return value


def call(func: Callable, kwargs: dict, timeout: float) -> Any:
    """``func(**kwargs)`` bounded by ``timeout`` seconds of wall time, in a child process where one can be forked."""
    if not CAN_FORK:
        return _threaded(func, kwargs, timeout)
    return replay(finish(start(func, kwargs, timeout)), kwargs)


def _threaded(func: Callable, kwargs: dict, timeout: float) -> Any:
    """Where no process can be forked: a daemon thread, abandoned at the deadline (its late value is never used)."""
    context = contextvars.copy_context()  # faults the reward reports reach this call's collector

    def run() -> Any:
        value = context.run(func, **kwargs)
        return _run_coroutine(value) if inspect.isawaitable(value) else value

    return in_thread(run, timeout, RewardTimeout(f"did not return within {timeout} s (timeout)"), "reward-timed")
