"""Hostile completions through the ``code_tests`` reward: each scores 0, is cut within its limits, and leaves the
training process unharmed (the sandbox's own attacks are in test_sandbox_attacks.py)."""

from __future__ import annotations

import builtins
import os
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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


# Issue 20: the solution shares its process with the harness and patches what the harness might use. A wrong
# solution (add returns -1) must score 0 whatever it patches; a right one stays in [0, 1].
ADD_TESTS = {"test_list": [["assert add(1, 2) == 3", "assert add(0, 0) == 0", "assert add(5, 1) == 6"]] * 2}
PATCHES = {
    "exec": "import builtins\nbuiltins.exec = lambda *a, **k: None",
    "eval": "import builtins\nbuiltins.eval = lambda *a, **k: True",
    "compile": "import builtins\nbuiltins.compile = lambda *a, **k: compile('pass', 's', 'exec')",
    "enumerate": "import builtins\nbuiltins.enumerate = lambda x: ((i, 'pass') for i in range(100))",
    "len": "import builtins\nbuiltins.len = lambda x: 10**6",
    "range": "import builtins, itertools\nbuiltins.range = lambda *a: itertools.count()",
    "print": "import builtins\nbuiltins.print = lambda *a, **k: None",
    "open": "import builtins, io\nbuiltins.open = lambda *a, **k: io.StringIO('pass')",
    "import": "import builtins\nbuiltins.__import__ = lambda *a, **k: None",
    "exceptions": "import builtins\nbuiltins.BaseException = builtins.Exception = builtins.AssertionError = KeyError",
    "types": "import builtins\nbuiltins.str = builtins.int = builtins.dict = builtins.bool = lambda *a: 1",
    "builtins_cleared": "import builtins\nbuiltins.__dict__.clear()",
    "own_builtins": "__builtins__ = {'__import__': __import__, 'len': lambda x: 3}",
    "sys_exit": "import sys\nsys.exit = lambda *a: None",
    "os_exit": "import os\nos._exit = lambda *a: None",
    "os_write": "import os\nos.write = lambda fd, data: len(data)",
    "sys_stdout": "import sys, io\nsys.stdout = io.StringIO()",
    "fd_1_redirected": "import os\nos.dup2(os.open('/dev/null', os.O_WRONLY), 1)",
    "json_dumps": "import json\njson.dumps = lambda *a, **k: '[0, 1, 2]'",
    "sys_modules": "import sys\nsys.modules.clear()",
    "fork": "import os\nos.fork()",
    "token_from_stdin": "import sys\nt = sys.stdin.read().strip()\nprint(*(f'{t}:{i}' for i in range(3)), sep='\\n')",
    "token_from_main": "import re\nfor t in set(re.findall('[0-9a-f]{32}', open('main.py').read())):\n"
    "    print(*(f'\\n{t}:{i}' for i in range(3)))",
    "guessed_lines": "print('\\n' + '0' * 32 + ':0\\n:1\\n:2\\n0:0')",
}


def _solution(patch: str, right: bool) -> str:
    body = "return a + b" if right else "return -1"
    return f"```python\n{patch}\ndef add(a, b):\n    {body}\n```"


@pytest.mark.parametrize("name", sorted(PATCHES))
def test_patching_what_the_harness_uses_scores_a_wrong_solution_zero(name):
    reward = get_reward("code_tests", timeout=5.0)
    wrong, right = reward([_solution(PATCHES[name], False), _solution(PATCHES[name], True)], **ADD_TESTS)
    assert wrong == 0.0
    assert 0.0 <= right <= 1.0


BUILTIN_NAMES = sorted(builtins.__dict__)
HARNESS_LIKE = "exec compile enumerate len range print open __import__ BaseException Exception dict str int".split()
HARNESS_LIKE += "isinstance iter next zip set vars write _exit exit stdout modules dup read".split()
REPLACEMENTS = [
    "None",
    "0",
    "True",
    "lambda *a, **k: None",
    "lambda *a, **k: True",
    "lambda *a, **k: iter(range(50))",
    "lambda *a, **k: ((i, 'pass') for i in range(50))",
    "lambda *a, **k: 10**6",
    "type('Eq', (), {'__eq__': lambda s, o: True, '__call__': lambda s, *a, **k: s})()",
]


PATCH_SETS = st.lists(
    st.tuples(st.sampled_from(HARNESS_LIKE) | st.sampled_from(BUILTIN_NAMES), st.sampled_from(REPLACEMENTS)),
    min_size=1,
    max_size=6,
)


@pytest.mark.slow
@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=os.environ.get("GRPO_TRL_FUZZ_RANDOM") is None,
)
@given(st.lists(st.tuples(PATCH_SETS, st.sampled_from(["builtins", "os", "sys"])), min_size=8, max_size=8))
def test_any_patched_builtins_leave_scores_in_range_and_wrong_solutions_at_zero(programs):
    """Eight solutions per example, each patching up to six names of builtins, os or sys (harness-like names
    first) with values shaped to keep a harness running (no-op callables, iterators of pairs, always-equal)."""
    texts = []
    for patches, module in programs:
        lines = [f"import builtins, os, sys\n_m = {module}"]
        lines += [f"try:\n    setattr(_m, {name!r}, {value})\nexcept Exception:\n    pass" for name, value in patches]
        texts += [_solution("\n".join(lines), False), _solution("\n".join(lines), True)]
    scores = get_reward("code_tests", timeout=5.0)(texts, test_list=ADD_TESTS["test_list"][:1] * len(texts))
    assert scores[::2] == [0.0] * len(programs)  # the wrong ones
    assert all(0.0 <= s <= 1.0 for s in scores[1::2])
