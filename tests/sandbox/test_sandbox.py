"""The sandbox's API: inputs, files, results, and every malformed call (attacks are in tests/faults)."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import grpo_trl.sandbox as sandbox
from grpo_trl.sandbox import Limits, Result, run_many, run_python


def test_stdin_files_and_exit_codes():
    r = run_python(
        "import helper, sys\nprint(helper.double(int(sys.stdin.read())))\nprint(open('data/x.txt').read())",
        stdin="21",
        files={"helper.py": "def double(x):\n    return 2 * x\n", "data/x.txt": "payload"},
    )
    assert r.ok and r.stdout == "42\npayload\n" and r.stderr == ""
    failed = run_python("raise SystemExit(3)")
    assert failed.returncode == 3 and not failed.ok and not failed.timed_out
    err = run_python("1/0")
    assert err.returncode == 1 and "ZeroDivisionError" in err.stderr and 'File "main.py", line 1' in err.stderr


def test_result_ok_property():
    assert Result(0, "", "", False, False, 0.1).ok
    assert not Result(0, "", "", True, False, 0.1).ok
    assert not Result(1, "", "", False, False, 0.1).ok
    assert not Result(None, "", "", True, False, 0.1).ok


@pytest.mark.parametrize("name", ["/etc/passwd", "../x.py", "a/../../x", "main.py", ""])
def test_file_names_must_stay_inside_the_run_directory(name):
    with pytest.raises(ValueError, match="relative path inside the run directory"):
        run_python("pass", files={name: "x"})


def test_syntax_errors_and_undecodable_code_fail_cleanly():
    assert "SyntaxError" in run_python("def (:").stderr
    r = run_python("print('\ud800')")  # a lone surrogate cannot be printed as UTF-8
    assert not r.ok


@settings(max_examples=15, deadline=None)
@given(st.text(max_size=200))
def test_any_text_round_trips_through_stdin(text):
    text = text.encode("utf-8", "replace").decode("utf-8")  # what a str can carry over a pipe
    r = run_python("import sys\nsys.stdout.write(sys.stdin.read())", stdin=text)
    assert r.ok and r.stdout == text.replace("\r\n", "\n").replace("\r", "\n") or r.stdout == text


def test_run_many_shapes():
    assert run_many([], max_workers=2) == []
    with pytest.raises(ValueError, match="max_workers"):
        run_many([{"code": "pass"}], max_workers=0)
    rs = run_many([{"code": "print(1)"}, {"code": "import sys; sys.exit(2)"}], max_workers=4)
    assert [r.returncode for r in rs] == [0, 2]
    with pytest.raises(TypeError):
        run_many([{"code": "pass", "bogus": 1}], max_workers=1)


def test_limits_are_frozen():
    with pytest.raises(AttributeError):
        Limits().cpu_seconds = 100  # type: ignore[misc]


def test_runs_are_forked_from_one_fork_server_started_again_when_it_dies():
    assert run_python("pass").ok
    server = sandbox._server[0]
    assert run_python("pass").ok and sandbox._server[0] is server  # no interpreter start per run
    server.kill()
    server.wait()
    r = run_python("print(1)")
    assert r.ok and r.stdout == "1\n" and sandbox._server[0] is not server and sandbox._server[0].poll() is None


def test_a_forked_process_gets_a_fork_server_of_its_own():
    assert run_python("pass").ok
    theirs = sandbox._server[0].pid
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        ok = run_python("print(2)").stdout == "2\n" and sandbox._server[0].pid != theirs
        os._exit(0 if ok else 1)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    assert run_python("pass").ok and sandbox._server[0].pid == theirs


@pytest.mark.parametrize(
    ("code", "returncode", "stdout"),
    [
        ("raise SystemExit('bye')", 1, ""),
        ("import sys\nsys.exit()", 0, ""),
        ("import atexit\natexit.register(print, 'at exit')", 0, "at exit\n"),
        (
            "import threading, time\nthreading.Thread(target=lambda: (time.sleep(0.2), print('late'))).start()",
            0,
            "late\n",
        ),
        ("import io, sys\nsys.stdout = io.StringIO()\nsys.__stdout__.write('kept')", 0, "kept"),
    ],
)
def test_a_run_ends_as_python_ends_without_its_teardown(code, returncode, stdout):
    r = run_python(code)
    assert (r.returncode, r.stdout) == (returncode, stdout)
