"""Code rewards: ``code_tests`` runs the completion's last Python block against the row's tests (``tests``,
open-r1's ``verification_info`` or MBPP's ``test_list``) in the sandbox; ``code_format`` checks it parses."""

from __future__ import annotations

import ast
import json
import os
import re
import secrets
from dataclasses import replace
from pathlib import Path
from typing import Any

from grpo_trl.rewards.registry import register_reward, text_of
from grpo_trl.sandbox import Limits, run_many

FENCE = "```"
PYTHON_TAGS = {"", "python", "py", "python3", "py3"}
MAX_CODE_CHARS = 100_000  # a longer block is not run (and does not parse, for code_format)


def extract_code(text: str) -> str | None:
    """The last fenced block tagged ``python``/``py`` (or untagged), or None. Linear: two ``rfind`` calls."""
    end = text.rfind(FENCE)
    start = text.rfind(FENCE, 0, end) if end > 0 else -1
    if start < 0:
        return None
    body = text[start + len(FENCE) : end]
    tag, newline, code = body.partition("\n")
    if not newline or tag.strip().lower() not in PYTHON_TAGS or len(code) > MAX_CODE_CHARS:
        return None
    return code


def parse_tests(row: dict[str, Any]) -> dict | None:
    """The row's tests as ``{"setup": str, "asserts": [str], "io": [(input, output)]}``, or None when it has none."""
    raw = row.get("tests")
    if raw is None and row.get("verification_info") is not None:
        info = row["verification_info"]
        info = json.loads(info) if isinstance(info, str) else info
        raw = {"io": [c for c in info.get("test_cases", []) if c.get("type", "stdin_stdout") == "stdin_stdout"]}
    if raw is None and row.get("test_list") is not None:
        setup = "\n".join(filter(None, [*(row.get("test_imports") or []), row.get("test_setup_code") or ""]))
        raw = {"asserts": list(row["test_list"]), "setup": setup}
    if raw is None:
        return None
    raw = json.loads(raw) if isinstance(raw, str) else raw
    io = [(str(c["input"]), str(c["output"])) for c in raw.get("io") or []]
    asserts = [str(a) for a in raw.get("asserts") or []]
    if not io and not asserts:
        return None
    return {"setup": str(raw.get("setup") or ""), "asserts": asserts, "io": io}


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.strip().splitlines()]


_HARNESS = (Path(__file__).parent / "_code_harness.py").read_text(encoding="utf-8")


# The harness runs in its own thread: a signal handler (no audit event) gets the main thread's frame, which holds
# neither token nor tests. The main thread waits until the harness ends the process.
_START = """
def __run(tests):
    import os
    _exit = os._exit
    try:
        __grade(tests)
    finally:
        _exit(0)


import _thread
_thread.start_new_thread(__run, (%r,))
__done = _thread.allocate_lock()
__done.acquire()
__done.acquire()
"""


def _passed_asserts(stdout: str, token: str, total: int) -> int:
    """How many of ``total`` asserts the harness reported passed: each index in range once, nothing else counts."""
    found = re.findall(rf"^{re.escape(token)}:([0-9]{{1,9}})$", stdout, re.MULTILINE)
    return len({int(i) for i in found if int(i) < total})


@register_reward("code_tests")
class CodeTests:
    """Fraction of the row's tests the last Python block passes (``binary=True``: 1.0 only if all pass); 0.0 without
    a block; None for a row without tests. Asserts run in one sandboxed process, each stdin/stdout pair in its own;
    ``network: true`` lets the code open sockets (off: AF_UNIX only)."""

    def __init__(
        self,
        binary: bool = False,
        timeout: float = 10.0,
        memory_mb: int = 512,
        max_workers: int | None = None,
        network: bool = False,
    ):
        if timeout <= 0 or memory_mb < 64 or (max_workers is not None and max_workers < 1):
            raise ValueError("code_tests needs timeout > 0, memory_mb >= 64 and max_workers >= 1 (or unset)")
        self.binary = binary
        self.limits = Limits(cpu_seconds=timeout, wall_seconds=timeout, memory_mb=memory_mb, network=network)
        self.max_workers = max_workers or 2 * len(os.sched_getaffinity(0))

    def __call__(self, completions: list, **columns) -> list[float | None]:
        keys = [
            k for k in ("tests", "verification_info", "test_list", "test_setup_code", "test_imports") if k in columns
        ]
        rows = [parse_tests({k: columns[k][i] for k in keys}) for i in range(len(completions))]
        jobs, owners = [], []  # owners[j]: (row, (token, number of asserts) or the expected stdout)
        for i, (tests, text) in enumerate(zip(rows, text_of(completions))):
            code = extract_code(text) if tests else None
            if code is None:
                continue
            solution = f"{tests['setup']}\n{code}"
            if tests["asserts"]:
                token = secrets.token_hex(16)
                files = {"solution.py": solution}
                jobs.append({"code": _HARNESS + _START % (tests["asserts"],), "stdin": token, "files": files})
                owners.append((i, (token, len(tests["asserts"]))))
            for stdin, expected in tests["io"]:  # stdout is the answer: an expected one longer than the bound fits
                room = self.limits.max_output_bytes + len(expected.encode("utf-8", "surrogatepass"))
                jobs.append({"code": solution, "stdin": stdin, "limits": replace(self.limits, max_output_bytes=room)})
                owners.append((i, expected))
        passed = [0] * len(rows)
        results = run_many([{"limits": self.limits, **job} for job in jobs], max_workers=self.max_workers)
        for (i, want), result in zip(owners, results):
            if isinstance(want, tuple):
                passed[i] += _passed_asserts(result.stdout, *want)
            else:
                passed[i] += result.ok and not result.truncated and _lines(result.stdout) == _lines(want)
        fractions = [n / (len(t["asserts"]) + len(t["io"])) if t else None for t, n in zip(rows, passed)]
        return [float(f == 1.0) if self.binary and f is not None else f for f in fractions]


@register_reward("code_format")
def code_format(completions: list, **kwargs) -> list[float]:
    """1.0 for a last fenced Python block that parses (``ast.parse``: nothing runs), 0.5 if it does not, else 0.0."""
    out = []
    for text in text_of(completions):
        code = extract_code(text)
        if code is None:
            out.append(0.0)
            continue
        try:
            ast.parse(code)
            out.append(1.0)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            out.append(0.5)
    return out
