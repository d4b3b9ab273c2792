"""Image + question + answer rows for vision-language models: a local file, or a Hub dataset with an image column.

Each row becomes a ``user`` turn (the question), an ``images`` column (a list of images: TRL's ``images`` column, which
``GRPOTrainer`` puts into the user turn as image entries) and ``solution`` (the answer, for the rewards). An image
may be a path (relative to the data file's folder, else to the recipe's), a ``{"bytes": ..., "path": ...}`` mapping
(how ``datasets`` and Parquet store images), a PIL image, or a list of these (several images in one prompt). Every
image is opened when the data is built (``check`` too, for a local file), so a missing, empty or unreadable image is
one ``error:`` line naming its row, not a crash mid-run.

Example recipe section::

    data:
      builder: images
      path: shapes.jsonl             # {"image": "img/0.png", "question": "How many squares?", "answer": "3"}
      # name: HuggingFaceM4/ChartQA  # or a Hub dataset with an image column (and config:)
      image_column: image
      question_column: question
      answer_column: answer
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from grpo_trl.data.registry import DataError, load_hub_or_file, register_builder
from grpo_trl.io import read_bytes as read_file

MAX_IMAGE_BYTES = 256 * 2**20  # one image file; a larger one (or a device) is refused unread
IMAGES = "images"  # TRL's column of a row's images (a list)
KEY = "data.image_column"


def _columns(options: dict, base_dir: Path | None) -> set[str]:
    """The columns rewards will see: a local file is built (every image opened); a Hub dataset is not downloaded."""
    if options.get("path"):
        return set(images(split="train", **options, base_dir=base_dir).column_names) - {"user"}
    return {IMAGES, "solution"}


def _decodes_not(ds: Any, column: str) -> Any:
    """``column`` as ``{"bytes", "path"}`` mappings rather than decoded PIL images (an ``Image`` feature or a list
    of them), so each image is opened once, by ``load_image``."""
    from datasets import Image, List, Sequence

    feature = ds.features[column]
    if isinstance(feature, Image):
        return ds.cast_column(column, Image(decode=False))
    if isinstance(feature, (List, Sequence)) and isinstance(feature.feature, Image):
        return ds.cast_column(column, List(Image(decode=False)))
    return ds


def load_image(value: Any, folders: list[Path]) -> dict:
    """One image as ``{"bytes": ..., "path": ...}`` after opening it; ``ValueError`` saying why it cannot be used.

    >>> load_image(3, [])
    Traceback (most recent call last):
    ...
    ValueError: is int 3, not an image (a path, {bytes, path}, a PIL image, or a list of them)
    """
    from PIL import Image

    if isinstance(value, Image.Image):
        buffer = io.BytesIO()
        value.save(buffer, format="PNG")
        value = {"bytes": buffer.getvalue(), "path": None}
    elif isinstance(value, str):
        value = {"bytes": None, "path": value}
    if not isinstance(value, dict) or not (value.get("bytes") or value.get("path")):
        shown = f"{type(value).__name__} {repr(value)[:40]}"
        raise ValueError(f"is {shown}, not an image (a path, {{bytes, path}}, a PIL image, or a list of them)")
    data, path = value.get("bytes"), value.get("path")
    if not data:
        if not isinstance(path, str) or "\0" in path:
            raise ValueError(f"has path {str(path)[:60]!r}, not a file name")
        p = Path(path).expanduser()
        candidates = [p] if p.is_absolute() or not folders else [f / p for f in folders]
        found = next((c for c in candidates if c.is_file()), candidates[0])
        if not found.is_file():
            raise ValueError(f"{path!r} is not a file (looked at {found})")
        data, path = read_file(found, MAX_IMAGE_BYTES, "image"), str(found)  # the one bounded reader
    if not isinstance(data, bytes):
        raise ValueError(f"has bytes of type {type(data).__name__}, not bytes")
    try:
        with Image.open(io.BytesIO(data)) as image:
            image.load()  # decodes it: a truncated file fails here, not mid-run
            width, height = image.size
    except Exception as exc:  # noqa: BLE001 - PIL raises many kinds for a file that is not an image
        name = f"{path!r} " if path else ""
        raise ValueError(f"{name}cannot be opened as an image ({type(exc).__name__}: {str(exc)[:100]})") from None
    if not width or not height:
        raise ValueError(f"{path or 'an image'!r} is {width}x{height} pixels")
    return {"bytes": data, "path": path}


def images_of(value: Any, folders: list[Path]) -> list[dict]:
    """A cell of the image column as a list of opened images (a list cell: several images, none when empty)."""
    if isinstance(value, str) and value.startswith(("[", "{")):  # a JSON column mixing types is read as text
        try:
            value = json.loads(value)
        except ValueError:
            pass  # a file name that starts with a bracket
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    return [load_image(v, folders) for v in values]


@register_builder("images", system_prompt=None, columns=_columns, local_copy=True)
def images(
    split: str = "train",
    *,
    path: str | None = None,
    name: str | None = None,
    config: str | None = None,
    image_column: str = "image",
    question_column: str = "question",
    answer_column: str = "answer",
    base_dir: Path | None = None,
):
    """Image + question + answer rows: ``user``, ``images`` (a list per row) and ``solution``; other columns kept."""
    from datasets import Image, List

    if (name is None) == (path is None):
        raise DataError("builder images needs exactly one of path (a local file) or name (a Hub dataset)", key="data")
    ds = load_hub_or_file(name, config, split, path, base_dir)
    where = f"dataset {path or name!r}"
    for key, column in (("image_column", image_column), ("question_column", question_column)):
        if column not in ds.column_names:
            raise DataError(
                f"{where} has no column {column!r}; its columns: {', '.join(ds.column_names)}", key=f"data.{key}"
            )
    if answer_column not in ds.column_names:
        raise DataError(
            f"{where} has no column {answer_column!r} (the answer rewards read as `solution`); its columns: "
            f"{', '.join(ds.column_names)}",
            key="data.answer_column",
        )
    ds = _decodes_not(ds, image_column)
    folders = [Path(path).expanduser().resolve().parent] if path else []
    local = Path(path).expanduser() if path else None
    if local is not None and not local.is_absolute() and base_dir is not None and not local.exists():
        folders = [(base_dir / local).resolve().parent]
    folders += [base_dir] if base_dir is not None else []

    def to_row(row: dict, idx: int) -> dict:
        try:
            pictures = images_of(row[image_column], folders)
        except ValueError as exc:
            raise DataError(f"{where} row {idx}: {image_column!r} {exc}", key=KEY) from None
        return {"user": str(row[question_column]), IMAGES: pictures, "solution": str(row[answer_column])}

    drop = [c for c in (image_column, question_column, answer_column) if c not in ("user", IMAGES, "solution")]
    out = ds.map(to_row, with_indices=True, remove_columns=drop, desc="opening images")
    return out.cast_column(IMAGES, List(Image()))
