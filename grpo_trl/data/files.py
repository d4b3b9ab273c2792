"""The user's own JSONL / JSON / Parquet / CSV file: say which column is the question and which reach the rewards.

Example recipe section::

    data:
      builder: files
      path: my_problems.jsonl          # relative to the recipe
      question_column: question
      columns: [solution]              # passed to rewards (default: every other column)
      user_template: "Solve: {question}"
"""

from __future__ import annotations

from pathlib import Path
from string import Formatter

from grpo_trl.data.registry import DataError, load_file, register_builder, require_columns
from grpo_trl.data.rows import missing


def _columns(options: dict, base_dir: Path | None) -> set[str]:
    """The file's columns that reach the rewards (reads the file and checks the template)."""
    return set(files(split="train", **options, base_dir=base_dir).column_names) - {"user"}


@register_builder("files", system_prompt=None, columns=_columns)
def files(
    split: str = "train",
    *,
    path: str,
    question_column: str = "question",
    columns: list[str] | None = None,
    user_template: str | None = None,
    base_dir: Path | None = None,
):
    """A local file: ``user`` from ``question_column`` (or ``user_template`` over any columns), plus ``columns``."""
    ds = load_file(path, base_dir)
    keep = [c for c in ds.column_names if c != question_column] if columns is None else list(columns)
    require_columns(ds, [question_column, *keep], f"data file {path!r}")
    if user_template is not None:
        try:
            fields = [f for _, f, _, _ in Formatter().parse(user_template) if f is not None]
        except ValueError as exc:
            raise DataError(f"data.user_template is not a valid template ({exc}); write {{column}} fields") from None
        positional = [f for f in fields if not f or f.isdigit()]
        if positional:
            raise DataError(
                f"data.user_template has a positional field {{{positional[0]}}}; name the column instead, e.g. "
                f"{{{question_column}}} (columns: {', '.join(ds.column_names)})"
            )
        fields = [f.split(".")[0].split("[")[0] for f in fields]
        absent = [f for f in fields if f not in ds.column_names]
        if absent:
            raise DataError(
                f"data.user_template names column(s) {', '.join(absent)} that {path!r} lacks; "
                f"columns: {', '.join(ds.column_names)}"
            )

    def to_row(row: dict) -> dict:  # a null or empty field gives no prompt: dropped or refused (data/rows.py)
        if any(missing(row[f]) for f in (fields if user_template else [question_column])):
            return {"user": None}
        return {"user": user_template.format(**row) if user_template else str(row[question_column])}

    drop = [c for c in ds.column_names if c not in keep]
    return ds.map(to_row, remove_columns=drop)
