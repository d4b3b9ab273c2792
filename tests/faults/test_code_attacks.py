"""Hostile completions through the ``code_tests`` reward: each scores 0, is cut within its limits, and leaves the
training process unharmed (the sandbox's own attacks are in test_sandbox_attacks.py)."""

from __future__ import annotations

import os
import time

import pytest

from grpo_trl.rewards import get_reward

TESTS = {"test_list": [["assert f() == 1"]]}
ATTACKS = {
    "infinite_loop": "def f():\n    while True:\n        pass",
    "fork_loop": "import os\nfor _ in range(200):\n    try:\n        os.fork()\n    except OSError:\n        break\n"
    "def f(): return 0",
    "ten_gb": "x = bytearray(10 * 1024**3)\ndef f(): return 1",
    "print_flood": "import sys\nfor _ in range(1024):\n    sys.stdout.write('x' * (1 << 20))\ndef f(): return 1",
    "exit_early": "import sys\nsys.exit(0)\ndef f(): return 1",
    "kill_parent": "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\ndef f(): return 0",
    "secrets": "import os\nassert 'GRPO_TRL_TEST_SECRET' not in os.environ\ndef f(): return 0",
}


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_attack_scores_zero_and_is_contained(name, monkeypatch):
    monkeypatch.setenv("GRPO_TRL_TEST_SECRET", "s3cr3t")
    if name == "kill_parent" and os.geteuid() != 0:
        pytest.skip("not root: the run keeps this user's uid and could signal this process (README says so)")
    reward = get_reward("code_tests", timeout=2.0, memory_mb=256)
    start = time.monotonic()
    assert reward([f"```python\n{ATTACKS[name]}\n```"], **TESTS) == [0.0]
    assert time.monotonic() - start < 10
    os.kill(os.getpid(), 0)  # still here
