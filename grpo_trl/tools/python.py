"""The ``python`` tool: a snippet run in ``grpo_trl.sandbox`` (a fresh bounded process), what it printed returned;
its deadline sits below the tool's own time bound, so the sandbox answers first."""

from __future__ import annotations

from grpo_trl.sandbox import Limits, run_python
from grpo_trl.tools.registry import register_tool

MAX_REPLY_CHARS = 2000  # what the model reads back: the end of stdout, plus the end of stderr on failure


@register_tool("python")
def python(code: str, timeout_s: float = 5.0) -> str:
    """Run a Python program and return what it printed (use print to see a value).

    Args:
        code: A complete Python program; only the standard library is available and files do not persist.
        timeout_s: Seconds the program may run, at most 10.

    Returns:
        The program's standard output, or its error.
    """
    seconds = min(max(float(timeout_s), 0.1), 10.0)
    result = run_python(str(code), limits=Limits(cpu_seconds=seconds, wall_seconds=seconds + 1))
    out = result.stdout.strip()[-MAX_REPLY_CHARS:]
    if result.timed_out:
        return f"timed out after {seconds:g} s" + (f"; output so far:\n{out}" if out else "")
    if result.truncated:  # printed more than the sandbox keeps (the rest was dropped)
        return out + "\n[output cut]"
    if result.returncode != 0:
        err = result.stderr.strip()[-MAX_REPLY_CHARS:]
        return f"error (exit code {result.returncode}):\n{err}" + (f"\noutput:\n{out}" if out else "")
    return out
