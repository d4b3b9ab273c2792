"""Torch's CPU threads for ``train`` and ``eval`` when the user set none: every core (at most 4 for a model under a
million parameters), with OpenMP's passive wait when other work keeps the CPU busy at start; during training
``ThreadTuner`` times the thread count against its neighbours now and then and keeps the fastest. Why: bench/threads.py
(on 2 shared cores torch's default ran 14-24x slower than 2 passive threads, which ran 1.8x slower when idle)."""

from __future__ import annotations

import math
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

SMALL_MODEL = 1_000_000  # parameters
SMALL_MODEL_THREADS = 4
USER_SETTINGS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")  # either set: the user chose, grpo-trl leaves threads alone
WAIT_SETTINGS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")  # either set: the user chose the wait policy
BUSY_CORES = 0.5  # other work using this many cores at start: passive wait (spinning threads starve beside it)
_PASSIVE_SET: list[bool] = []  # wait_policy set OMP_WAIT_POLICY (not the user)


def choose_threads(cores: int, params: int | None) -> int:
    """Torch threads to start with for a model of ``params`` parameters on ``cores`` cores."""
    return max(1, min(cores, SMALL_MODEL_THREADS if params is not None and params < SMALL_MODEL else cores))


def busy_cores(seconds: float = 0.2) -> float:
    """Cores that other processes kept busy over the next ``seconds`` (psutil: iowait counts as idle)."""
    import psutil

    return psutil.cpu_percent(interval=seconds) / 100 * (psutil.cpu_count() or 1)


class ThreadTuner:
    """Times each training unit (the steps between two generations) at the kept thread count, and now and then one
    at a neighbour (half, double); keeps the faster. A neighbour that lost by ``r`` waits ``(r - 1) / budget`` units
    (at least ``every``), so probing costs at most about ``budget`` of the run per neighbour; a unit twice as slow as
    the kept count's median times the neighbours at once (other work started)."""

    def __init__(self, threads: int, cores: int, every: int = 20, budget: float = 0.03, margin: float = 0.08,
                 clock: Callable[[], float] = time.perf_counter) -> None:  # fmt: skip
        self.best, self.cores, self.clock = threads, cores, clock
        self.every, self.budget, self.margin = every, budget, margin
        self.unit, self.index, self.trying, self.start = 1, 0, threads, None
        self.times: list[float] = []  # the latest unit times at ``best``
        self.due: dict[int, int] = {}  # neighbour -> the unit index of its next probe
        self.line = ""

    def __getattr__(self, name: str) -> Any:  # a TrainerCallback without importing transformers (it loads torch)
        if name.startswith("on_"):
            return lambda *args, **kwargs: None
        raise AttributeError(name)

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        every = (getattr(args, "steps_per_generation", None) or 1) * (getattr(args, "num_iterations", None) or 1)
        self.unit = every // math.gcd(every, max(1, args.gradient_accumulation_steps))  # generation-aligned units

    def neighbours(self) -> list[int]:
        return sorted({max(1, self.best // 2), min(self.cores, self.best * 2)} - {self.best})

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.global_step % self.unit:
            return
        import torch

        due = [n for n in self.neighbours() if self.times and self.due.setdefault(n, self.index) <= self.index]
        self.trying = due[0] if due else self.best
        if torch.get_num_threads() != self.trying:  # OpenMP's team is rebuilt only when the count changes
            torch.set_num_threads(self.trying)
        self.start = self.clock()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.global_step % self.unit or self.start is None:
            return
        elapsed, self.start = self.clock() - self.start, None
        self.index += 1
        if self.index == 1:  # the first unit warms caches up: not timed
            return
        if self.trying == self.best:
            if len(self.times) >= 3 and elapsed > 2 * statistics.median(self.times):  # the machine changed: time now
                self.due, self.times = {n: self.index for n in self.due}, []
            self.times = [*self.times[-4:], elapsed]
            return
        ratio = elapsed / statistics.median(self.times)
        if ratio < 1 - self.margin:  # faster: keep it, and time the one it replaces again soon (one unit may be luck)
            self.due = {self.best: self.index + 1}
            self.best, self.times = self.trying, [elapsed]
        else:
            self.due[self.trying] = self.index + max(self.every, math.ceil((ratio - 1) / self.budget))


def wait_policy() -> float:
    """Before torch loads (it reads the policy then): OpenMP's passive wait when other work keeps ``BUSY_CORES`` busy,
    unless the user set threads or a wait policy, or a GPU driver is there. Returns the busy cores measured."""
    busy = busy_cores()
    chosen = any(os.environ.get(name) for name in (*USER_SETTINGS, *WAIT_SETTINGS))
    gpu = any(os.path.exists(p) for p in ("/proc/driver/nvidia", "/dev/kfd"))
    if busy >= BUSY_CORES and not chosen and not gpu and "torch" not in sys.modules:
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
        _PASSIVE_SET.append(True)
    return busy


def set_cpu_threads(model: dict, gpu_allowed: bool, busy: float = 0.0) -> ThreadTuner | None:
    """On CPU (no CUDA, or not ``gpu_allowed``) with no thread setting in the environment: set torch's threads and
    return the ``ThreadTuner`` for training, its ``line`` saying what was chosen (``busy``: ``wait_policy``'s)."""
    import torch

    from grpo_trl.models.shape import load_shape

    if (gpu_allowed and torch.cuda.is_available()) or any(os.environ.get(name) for name in USER_SETTINGS):
        return None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    cores = max(1, cores // max(1, int(os.environ.get("LOCAL_WORLD_SIZE") or 1)))  # processes on this machine share
    try:
        params = load_shape(model["name"], model.get("tiny")).params()[0]  # from the model's config alone
    except Exception:  # noqa: BLE001 - not in the local cache, an unusual config: no size cap
        params = None
    builtin = params is None and str(model.get("name", "")).startswith("builtin:")  # every built-in model is tiny
    threads = choose_threads(cores, SMALL_MODEL - 1 if builtin else params)
    os.environ["OMP_NUM_THREADS"] = str(threads)  # the processes it starts (reward pools, sandboxes) alike
    torch.set_num_threads(threads)
    size = f"{params / 1e6:.1f}M-parameter model, " if params else "a built-in tiny model, " if builtin else ""
    wait = ", passive OpenMP wait" if _PASSIVE_SET else ""
    tuner = ThreadTuner(threads, cores)
    tuner.line = (
        f"grpo-trl: CPU: {threads} torch thread{'s' * (threads > 1)}{wait} ({size}{cores} cores, {busy:.1f} busy "
        "with other work); set OMP_NUM_THREADS to choose"
    )
    return tuner
