"""``squares``: a generated image task, offline: count the squares of one colour in a picture drawn with PIL
(``solution`` is the count, for the ``gsm8k`` reward). Seeded and deterministic; another ``split`` gets other pictures.

>>> ds = squares(size=2, seed=0)
>>> ds[0]["user"].startswith("How many"), ds[0]["solution"].isdigit(), len(ds[0]["images"])
(True, True, 1)
"""

from __future__ import annotations

import io
import random
import zlib

from grpo_trl.data.registry import DataError, register_builder

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
    for colour, n in counts.items():
        for _ in range(n):
            if not cells:
                break
            x, y = cells.pop()
            pen.rectangle([x + 1, y + 1, x + side - 2, y + side - 2], fill=COLOURS[colour])
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue(), counts


@register_builder("squares", system_prompt=None, columns=("images", "solution", "colour"))
def squares(split: str = "train", *, size: int = 1000, seed: int = 0, image_size: int = 64, max_squares: int = 4):
    """Generated pictures of coloured squares: ``user`` asks for one colour's count, ``images``, ``solution``."""
    from datasets import Dataset, Image, List

    if image_size < 8 or max_squares < 1:
        key, got = ("data.image_size", image_size) if image_size < 8 else ("data.max_squares", max_squares)
        raise DataError(f"must be at least {8 if image_size < 8 else 1}, got {got}", key=key)
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
