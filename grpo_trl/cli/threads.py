"""Torch's CPU threads for ``train`` and ``eval`` when the user set none: one per core the rest of the machine leaves
free (its 1-minute load average), at most 4 for a model under a million parameters. Why: bench/threads.py (torch's
default of one thread per core ran 10x slower beside other work; a small model gains nothing past 4 threads)."""

from __future__ import annotations

import math
import os
from typing import Any

SMALL_MODEL = 1_000_000  # parameters
SMALL_MODEL_THREADS = 4
USER_SETTINGS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")  # either set: the user chose, grpo-trl leaves threads alone


def choose_threads(cores: int, load: float, params: int | None) -> int:
    """Threads for ``params`` on ``cores`` cores when other work keeps ``load`` of them busy (1-minute load average).

    >>> choose_threads(2, 0.1, 100_000), choose_threads(2, 8.0, 100_000), choose_threads(16, 0.0, 100_000)
    (2, 1, 4)
    >>> choose_threads(16, 3.2, 25_000_000), choose_threads(16, 3.2, None)
    (13, 13)
    """
    free = math.floor(cores - max(0.0, load) + 0.5)
    cap = SMALL_MODEL_THREADS if params is not None and params < SMALL_MODEL else cores
    return max(1, min(cores, cap, free))


def model_params(model: dict) -> int | None:
    """The recipe model's parameter count from its config alone, or None when unknown."""
    from grpo_trl.models.shape import load_shape

    try:
        return load_shape(model["name"], model.get("tiny")).params()[0]
    except Exception:  # noqa: BLE001 - not in the local cache, an unusual config: no size cap
        return None


def set_cpu_threads(model: dict, on_gpu: bool) -> str | None:
    """On CPU, with no thread setting in the environment: set torch's threads and return the line that says so."""
    if on_gpu or any(os.environ.get(name) for name in USER_SETTINGS):
        return None
    import torch

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    cores = max(1, cores // max(1, int(os.environ.get("LOCAL_WORLD_SIZE") or 1)))  # processes on this machine share
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    params = model_params(model)
    builtin = params is None and str(model.get("name", "")).startswith("builtin:")  # every built-in model is tiny
    threads = choose_threads(cores, load, SMALL_MODEL - 1 if builtin else params)
    torch.set_num_threads(threads)
    os.environ["OMP_NUM_THREADS"] = str(threads)  # the processes it starts (reward pools, sandboxes) alike
    size = f"{params / 1e6:.1f}M-parameter model, " if params else "a built-in tiny model, " if builtin else ""
    return (
        f"grpo-trl: CPU: {threads} torch thread{'s' * (threads > 1)} ({size}{cores} cores, load {load:.1f}); "
        "set OMP_NUM_THREADS to choose"
    )


def cpu_threads_line(recipe: Any, *, gpu_allowed: bool) -> str | None:
    """``set_cpu_threads`` for a recipe: on GPU when CUDA is there and ``gpu_allowed`` (train: not ``use_cpu``)."""
    import torch

    return set_cpu_threads(recipe.model, on_gpu=gpu_allowed and torch.cuda.is_available())
