"""``builder: images`` (image + question + answer rows, local or Hub, in TRL's ``images`` column) and ``squares``
(a generated task). Every image is opened when the data is built, a bad one is one ``error:`` line naming its row."""

from __future__ import annotations

import io
import json
import random
import zlib
from pathlib import Path
from typing import Any

from grpo_trl.data.registry import DataError, load_hub_or_file, register_builder, require_columns
from grpo_trl.io import read_bytes as read_file

MAX_IMAGE_BYTES = 256 * 2**20  # one image file; a larger one (or a device) is refused unread
IMAGES = "images"  # TRL's column of a row's images (a list)
KEY = "data.image_column"
PARTS = ("image", "text")


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
    """A cell of the image column as a list of opened images (a list cell, nested or not: several; none when empty)."""
    return [load_image(v, folders) for v in _flat(_json(value, ("[", "{")))]


def _flat(value: Any) -> list:
    return [x for v in value for x in _flat(v)] if isinstance(value, (list, tuple)) else [value]


def _json(value: Any, openers: tuple[str, ...] = ("[",)) -> Any:
    """A cell read as text by a JSON column that mixes types: what it holds, else the value (a file name)."""
    if isinstance(value, str) and value.startswith(openers):
        try:
            return json.loads(value)
        except ValueError:
            pass
    return value


def _parts(content: Any, images: int | None) -> list[dict]:
    """``content`` as TRL's structured parts: a string is one text part (after ``images`` image parts, if given)."""
    if isinstance(content, str):
        return [{"type": "image", "text": None}] * (images or 0) + [{"type": "text", "text": content}]
    if not isinstance(content, list) or not all(isinstance(p, dict) and p.get("type") in PARTS for p in content):
        raise ValueError(f"holds {str(content)[:60]!r}: content is text or a list of {{type: image|text}} parts")
    for part in content:
        if part["type"] == "text" and not isinstance(part.get("text"), str):
            raise ValueError(f"has a text part without text: {part!r}")
    return [{"type": p["type"], "text": p.get("text") if p["type"] == "text" else None} for p in content]


def interleave(question: Any, images: int, system: str | None = None) -> list[dict]:
    """TRL's multi-image prompt from a question (parts or messages); a string user turn gets the images first."""
    if isinstance(question, list) and question and all(isinstance(m, dict) and "role" in m for m in question):
        messages, placed = [], False
        for m in question:
            first_user = m["role"] == "user" and isinstance(m.get("content"), str) and not placed
            placed = placed or first_user
            messages.append({"role": str(m["role"]), "content": _parts(m.get("content"), images if first_user else 0)})
    else:
        messages = [{"role": "user", "content": _parts(question, images)}]
    if system:
        messages.insert(0, {"role": "system", "content": _parts(system, 0)})
    slots = sum(p["type"] == "image" for m in messages for p in m["content"])
    if slots != images:
        raise ValueError(f"has {slots} image part(s) for the row's {images} image(s)")
    return messages


@register_builder("images", system_prompt=None, columns=(IMAGES, "solution"), local_copy=True)
def images(
    split: str = "train",
    *,
    path: str | None = None,
    name: str | None = None,
    config: str | None = None,
    image_column: str = "image",
    question_column: str = "question",
    answer_column: str = "answer",
    system_prompt: str | None = None,
    base_dir: Path | None = None,
):
    """Image + question + answer rows: ``user``, ``images`` (a list per row) and ``solution``; other columns kept."""
    from datasets import Image, List

    if (name is None) == (path is None):
        raise DataError("builder images needs exactly one of path (a local file) or name (a Hub dataset)", key="data")
    ds = load_hub_or_file(name, config, split, path, base_dir)
    where = f"dataset {path or name!r}"
    for key, column in (("image", image_column), ("question", question_column), ("answer", answer_column)):
        require_columns(ds, [column], where, f"data.{key}_column")
    local = Path(path).expanduser() if path else None
    if local is not None and not local.is_absolute() and base_dir is not None and not local.exists():
        local = base_dir / local
    folders = ([local.resolve().parent] if local else []) + ([base_dir] if base_dir is not None else [])

    interleaved = any(not isinstance(_json(q), str) for q in ds[question_column])

    def to_row(row: dict, idx: int) -> dict:
        try:
            pictures = images_of(row[image_column], folders)
        except ValueError as exc:
            raise DataError(f"{where} row {idx}: {image_column!r} {exc}", key=KEY) from None
        out = {IMAGES: pictures, "solution": str(row[answer_column])}
        if not interleaved:
            return {"user": str(row[question_column]), **out}
        try:
            return {"prompt": interleave(_json(row[question_column]), len(pictures), system_prompt), **out}
        except ValueError as exc:
            raise DataError(f"{where} row {idx}: {question_column!r} {exc}", key="data.question_column") from None

    drop = [
        c for c in (image_column, question_column, answer_column) if c not in ("user", IMAGES, "solution", "prompt")
    ]
    out = ds.map(to_row, with_indices=True, remove_columns=drop, desc="opening images")
    return out.cast_column(IMAGES, List(Image(decode=False)))  # opened once above; decoded when a row is read


COLOURS = {"red": (220, 30, 30), "green": (30, 160, 60), "blue": (30, 60, 220)}
QUESTION = "How many {colour} squares are in the image? Write the number in <answer> </answer> tags."


def draw(rng: random.Random, image_size: int, max_squares: int) -> tuple[bytes, dict[str, int]]:
    """One picture (PNG bytes) and how many squares of each colour it shows."""
    from PIL import Image, ImageDraw

    side = max(4, image_size // 8)  # 8 x 8 cells; a square fills its cell but a 1-pixel border
    cells = [(x, y) for x in range(0, image_size - side + 1, side) for y in range(0, image_size - side + 1, side)]
    rng.shuffle(cells)
    counts = {c: rng.randint(0 if c != "red" else 1, max_squares) for c in COLOURS}
    image = Image.new("RGB", (image_size, image_size), "white")
    pen = ImageDraw.Draw(image)
    drawn = dict.fromkeys(COLOURS, 0)  # a small picture may hold fewer squares than were drawn at random
    for colour, n in counts.items():
        for _ in range(min(n, len(cells))):
            x, y = cells.pop()
            pen.rectangle([x + 1, y + 1, x + side - 2, y + side - 2], fill=COLOURS[colour])
            drawn[colour] += 1
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue(), drawn


@register_builder("squares", system_prompt=None, columns=("images", "solution", "colour"))
def squares(split: str = "train", *, size: int = 1000, seed: int = 0, image_size: int = 64, max_squares: int = 4):
    """Generated pictures of coloured squares (seeded per split): ``user`` asks one colour's count (``solution``).

    >>> ds = squares(size=2, seed=0)
    >>> ds[0]["user"].startswith("How many"), ds[0]["solution"].isdigit(), len(ds[0]["images"])
    (True, True, 1)
    """
    from datasets import Dataset, Image, List

    if not 8 <= image_size <= 1024:  # 100,000 pixels a side: 30 GB a picture
        raise DataError(f"must be at least 8 and at most 1024, got {image_size}", key="data.image_size")
    if max_squares < 1:
        raise DataError(f"must be at least 1, got {max_squares}", key="data.max_squares")
    rng = random.Random(zlib.crc32(f"{split}:{seed}".encode()))
    rows = []
    for _ in range(size):
        png, counts = draw(rng, image_size, max_squares)
        colour = rng.choice(sorted(COLOURS))
        rows.append(
            {
                "user": QUESTION.format(colour=colour),
                "images": [{"bytes": png, "path": None}],
                "solution": str(counts[colour]),
                "colour": colour,
            }
        )
    return Dataset.from_list(rows).cast_column("images", List(Image()))
