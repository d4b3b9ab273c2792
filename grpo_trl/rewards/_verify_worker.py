"""Math-verify in a child process: ``python -I path/to/_verify_worker.py`` (isolated: nothing from the cwd).

Protocol: ``"ready"`` on stdout once imported (and warmed on one item); then one JSON array ``[gold, answer, latex]``
per line on stdin; one JSON value per line on stdout (1.0, 0.0, or null when the gold cannot be parsed).
``latex``: the answer is one LaTeX expression (a ``\\boxed{}``, or bare LaTeX put between ``$...$``), read like TRL's
``accuracy_reward`` reads a completion (LaTeX only, boxed first, first match);
otherwise with math-verify's default extraction (LaTeX and plain expressions, so "The answer is 72." reads 72).
Runs math-verify with its signal timeouts off: the parent enforces a deadline per item by killing this process, which
works from any thread (``signal.alarm`` only works in the main thread).
"""

from __future__ import annotations

import json
import logging
import sys


def main() -> None:
    logging.disable(logging.WARNING)  # math-verify warns that its own timeout is disabled: the parent has one
    from math_verify import LatexExtractionConfig, parse, verify

    latex_only = [LatexExtractionConfig(boxed_match_priority=0)]  # its default normalization includes units

    gold_cache: dict[str, list] = {}
    verify(parse("$1$", parsing_timeout=None), parse("1", latex_only, parsing_timeout=None), timeout_seconds=None)
    sys.stdout.buffer.write(b'"ready"\n')  # imports done: from here the parent bounds each item by its timeout
    sys.stdout.buffer.flush()
    for line in sys.stdin.buffer:
        try:
            gold, answer, latex = json.loads(line)
            if gold not in gold_cache:
                if len(gold_cache) > 10_000:
                    gold_cache.clear()
                gold_cache[gold] = parse(gold, parsing_timeout=None)
            gold_parsed = gold_cache[gold]
            if not gold_parsed:
                result = None
            else:
                if latex:
                    parsed = parse(answer, latex_only, extraction_mode="first_match", parsing_timeout=None)
                else:
                    parsed = parse(answer, parsing_timeout=None)
                result = float(verify(gold_parsed, parsed, timeout_seconds=None))
        except Exception:  # noqa: BLE001 - math-verify failing on hostile input is a wrong answer
            result = 0.0
        sys.stdout.buffer.write(json.dumps(result).encode() + b"\n")
        sys.stdout.buffer.flush()


if __name__ == "__main__":
    main()
