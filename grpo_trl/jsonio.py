"""Small bounded readers of JSON files a run or a command wrote (logs, state, reports), shared by every floor above.

Example:
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


def read_json_head(path: Path, max_bytes: int, first_line: bool = False, empty: Any = None) -> Any:
    """The JSON value in ``path`` (or in its first line), read through at most ``max_bytes``; ``empty`` for an empty
    file, ``None`` when it cannot be read or parsed. Bounded because the name may be a device or a stranger's huge
    file: what ``eval``, ``filter`` and ``schema -o`` read to tell their own output from a file they must not
    overwrite."""
    try:
        with open_regular(path) as fh:
            data = fh.readline(max_bytes) if first_line else fh.read(max_bytes)
        return json.loads(data) if data else empty
    except (OSError, ValueError, RecursionError):  # GrpoTrlError is a ValueError; Recursion: nested too deep
        return None


def read_jsonl(path: Path) -> list[dict]:
    """Rows of a JSON-lines log; a line cut by a kill (the last one) is dropped."""
    rows = []
    if path.is_file():
        with open_regular(path) as fh:
            text = fh.read().decode(errors="replace")
        for line in text.splitlines():  # a bad byte costs its line, not the resume
            try:
                row = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if isinstance(row, dict):
                rows.append(row)
    return rows
