"""The one bound in time for code that may never return: a forked child, killed with all it started at its deadline.

Timed rewards (``timeout:``) and math-verify both run here: a thread cannot be stopped (C code holding the GIL, an
``async`` reward blocking its loop), a process group can.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import os
import pickle
import select
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from multiprocessing.connection import Connection
from typing import Any

from grpo_trl.rewards.results import collecting_faults, describe, report_fault
from grpo_trl.timeouts import in_thread

LOGGERS = ("log_metric", "log_extra")  # TRL's callables: recorded in the child, replayed in the trainer


class RewardTimeout(TimeoutError):
    """A reward did not return within its ``timeout:``."""


class ChildFault(Exception):
    """The child failed (the reward raised or exited, or the child died); ``described`` says how."""

    def __init__(self, described: str):
        super().__init__(described)
        self.described = described


class Child:
    """A forked child sending back one pickled message per item ``produce()`` yields; ``next`` reads them. A
    ``worker`` child is long-lived: ``produce(requests)`` gets what ``send`` sends; it keeps no other descriptor."""

    def __init__(self, produce: Callable[..., Iterable], worker: bool = False):
        for stream in (sys.stdout, sys.stderr):  # else the child would print what the parent had buffered again
            with contextlib.suppress(Exception):
                stream.flush()
        read, write = os.pipe()
        requests, sender = os.pipe() if worker else (-1, -1)
        self.pid = os.fork()
        if self.pid == 0:  # pragma: no cover - the child (coverage does not follow a fork)
            try:
                os.setpgid(0, 0)  # its own group: the deadline kills what it started too
                if worker:  # it ends when grpo-trl closes its requests (or dies), not when a sibling does
                    low, high = sorted((write, requests))
                    for start, end in ((3, low), (low + 1, high), (high + 1, os.sysconf("SC_OPEN_MAX"))):
                        os.closerange(max(3, start), end)
                else:
                    os.close(read)
                for message in produce(*([_received(Connection(requests, writable=False))] if worker else [])):
                    _send(write, message)
            finally:  # whatever happens, the child never returns into the trainer
                os._exit(0)
        os.close(write)
        if worker:
            os.close(requests)
        self.requests = Connection(sender, readable=False) if worker else None
        self.fd, self.buf, self.eof = read, b"", False
        self.poller = select.poll()  # not select.select: it fails on a descriptor above 1023
        self.poller.register(read, select.POLLIN)

    def next(self, deadline: float) -> Any:
        """The next message; ``RewardTimeout`` at ``deadline`` (time.monotonic), ``ChildFault`` if the child ended."""
        while True:
            if len(self.buf) >= 8 and len(self.buf) >= (need := 8 + int.from_bytes(self.buf[:8], "big")):
                data, self.buf = self.buf[8:need], self.buf[need:]
                try:
                    return pickle.loads(data)
                except KeyboardInterrupt:
                    raise
                except BaseException as exc:  # noqa: BLE001 - an unpickling that raises or exits
                    raise ChildFault(f"its result cannot be read back ({type(exc).__name__})") from None
            if self.eof:
                raise ChildFault("its process ended without an answer (killed, out of memory, or os._exit())")
            left = deadline - time.monotonic()
            if left <= 0:
                raise RewardTimeout("late")
            if self.poller.poll(max(1, int(left * 1000))):
                chunk = os.read(self.fd, 1 << 16)
                self.eof, self.buf = not chunk, self.buf + chunk

    def send(self, message: Any) -> None:
        try:
            self.requests.send(message)
        except OSError:  # it died: ``next`` says so
            self.eof = True

    def close(self) -> None:
        """Kill the child and every process it started (its group), and collect it (once)."""
        if self.fd < 0:
            return
        os.close(self.fd)
        if self.requests is not None:
            self.requests.close()
        self.fd, self.requests, self.eof = -1, None, True
        for kill in (os.killpg, os.kill):
            with contextlib.suppress(OSError):  # already gone, or not yet its own group
                kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)


def _send(fd: int, message: Any) -> None:  # pragma: no cover - runs in the child
    try:
        data = pickle.dumps(message)
    except BaseException as exc:  # noqa: BLE001 - does not pickle (a __reduce__ may even exit)
        data = pickle.dumps(("error", f"its result cannot be sent back ({type(exc).__name__})"))
    # its length first: the parent stops reading at its end, not at EOF (a grandchild may hold the pipe open)
    view = memoryview(len(data).to_bytes(8, "big") + data)
    while view:
        view = view[os.write(fd, view) :]


def _received(requests: Connection) -> Iterator[Any]:  # pragma: no cover - runs in a worker child
    """The messages ``Child.send`` sends, until grpo-trl closes its end."""
    with contextlib.suppress(EOFError):
        while True:
            yield requests.recv()


def _outcome(func: Callable, kwargs: dict) -> Any:  # pragma: no cover - runs in the child
    """``("ok", value, faults, logger calls)`` of ``func(**kwargs)``, or ``("error", description)``."""
    try:
        calls: list[tuple[str, tuple, dict]] = []
        for key in LOGGERS:
            if callable(kwargs.get(key)):
                kwargs[key] = lambda *a, _key=key, **kw: calls.append((_key, a, kw))
        with collecting_faults() as reported:
            value = func(**kwargs)
            if inspect.isawaitable(value):
                value = run_awaitable(value)
        with contextlib.suppress(Exception):
            pickle.dumps(value)
            return "ok", value, list(reported), calls
        return "ok", list(value.tolist() if hasattr(value, "tolist") else value), list(reported), calls
    except BaseException as exc:  # noqa: BLE001 - everything goes back to the trainer, Ctrl-C included
        return "error", describe(exc)


def run_awaitable(awaitable: Any) -> Any:
    """Run ``awaitable`` on a fresh loop in a fresh thread (this one may run a loop, or think so after a fork); Ctrl-C
    cancels it, as ``asyncio.run`` would (its cleanup runs, for up to 2 s), instead of leaving it running."""
    task: list[asyncio.Task] = []
    done = threading.Event()

    async def wrapped() -> Any:
        task.append(asyncio.current_task())
        try:
            return await awaitable
        finally:
            done.set()

    context = contextvars.copy_context()  # faults the reward reports reach the collector
    try:
        return in_thread(lambda: context.run(asyncio.run, wrapped()), None, RuntimeError("no bound"), "reward-async")
    except KeyboardInterrupt:
        for t in task:
            with contextlib.suppress(RuntimeError):  # it ended meanwhile: its loop is closed
                t.get_loop().call_soon_threadsafe(t.cancel)
            done.wait(2.0)
        raise


def call(func: Callable, kwargs: dict, timeout: float) -> Any:
    """``func(**kwargs)`` (run to completion when ``async``) bounded by ``timeout`` seconds of wall time, in a forked
    child. Blocking: an event loop runs it in a thread."""
    child = Child(lambda: [_outcome(func, kwargs)])
    try:
        outcome = child.next(time.monotonic() + timeout)
    except RewardTimeout:
        raise RewardTimeout(f"did not return within {timeout} s (timeout)") from None
    finally:
        child.close()
    if outcome[0] != "ok":
        raise ChildFault(outcome[1])
    _, value, reported, calls = outcome
    for why in reported:  # the child's faults reported, its log_metric / log_extra calls made, here
        report_fault(why)
    for key, args, kw in calls:
        if callable(kwargs.get(key)):
            with contextlib.suppress(Exception):  # a bad metric call costs that metric, as it would in-process
                kwargs[key](*args, **kw)
    return value
