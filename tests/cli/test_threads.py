"""CPU threads when the user set none: the start value, OpenMP's wait policy, and ``ThreadTuner`` keeping the fastest
thread count during training (bench/threads.py measures it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_trl.cli.threads import SMALL_MODEL, SMALL_MODEL_THREADS, ThreadTuner, choose_threads, set_cpu_threads

ROOT = Path(__file__).resolve().parents[2]


@given(cores=st.integers(1, 512), params=st.one_of(st.none(), st.integers(0, 10**12)))
def test_the_start_value_is_every_core_and_few_for_small_models(cores, params):
    threads = choose_threads(cores, params)
    assert 1 <= threads <= cores
    if params is not None and params < SMALL_MODEL:
        assert threads == min(cores, SMALL_MODEL_THREADS)
    else:
        assert threads == cores


def _train(tuner: ThreadTuner, cost: dict[int, float], units: int, steps_per_unit: int = 1) -> float:
    """Drive ``tuner`` as a Trainer would, each unit costing ``cost[threads]`` seconds on its clock; the total."""
    import torch

    now = [0.0]
    tuner.clock = lambda: now[0]
    args = SimpleNamespace(steps_per_generation=steps_per_unit, num_iterations=1, gradient_accumulation_steps=1)
    tuner.on_train_begin(args, None, None)
    state = SimpleNamespace(global_step=0)
    for _ in range(units * steps_per_unit):
        tuner.on_step_begin(args, state, None)
        if state.global_step % steps_per_unit == 0:
            now[0] += cost[torch.get_num_threads()]
        state.global_step += 1
        tuner.on_step_end(args, state, None)
    return now[0]


@settings(deadline=None)
@given(cost=st.lists(st.floats(0.05, 20), min_size=4, max_size=4), start=st.sampled_from([1, 2, 4, 8]))
def test_the_tuner_keeps_the_fastest_thread_count_and_probing_costs_little(cost, start):
    import torch

    before = torch.get_num_threads()
    cost = dict(zip([1, 2, 4, 8], sorted(cost)[::-1]))  # more threads faster (a lone minimum: hill climbing finds it)
    try:
        tuner = ThreadTuner(start, 8)
        total = _train(tuner, cost, 300)
    finally:
        torch.set_num_threads(before)
    times = list(cost.values())
    if all(b < a * (1 - tuner.margin) for a, b in zip(times, times[1:])):  # each doubling clearly faster
        assert tuner.best == 8
    assert all(cost[n] >= cost[tuner.best] * (1 - tuner.margin) for n in tuner.neighbours())  # none clearly faster
    # the climb (at most 3 moves, each a few units at the slower count), then probes at most 2 x budget of the run
    assert total <= 300 * cost[tuner.best] * (1 + 2 * tuner.budget) + 12 * max(cost.values())


@pytest.mark.parametrize(("fast", "start"), [(1, 2), (2, 1)])
def test_the_tuner_leaves_a_count_ten_times_slower_after_one_unit_and_comes_back_rarely(fast, start):
    """The 2-core machine beside other work: 2 threads ran 10-24x slower than 1 (bench/threads.py), or idle the
    other way round."""
    import torch

    before = torch.get_num_threads()
    cost = {fast: 1.0, 3 - fast: 10.0}
    try:
        tuner = ThreadTuner(start, 2)
        total = _train(tuner, cost, 200, steps_per_unit=2)  # two optimizer steps between generations
    finally:
        torch.set_num_threads(before)
    assert tuner.best == fast
    assert total < 1.15 * 200  # the first units at the slow count and the rare probes included


@pytest.mark.parametrize("user_setting", [None, "OMP_NUM_THREADS", "MKL_NUM_THREADS"])
def test_cpu_threads_are_chosen_and_said_once_only_when_the_user_set_none(monkeypatch, user_setting):
    import torch

    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    if user_setting:
        monkeypatch.setenv(user_setting, "3")
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(7)
        tuner = set_cpu_threads({"name": "builtin:tiny"}, gpu_allowed=False)
        if user_setting:
            assert tuner is None and torch.get_num_threads() == 7  # the user's choice stands
        else:
            expected = choose_threads(len(os.sched_getaffinity(0)), 99_000)
            assert torch.get_num_threads() == expected == tuner.best and os.environ["OMP_NUM_THREADS"] == str(expected)
            assert tuner.line.startswith(f"grpo-trl: CPU: {expected} torch thread") and "OMP_NUM_THREADS" in tuner.line
            assert "\n" not in tuner.line and "passive" not in tuner.line  # torch was loaded: too late for the policy
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        assert set_cpu_threads({"name": "builtin:tiny"}, gpu_allowed=True) is None  # GPU runs: torch's default
    finally:
        torch.set_num_threads(before)


@pytest.mark.slow
@pytest.mark.parametrize("busy", [0.0])  # busy: test_train_beside_other_work_says_passive_wait_once_and_trains
def test_a_busy_machine_gets_passive_wait_before_torch_loads(busy):
    """Spinning OpenMP threads beside other work ran 14-24x slower than passive ones; idle, passive ran 1.8x slower."""
    code = (
        "import os, sys, grpo_trl.cli.threads as t\n"
        f"t.busy_cores = lambda: {busy}\n"
        "tuner = t.set_cpu_threads({'name': 'builtin:tiny'}, gpu_allowed=False, busy=t.wait_policy())\n"
        "print(os.environ.get('OMP_WAIT_POLICY'), 'passive' in tuner.line, 'torch' in sys.modules)\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OMP_WAIT_POLICY")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    policy, said, loaded = out.stdout.split()
    assert loaded == "True"  # torch loaded after the policy was set (it reads it then)
    assert (policy, said) == (("PASSIVE", "True") if busy else ("None", "False"))


@pytest.mark.slow
def test_train_beside_other_work_says_passive_wait_once_and_trains(tmp_path):
    """The CLI end to end: the policy is set before anything loads torch, the line is printed once, and the tuner
    runs as a Trainer callback (3 steps: the third a probe of 1 thread on the 2-core machine)."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OMP_WAIT_POLICY")}
    sets = ["trainer.max_steps=3", f"trainer.output_dir={tmp_path / 'out'}", "trainer.save_strategy=no"]
    cmd = [
        sys.executable,
        "-m",
        "grpo_trl.cli",
        "train",
        "recipes/demo/tiny-cpu.yaml",
        *sum((["--set", s] for s in sets), []),
    ]
    # one spinning process is a core's worth of other work (BUSY_CORES is 0.5): a second only took CPU from the suite.
    # It spins until the CPU line is out (the policy was chosen at start, before torch): not through the training
    log = (tmp_path / "stderr.txt").open("w")  # a file: a pipe not read while stdout is could fill and block
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
    try:
        train = subprocess.Popen(cmd, cwd=ROOT, env={**env, "PYTHONUNBUFFERED": "1"}, stdout=subprocess.PIPE,
                                 stderr=log, text=True)  # fmt: skip
        first = []
        for line in train.stdout:
            first.append(line)
            if line.startswith("grpo-trl: CPU:"):
                break
        spin.kill()
        stdout, _ = train.communicate(timeout=600)
    finally:
        spin.kill()
        spin.wait()
        log.close()
    assert train.returncode == 0, (tmp_path / "stderr.txt").read_text()[-2000:]
    lines = [ln for ln in ("".join(first) + stdout).splitlines() if ln.startswith("grpo-trl: CPU:")]
    assert len(lines) == 1 and "passive OpenMP wait" in lines[0] and "set OMP_NUM_THREADS to choose" in lines[0]


def test_busy_cores_reads_other_work():
    from grpo_trl.cli.threads import busy_cores

    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        assert busy_cores(0.5) >= 0.5  # one spinning process: at least half a core busy however idle the rest
    finally:
        spin.kill()
        spin.wait()


def test_the_tuner_moves_as_soon_as_other_work_starts():
    """Idle, 2 threads beat 1 (0.29 vs 0.37 s); then other work starts and 2 threads take 15 s, 1 thread 1.5 s."""
    import torch

    before = torch.get_num_threads()
    idle, busy = {1: 0.37, 2: 0.29}, {1: 1.5, 2: 15.0}
    try:
        tuner = ThreadTuner(2, 2)
        _train(tuner, idle, 100)
        assert tuner.best == 2
        index = tuner.index
        _train(tuner, busy, 5)
        assert tuner.best == 1 and tuner.index - index <= 5  # not 20 units of 15 s waiting for the next probe
    finally:
        torch.set_num_threads(before)


def test_the_tuner_sets_torchs_threads_only_when_the_count_changes(monkeypatch):
    """Setting the same count every step rebuilt OpenMP's team: grpo-trl's choice ran 1.14x torch's default idle,
    1.04x once it set threads only on a change (bench/threads.py --idle, 2 cores)."""
    import torch

    before, calls = torch.get_num_threads(), []
    real = torch.set_num_threads
    monkeypatch.setattr(torch, "set_num_threads", lambda n: (calls.append(n), real(n)))
    try:
        tuner = ThreadTuner(2, 2)
        _train(tuner, {1: 2.0, 2: 1.0}, 100)
    finally:
        real(before)
    assert tuner.best == 2
    probes = sum(1 for a, b in zip([before, *calls], calls) if a != b)
    assert len(calls) == probes <= 12  # each call a change: to the probed count and back, a few times in 100 units
