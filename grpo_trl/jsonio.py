"""Bounded readers of the JSON files a run or a command wrote (logs, state, reports), for every floor above.

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "log.jsonl"
>>> _ = p.write_text(chr(10).join(['{"step": 1}', '{"step": 2}', '{"cut']))
>>> read_jsonl(p), read_json_head(p, 100, first_line=True)
([{'step': 1}, {'step': 2}], {'step': 1})
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from grpo_trl.io import open_regular

MAX_LINE = 2**24  # one logged row (a batch of completions) is far smaller; a longer line is skipped unread


def read_json_head(path: Path, max_bytes: int, first_line: bool = False, empty: Any = None) -> Any:
    """The JSON value in ``path`` (or its first line) within ``max_bytes``; ``empty`` for an empty file, None when
    it cannot be read or parsed (a device, a stranger's huge file)."""
    try:
        with open_regular(path) as fh:
            data = fh.readline(max_bytes) if first_line else fh.read(max_bytes)
        return json.loads(data) if data else empty
    except (OSError, ValueError, RecursionError):  # GrpoTrlError is a ValueError
        return None


def read_jsonl(path: Path, max_line: int = MAX_LINE) -> list[dict]:
    """The rows of a JSON-lines log, read a line at a time; a bad or cut line (a kill) costs that line."""
    rows: list[dict] = []
    if not Path(path).is_file():
        return rows
    with open_regular(path) as fh:
        while line := fh.readline(max_line + 1):
            if len(line) > max_line:  # skip the rest of an over-long line without holding it
                while line and not line.endswith(b"\n"):
                    line = fh.readline(max_line)
                continue
            try:
                row = json.loads(line.decode(errors="replace"))
            except (ValueError, RecursionError):
                continue
            if isinstance(row, dict):
                rows.append(row)
    return rows
