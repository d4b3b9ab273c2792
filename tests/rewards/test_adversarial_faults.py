"""Adversarial pass: classes of input the earlier probes did not try, each of which broke a README promise.

- a timed reward whose answer raises a ``BaseException`` while it is pickled in the child (``__reduce__`` calling
  ``sys.exit``): the forked child returned into the trainer's code and went on as a second trainer;
- a timed reward that leaves a grandchild holding the answer pipe: its prompt answer was thrown away as a timeout;
- a trainer with more than 1,023 descriptors open: every timed reward scored None (``select`` refused the fd);
- math-verify: each hostile answer cost ``timeout`` + 30 s (a restarted worker's import allowance went to the item);
- gsm8k: a wrong value written with U+2212 minus, ``\\pm``, ``\\overline`` or ``\\neq`` scored as the gold's;
- a recipe or peer config that is a named pipe nothing writes to (``check``/``import`` waited forever),
  ``GRPO_TRL_CACHE`` naming a file (exit 70), a recipe read from ``/dev/stdin`` (its resolved name does not exist).
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grpo_trl.rewards.call import SafeReward
from grpo_trl.rewards.math import Accuracy, gsm8k

pytestmark = pytest.mark.fault  # a fault probe: `make faults` selects it

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-c", "import sys; from grpo_trl.cli import main; sys.exit(main())"]


class _ExitsOnSecondPickle:
    """Pickles once (the child's sendability check), then exits while the whole answer is pickled."""

    pickled = 0

    def __reduce__(self):
        type(self).pickled += 1
        if type(self).pickled > 1:
            raise SystemExit(4)
        return (float, (1.0,))


def _exits_while_pickled(**kwargs):
    return [_ExitsOnSecondPickle(), 1.0]


def _logs_what_exits_while_pickled(log_extra=None, **kwargs):
    class Bomb:
        def __reduce__(self):
            raise KeyboardInterrupt

    log_extra("x", [Bomb()])
    return [1.0, 1.0]


def _str_exits(**kwargs):
    class Odd(Exception):
        def __str__(self):
            raise SystemExit(1)

    raise Odd


@pytest.mark.parametrize("reward", [_exits_while_pickled, _logs_what_exits_while_pickled, _str_exits])
def test_a_timed_reward_child_never_returns_into_the_trainer(reward):
    me = os.getpid()
    out = SafeReward(reward, timeout=5)(prompts=["p"] * 2, completions=["c"] * 2, log_extra=lambda *a, **k: None)
    if os.getpid() != me:  # the child came back here: end it before it runs the rest of the test session
        os._exit(0)
    assert out == [None, None]


def _leaves_a_grandchild(**kwargs):
    if os.fork() == 0:  # holds the answer pipe's write end until it is killed
        time.sleep(30)
        os._exit(0)
    return [1.0, 0.5]


def test_a_grandchild_holding_the_pipe_does_not_turn_an_answer_into_a_timeout():
    reward = SafeReward(_leaves_a_grandchild, timeout=3)
    start = time.monotonic()
    assert reward(prompts=["p"] * 2, completions=["c"] * 2) == [1.0, 0.5]
    assert time.monotonic() - start < 2.5 and reward.faults == 0


def _constant(**kwargs):
    return [1.0, 1.0]


def test_a_timed_reward_works_with_descriptors_above_1023():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1100:
        pytest.skip("cannot open 1,100 descriptors here")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1100) if hard == resource.RLIM_INFINITY else hard, hard))
    fds = [os.open(os.devnull, os.O_RDONLY) for _ in range(1050)]
    try:
        assert SafeReward(_constant, timeout=5)(prompts=["p"] * 2, completions=["c"] * 2) == [1.0, 1.0]
    finally:
        for fd in fds:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.mark.slow
def test_each_hostile_answer_costs_its_timeout_not_the_import_allowance():
    acc = Accuracy(timeout=1.0, workers=1)
    acc.verifier.score([("72", "71")])  # the worker is up
    hostile = "{" * 1999  # math-verify does not return on it within 30 s
    for k in range(2):  # the second one meets a worker restarted after the first
        start = time.monotonic()
        assert acc([f"<answer>{hostile}{k}</answer>", "<answer>72</answer>"], ["72", "72"]) == [0.0, 1.0]
        assert time.monotonic() - start < 12  # timeout + a restart, not timeout + 30 s


@pytest.mark.parametrize("wrong", ["\u221272", "\\pm 72", "\\overline{72}", "71 \\neq 72", "72 \\ne 71"])
def test_gsm8k_does_not_score_a_wrong_value_as_the_gold(wrong):
    gold = "71" if "\\ne " in wrong else "72"
    assert gsm8k([f"<answer>{wrong}</answer>"], [gold]) == [0.0]


def test_gsm8k_reads_the_unicode_minus_as_a_minus():
    assert gsm8k(["<answer>\u221272</answer>"], ["-72"]) == [2.0]


def _cli(*args: str, env: dict | None = None, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*CLI, *args],
        capture_output=True,
        text=True,
        timeout=120,
        input=stdin,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )


def _one_error(proc: subprocess.CompletedProcess) -> str:
    lines = [line for line in proc.stderr.splitlines() + proc.stdout.splitlines() if line.strip()]
    assert proc.returncode == 1 and len(lines) == 1 and lines[0].startswith("error:"), (proc.returncode, lines)
    assert "Traceback" not in proc.stderr
    return lines[0]


@pytest.mark.parametrize("command", ["check", "import"])
def test_a_named_pipe_nothing_writes_to_is_one_error(tmp_path, command):
    fifo = tmp_path / "recipe.yaml"
    os.mkfifo(fifo)
    assert "named pipe" in _one_error(_cli(command, str(fifo)))


@pytest.mark.slow
def test_a_recipe_read_from_stdin_is_read():
    recipe = (ROOT / "recipes" / "demo" / "tiny-cpu.yaml").read_text()
    proc = _cli("check", "/dev/stdin", stdin=recipe)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "OK" in proc.stdout


@pytest.mark.slow
def test_grpo_trl_cache_naming_a_file_is_one_error(tmp_path):
    (tmp_path / "cache").write_text("not a folder")
    recipe = ROOT / "recipes" / "demo" / "tiny-cpu.yaml"
    line = _one_error(_cli("data", str(recipe), env={"GRPO_TRL_CACHE": str(tmp_path / "cache")}))
    assert "GRPO_TRL_CACHE" in line and "it is a file" in line


_KEYCTL = {"x86_64": (248, 250), "aarch64": (217, 219)}.get(os.uname().machine)
needs_keyrings = pytest.mark.skipif(
    _KEYCTL is None or not sys.platform.startswith("linux"), reason="keyring syscalls are probed on Linux x86_64/arm64"
)
_FIND = """import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
found = libc.syscall({keyctl}, 10, {ring}, b"user", b"{name}", 0)  # KEYCTL_SEARCH
if found > 0:
    buf = ctypes.create_string_buffer(64)
    print("READ", buf.raw[: libc.syscall({keyctl}, 11, found, buf, 64)])
else:
    print("none")
"""


def _add_key(name: bytes, ring: int) -> int:
    import ctypes

    add_key = _KEYCTL[0]
    return ctypes.CDLL(None, use_errno=True).syscall(add_key, b"user", name, b"secret-value", 12, ring)


@needs_keyrings
def test_a_sandboxed_run_cannot_read_or_plant_keys_in_grpo_trls_session_keyring():
    from grpo_trl.sandbox import run_python

    if _add_key(b"grpo-trl-adv-host", -3) < 0:  # KEY_SPEC_SESSION_KEYRING
        pytest.skip("no keyrings here")
    code = _FIND.format(keyctl=_KEYCTL[1], ring=-3, name="grpo-trl-adv-host")
    code += f"print(libc.syscall({_KEYCTL[0]}, b'user', b'grpo-trl-adv-planted', b'x', 1, -3) > 0)\n"
    result = run_python(code)
    assert result.ok and "READ" not in result.stdout and "none" in result.stdout, result.stdout + result.stderr
    import ctypes

    planted = ctypes.CDLL(None).syscall(_KEYCTL[1], 10, -3, b"user", b"grpo-trl-adv-planted", 0)
    assert planted < 0


@needs_keyrings
@pytest.mark.skipif(os.geteuid() != 0, reason="per-run uids only under root")
def test_keys_a_run_leaves_in_its_uids_keyring_do_not_reach_a_later_run():
    from grpo_trl.sandbox import run_python

    plant = f"import ctypes\nprint(ctypes.CDLL(None).syscall({_KEYCTL[0]}, b'user', b'left', b'from-run-1', 10, -4))"
    find = _FIND.format(keyctl=_KEYCTL[1], ring=-4, name="left")
    for _ in range(3):  # the uid slot is reused: the next run on it must not see the key
        assert int(run_python(plant).stdout) != 0
        result = run_python(find)
        assert result.ok and "READ" not in result.stdout, result.stdout


def _lowers_the_recursion_limit(completions, **kwargs):
    sys.setrecursionlimit(60)
    return [1.0] * len(completions)


def _replaces_print_and_open(completions, **kwargs):
    import builtins

    builtins.print = builtins.open = None
    del builtins.len
    return [1.0] * 2


def _closes_fd_1(completions, **kwargs):
    os.close(1)
    return [1.0] * len(completions)


@pytest.mark.parametrize("reward", [_lowers_the_recursion_limit, _replaces_print_and_open, _closes_fd_1])
def test_what_an_in_process_reward_breaks_in_the_process_is_put_back(reward, capfd):
    import builtins

    limit, before = sys.getrecursionlimit(), dict(vars(builtins))
    out = SafeReward(reward)(prompts=["p"] * 2, completions=["c"] * 2)
    assert out == [1.0, 1.0]
    assert sys.getrecursionlimit() == limit
    assert all(vars(builtins).get(k) is v for k, v in before.items())
    os.write(1, b"fd 1 still writes\n")
    assert "fd 1 still writes" in capfd.readouterr().out


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["recursion", "print", "fd1"])
def test_a_training_run_survives_a_reward_that_breaks_the_process(tmp_path, mode):
    (tmp_path / "plug.py").write_text(
        "import builtins, os, sys\n"
        "def nasty(completions, **kwargs):\n"
        f"    mode = {mode!r}\n"
        "    if mode == 'recursion':\n        sys.setrecursionlimit(60)\n"
        "    elif mode == 'print':\n        builtins.print = None\n"
        "    else:\n        os.close(1)\n"
        "    return [0.0] * len(completions)\n"
    )
    (tmp_path / "r.yaml").write_text(
        "model: {name: builtin:tiny, dtype: float32}\n"
        "data: {builder: countdown, source: generate, size: 40, system_prompt: r1}\n"
        "plugins: [plug.py]\nrewards: [{name: 'plug:nasty'}]\n"
        "trainer: {output_dir: out, max_steps: 2, num_generations: 4, per_device_train_batch_size: 4,"
        " max_completion_length: 8, report_to: none, save_strategy: 'no', use_cpu: true}\n"
    )
    proc = subprocess.run(
        [*CLI, "train", str(tmp_path / "r.yaml")],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT), "GRPO_TRL_CACHE": str(tmp_path / "cache")},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "put back" in proc.stderr and "Traceback" not in proc.stderr


def test_code_tests_solution_cannot_read_its_tests_from_the_harness_file():
    from grpo_trl.rewards.code import CodeTests

    tests = {"asserts": ["assert f(2) == 4", "assert f(3) == 9", "assert f(0) == 0"]}
    lookup = (
        "import re\n"
        "T = {int(a): int(b) for a, b in re.findall(r'f\\((\\d+)\\) == (\\d+)', open('main.py').read())}\n"
        "def f(x):\n    return T.get(x, -1)\n"
    )
    right = "def f(x):\n    return x * x\n"
    out = CodeTests(timeout=10)([f"```python\n{lookup}```", f"```python\n{right}```"], tests=[tests, tests])
    assert out == [0.0, 1.0]
