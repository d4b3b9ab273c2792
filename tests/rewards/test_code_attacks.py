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

pytestmark = pytest.mark.fault

TESTS = {"test_list": [["assert f() == 1"]]}
ATTACKS = {
    "infinite_loop": "def f():\n    while True:\n        pass",
    "fork_loop": "import os\nfor _ in range(200):\n    try:\n        os.fork()\n    except OSError:\n        break\n"
    "def f(): return 0",
    "ten_gb": "x = bytearray(10 * 1024**3)\ndef f(): return 1",
    "print_flood": "import sys\nwhile True:\n    sys.stdout.write('x' * (1 << 20))\ndef f(): return 1",
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


# Issue 27: the token and the compiled tests live in the harness's frame and the process's memory; a wrong solution
# reaching them through frames, gc, tracing, audit hooks, ctypes, /proc or the stdin file must score 0, and a right
# one written in ordinary Python must still score 1.0 under the harness's audit hook.
FORGE = """
import os
def _forge(f):
    while f is not None:
        t = f.f_locals.get("token")
        if isinstance(t, bytes):
            os.write(f.f_locals["out"], b"".join(b"\\n" + t + b":%d\\n" % i for i in range(3)))
        f = f.f_back
def _print(t):
    os.write(1, b"".join(b"\\n" + t + b":%d\\n" % i for i in range(3)))
"""
REACHES = {
    "getframe": "import sys\n_forge(sys._getframe())",
    "inspect_currentframe": "import inspect\n_forge(inspect.currentframe())",
    "inspect_stack": "import inspect\n_forge(inspect.stack()[0].frame)",
    "tb_frame": "try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    _forge(e.__traceback__.tb_frame)",
    "gi_frame": "def _g():\n    _forge(_me.gi_frame)\n    yield\n_me = _g()\nnext(_me)",
    "current_frames": "import sys, threading\n_forge(sys._current_frames()[threading.get_ident()])",
    "settrace": "import sys\nsys.settrace(lambda f, e, a: _forge(f))",
    "setprofile": "import sys\nsys.setprofile(lambda f, e, a: _forge(f))",
    # a signal handler is handed the frame running when the signal arrives (no audit event)
    "signal_handler": "import sys\n_s = sys.modules['_signal']\n_s.signal(_s.SIGUSR1, lambda n, f: _forge(f))\n"
    "def add(a, b):\n    os.kill(os.getpid(), _s.SIGUSR1)\n    return -1",
    # finished frames kept by gc.garbage under DEBUG_SAVEALL: their f_back leads to the callers
    "gc_garbage_frames": "import gc, types\ngc.set_debug(gc.DEBUG_SAVEALL)\ndef _helper():\n    try:\n"
    "        raise ValueError\n    except ValueError as e:\n        keep = e\ndef add(a, b):\n    _helper()\n"
    "    gc.collect()\n    for o in gc.garbage:\n        if type(o) is types.FrameType:\n            _forge(o)\n"
    "    return -1",
    "gc_rewrites_tests": "import gc\nfor o in gc.get_objects():\n"
    "    if type(o) is list and o and all(type(c).__name__ == 'code' for c in o):\n"
    "        o[:] = [compile('pass', 't', 'exec')] * len(o)",
    "stdin_seek": "os.lseek(0, 0, 0)\n_print(os.read(0, 64).strip())",
    "atexit_stdin": "import atexit\natexit.register(lambda: (os.lseek(0, 0, 0), _print(os.read(0, 64).strip())))",
    # a hook of the solution's own sees each test's code object before it runs: answer from its constants
    "audit_hook_peeks": "import sys\n_want = []\nsys.addaudithook(lambda e, a: e == 'exec' and _want.append("
    "[k for k in a[0].co_consts if type(k) is int][-1]))\ndef add(a, b):\n    return _want[-1]",
}


# Steps on the way to the token (memory, raw frames, a process outside the hook): each is refused, so a solution
# that is right only once the step succeeds scores 0.
STEPS = {
    "walk_stack": "import traceback\nlist(traceback.walk_stack(None))",
    "gc_referrers": "import gc\ngc.get_referrers(compile)",
    "gc_referents": "import gc\ngc.get_referents(globals())",
    "proc_maps": "open('/proc/self/maps').read()",
    "proc_pid": "open('/proc/%d/cmdline' % os.getpid(), 'rb').read()",
    "proc_bytes_path": "open(b'/proc/self/status', 'rb').read()",
    "proc_str_subclass": "class S(str):\n    def split(self, *a):\n        return []\n"
    "open(S('/proc/self/status')).read()",
    "proc_relative": "os.chdir('/proc/self')\nopen('status').read()",
    "dev_fd_dotdot": "open('/dev/fd/../status').read()",
    "symlink_to_proc": "os.symlink('/proc/self/status', 'm')\nopen('m').read()",
    "ctypes_memory": "import ctypes\nctypes.string_at(id(_forge), 64)",
    "subprocess": "import subprocess\nsubprocess.run(['true'], check=True)",
    # starts a program (which could read this process's memory) without an audit event
    "posixsubprocess": "import _posixsubprocess",
    "os_exec_in_fork": "pid = os.fork()\nif pid == 0:\n    try:\n        os.execv('/bin/true', ['true'])\n"
    "    finally:\n        os._exit(1)\nassert os.waitpid(pid, 0)[1] == 0",
}


@pytest.mark.parametrize("name", sorted(STEPS))
def test_each_step_toward_the_token_is_refused(name):
    right_after = f"```python\n{FORGE}\n{STEPS[name]}\ndef add(a, b):\n    return a + b\n```"
    assert get_reward("code_tests", timeout=5.0)([right_after], **{"test_list": ADD_TESTS["test_list"][:1]}) == [0.0]


@pytest.mark.parametrize("name", sorted(REACHES))
def test_reaching_the_harness_token_or_tests_scores_a_wrong_solution_zero(name):
    wrong = f"```python\ndef add(a, b):\n    return -1\n{FORGE}\n{REACHES[name]}\n```"
    assert get_reward("code_tests", timeout=5.0)([wrong], **{"test_list": ADD_TESTS["test_list"][:1]}) == [0.0]


ORDINARY = """
import collections, dataclasses, enum, functools, inspect, itertools, json, math, re, typing
T = typing.TypeVar("T")
Point = collections.namedtuple("Point", "x y")
Color = enum.Enum("Color", "RED GREEN")
class Pair(typing.NamedTuple):
    a: int
    b: int
class Box(typing.Generic[T]):
    def __init__(self, v: T) -> None:
        self.v = v
@dataclasses.dataclass(frozen=True)
class Acc:
    total: int = 0
    parts: list = dataclasses.field(default_factory=list)
class Shape(enum.Enum):
    SQUARE = 1
def gen(n):
    yield from range(n)
@functools.lru_cache(maxsize=None)
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
def add(a: int, b: int) -> int:
    assert list(inspect.signature(add).parameters) == ["a", "b"]
    try:
        raise ValueError("x")
    except ValueError as e:
        assert str(e) == "x"
    p, q = Point(a, 0), Pair(0, b)
    total = sum(gen(3)) - 3 + fib(10) - 55 + Box(a).v - a + Acc(1).total - 1
    total += Color.RED.value - 1 + Shape.SQUARE.value - 1
    total += len(re.findall(r"\\d", "12")) - 2 + json.loads(json.dumps({"k": 0}))["k"] + math.floor(0.5)
    total += sum(collections.Counter("aa").values()) - 2 + len(list(itertools.chain([1], [2]))) - 2
    return total + p.x + q.b
"""


def test_a_right_solution_in_ordinary_python_still_scores_one_under_the_audit_hook():
    right = f"```python\n{ORDINARY}\n```"
    assert get_reward("code_tests", timeout=10.0)([right], **{"test_list": ADD_TESTS["test_list"][:1]}) == [1.0]
