"""Math-verify in a child process: ``python -I path/to/_verify_worker.py`` (isolated: nothing from the cwd).

Protocol: ``"ready"`` on stdout once imported; then one JSON ``[gold, answer, latex]`` per line on stdin, one JSON
value per line on stdout (``verdict``). Math-verify's signal timeouts are off: the parent bounds each item by killing
this process, which works from any thread (``signal.alarm`` only works in the main thread).
"""

from __future__ import annotations

import json
import logging
import sys

_GOLDS: dict[str, list] = {}
# One of each common answer form (roots, fractions, intervals, sets, polynomials, prose), compared as in a run
_WARM = [
    ("$1$", "1"),
    ("$3\\sqrt{2}$", "\\sqrt{18}"),
    ("$\\frac{5}{8}$", "0.625"),
    ("The answer is $(-\\infty, 2]$.", "[2, \\infty)"),
    ("$\\{4, 5\\}$", "\\{5,4\\}"),
    ("$y^2 - 1$", "(y-1)(y+1)"),
    ("$2\\pi$", "\\pi \\cdot 2"),
]


def verdict(gold: str, answer: str, latex: bool) -> float | None:
    """1.0 / 0.0 as math-verify verifies ``answer`` against ``gold`` (parsed once), None when the gold has no value.

    ``latex``: the answer is one LaTeX expression (a ``\\boxed{}``, or bare LaTeX put between ``$...$``), read like
    TRL's ``accuracy_reward`` reads a completion (LaTeX only, boxed first, first match); otherwise with math-verify's
    default extraction (LaTeX and plain expressions, so "The answer is 72." reads 72).
    """
    from math_verify import LatexExtractionConfig, parse, verify

    if gold not in _GOLDS:
        if len(_GOLDS) > 10_000:
            _GOLDS.clear()
        _GOLDS[gold] = parse(gold, parsing_timeout=None)
    if not _GOLDS[gold]:
        return None
    if latex:  # its default normalization includes units, as TRL's
        config = [LatexExtractionConfig(boxed_match_priority=0)]
        parsed = parse(answer, config, extraction_mode="first_match", parsing_timeout=None)
    else:
        parsed = parse(answer, parsing_timeout=None)
    return float(verify(_GOLDS[gold], parsed, timeout_seconds=None))


def main() -> None:
    logging.disable(logging.WARNING)  # math-verify warns that its own timeout is disabled: the parent has one
    for gold, answer in _WARM:  # imports and sympy's first-use work, before "ready": the parent bounds each item apart
        verdict(gold, f"\\boxed{{{answer}}}", True)
    sys.stdout.buffer.write(b'"ready"\n')
    sys.stdout.buffer.flush()
    for line in sys.stdin.buffer:
        try:
            result = verdict(*json.loads(line))
        except Exception:  # noqa: BLE001 - math-verify failing on hostile input is a wrong answer
            result = 0.0
        sys.stdout.buffer.write(json.dumps(result).encode() + b"\n")
        sys.stdout.buffer.flush()


if __name__ == "__main__":
    main()
