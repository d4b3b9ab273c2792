"""The ``images`` builder on files made here: every form an image cell takes (a path, relative or absolute, a
``{bytes, path}`` mapping, a PIL image, a list of them, a Parquet/``datasets`` Image column, a dataset folder read by
``load_dataset``) and every malformed one (missing file, not an image, empty file, truncated file, wrong type)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from grpo_trl.data import DataError, build_dataset
from grpo_trl.data.images import images_of, squares

FORMS = ("relative", "absolute", "bytes", "path_dict", "pil")


def picture(seed: int, size: tuple[int, int] = (9, 7)) -> Image.Image:
    return Image.new("RGB", size, ((seed * 37) % 256, (seed * 91) % 256, (seed * 13) % 256))


def png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def cell(form: str, image: Image.Image, folder: Path, name: str):
    """``image`` written as one of ``FORMS`` (files under ``folder``)."""
    if form == "pil":
        return image
    if form == "bytes":
        return {"bytes": png(image), "path": None}
    (folder / "img").mkdir(exist_ok=True)
    (folder / "img" / name).write_bytes(png(image))
    if form == "relative":
        return f"img/{name}"
    return str(folder / "img" / name) if form == "absolute" else {"bytes": None, "path": str(folder / "img" / name)}


def pixels(image) -> list:
    return list(image.convert("RGB").getdata())


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.lists(st.sampled_from(FORMS), min_size=1, max_size=3), min_size=1, max_size=4))
def test_every_form_of_image_cell_opens_to_the_same_pixels(tmp_path_factory, rows):
    folder = tmp_path_factory.mktemp("images")
    data, want = [], []
    for i, forms in enumerate(rows):
        originals = [picture(i * 10 + j) for j in range(len(forms))]
        cells = [cell(f, im, folder, f"{i}-{j}.png") for j, (f, im) in enumerate(zip(forms, originals))]
        data.append({"image": cells if len(cells) > 1 or i % 2 else cells[0], "question": f"q{i}", "answer": i})
        want.append(originals)
    if any("pil" in forms for forms in rows):  # a PIL image lives in memory: the builder's cell reader
        got = [images_of(row["image"], [folder]) for row in data]
        for opened, originals in zip(got, want):
            assert [pixels(Image.open(io.BytesIO(o["bytes"]))) for o in opened] == [pixels(o) for o in originals]
        return
    if all(isinstance(c, str) for r in data for c in (r["image"] if isinstance(r["image"], list) else [r["image"]])):
        path = folder / "rows.jsonl"  # paths: JSON lines
        path.write_text("".join(json.dumps(r) + "\n" for r in data))
    else:  # bytes: a Parquet column of {bytes, path} lists (one type per column)
        import pyarrow as pa
        import pyarrow.parquet as pq

        def as_dict(c):
            return {"bytes": None, "path": c} if isinstance(c, str) else c

        for r in data:
            r["image"] = [as_dict(c) for c in (r["image"] if isinstance(r["image"], list) else [r["image"]])]
        path = folder / "rows.parquet"
        pq.write_table(pa.Table.from_pylist(data), path)
    ds = build_dataset({"builder": "images", "path": str(path)}).train
    assert ds["solution"] == [str(i) for i in range(len(rows))]
    assert [p[-1]["content"] for p in ds["prompt"]] == [f"q{i}" for i in range(len(rows))]
    for row, originals in zip(ds, want):
        assert [pixels(im) for im in row["images"]] == [pixels(o) for o in originals]


def test_parquet_with_embedded_images_and_a_dataset_folder_read_by_load_dataset(tmp_path):
    from datasets import Dataset
    from datasets import Image as ImageFeature

    rows = [{"image": {"bytes": png(picture(i)), "path": None}, "question": f"q{i}", "answer": str(i)} for i in (1, 2)]
    ds = Dataset.from_list(rows).cast_column("image", ImageFeature())  # how the Hub stores an image column
    ds.to_parquet(tmp_path / "rows.parquet")
    (tmp_path / "hub").mkdir()
    ds.to_parquet(tmp_path / "hub" / "train.parquet")
    for source in ({"path": str(tmp_path / "rows.parquet")}, {"name": str(tmp_path / "hub")}):
        built = build_dataset({"builder": "images", **source}).train
        assert [pixels(r["images"][0]) for r in built] == [pixels(picture(1)), pixels(picture(2))]


def _bad_cells(folder: Path) -> dict[str, tuple[object, str]]:
    (folder / "empty.png").write_bytes(b"")
    (folder / "text.png").write_text("not an image")
    (folder / "cut.png").write_bytes(png(picture(3, (40, 40)))[:60])
    return {
        "missing file": ("nowhere.png", "is not a file"),
        "empty file": ("empty.png", "cannot be opened as an image"),
        "not an image": ("text.png", "cannot be opened as an image"),
        "truncated": ("cut.png", "cannot be opened as an image"),
        "a number": (7, "'7' is not a file"),  # a JSON column mixing types is read as text (data/sources.py)
    }


BAD = [
    "missing file",
    "empty file",
    "not an image",
    "truncated",
    "a number",
]


@pytest.mark.parametrize("case", BAD)
def test_a_bad_image_is_one_data_error_naming_its_row_and_the_image_column(tmp_path, case):
    value, why = _bad_cells(tmp_path)[case]
    good = {"image": cell("relative", picture(0), tmp_path, "ok.png"), "question": "q", "answer": "1"}
    path = tmp_path / "rows.jsonl"
    rows = [good, {"image": value, "question": "q", "answer": "2"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(DataError) as err:
        build_dataset({"builder": "images", "path": str(path)})
    (problem,) = err.value.problems
    assert problem.key == "data.image_column" and "row 1" in problem.message and why in problem.message


@pytest.mark.parametrize(
    ("missing", "key"),
    [("image", "data.image_column"), ("question", "data.question_column"), ("answer", "data.answer_column")],
)
def test_a_missing_column_names_its_option(tmp_path, missing, key):
    row = {"image": cell("relative", picture(0), tmp_path, "ok.png"), "question": "q", "answer": "1"}
    del row[missing]
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(DataError) as err:
        build_dataset({"builder": "images", "path": str(path)})
    assert err.value.problems[0].key == key and f"missing column(s) {missing};" in err.value.problems[0].message


def test_squares_are_seeded_split_apart():
    a, b, test = squares(size=6, seed=1), squares(size=6, seed=1), squares("test", size=6, seed=1)
    assert a["solution"] == b["solution"] and a["images"] != test["images"]


@settings(max_examples=15, deadline=None)
@given(max_squares=st.integers(1, 40), image_size=st.integers(8, 96), seed=st.integers(0, 9))
def test_squares_count_what_they_draw_even_when_the_picture_holds_fewer(max_squares, image_size, seed):
    a = squares(size=4, seed=seed, image_size=image_size, max_squares=max_squares)
    colours = {"red": (220, 30, 30), "green": (30, 160, 60), "blue": (30, 60, 220)}
    for row in a:
        image = row["images"][0].convert("RGB")
        side = max(4, image.width // 8)  # as draw() cuts the picture
        seen = sum(  # each square's centre pixel
            image.getpixel((x + side // 2, y + side // 2)) == colours[row["colour"]]
            for x in range(0, image.width - side + 1, side)
            for y in range(0, image.height - side + 1, side)
        )
        assert seen == int(row["solution"])


@pytest.mark.parametrize(
    "value", [7, 3.5, None, True, {"x": 1}, {"bytes": 5, "path": None}, [{"bytes": b"", "path": None}]]
)
def test_a_cell_of_the_wrong_type_is_a_value_error_saying_what_it_is(value):
    with pytest.raises(ValueError, match="not an image|not bytes"):  # cells a Parquet file or a Hub dataset may hold
        images_of(value, [])


def test_a_column_mixing_one_path_and_lists_of_paths_opens_every_image(tmp_path):
    """JSON reads such a column as text (data/sources.py): the list cells arrive as their JSON text."""
    one, two = cell("relative", picture(1), tmp_path, "a.png"), cell("relative", picture(2), tmp_path, "b.png")
    path = tmp_path / "rows.jsonl"
    rows = [{"image": one, "question": "q", "answer": "1"}, {"image": [one, two], "question": "q", "answer": "2"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ds = build_dataset({"builder": "images", "path": str(path)}).train
    assert [len(r["images"]) for r in ds] == [1, 2]
    assert pixels(ds[1]["images"][1]) == pixels(picture(2))


PART = st.sampled_from(["image", "text"])


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(layouts=st.lists(st.lists(PART, min_size=1, max_size=5), min_size=1, max_size=3), messages=st.booleans())
def test_interleaved_questions_keep_each_image_where_it_sits_among_the_text(tmp_path_factory, layouts, messages):
    """TRL's multi-image form: content parts (or messages holding them) with the row's images filled in order."""
    from trl.data_utils import prepare_multimodal_messages

    folder = tmp_path_factory.mktemp("interleaved")
    rows, want = [], []
    for i, layout in enumerate(layouts):
        parts = [
            {"type": "image"} if p == "image" else {"type": "text", "text": f"t{i}.{j}"} for j, p in enumerate(layout)
        ]
        originals = [picture(i * 10 + j) for j, p in enumerate(layout) if p == "image"]
        question = [{"role": "user", "content": parts}] if messages else parts
        cells = [cell("relative", im, folder, f"{i}-{j}.png") for j, im in enumerate(originals)]
        rows.append({"image": cells, "question": question, "answer": str(i)})
        want.append((layout, originals))
    (folder / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    built = build_dataset(
        {"builder": "images", "path": str(folder / "rows.jsonl"), "system_prompt": "Be brief."}
    ).train
    for row, (layout, originals) in zip(built, want):
        system, user = row["prompt"]
        assert system["role"] == "system" and user["role"] == "user"
        assert [p["type"] for p in user["content"]] == layout  # positions kept
        filled = prepare_multimodal_messages(row["prompt"], images=row["images"])  # as GRPOTrainer fills them
        got = [p["image"] for p in filled[1]["content"] if p["type"] == "image"]
        assert [pixels(g) for g in got] == [pixels(o) for o in originals]


def test_a_string_question_stays_the_single_question_form_with_every_image_first(tmp_path):
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "a.png").write_bytes(png(picture(1)))
    (tmp_path / "rows.jsonl").write_text(json.dumps({"image": ["img/a.png"], "question": "How many?", "answer": 1}))
    row = build_dataset({"builder": "images", "path": str(tmp_path / "rows.jsonl")}).train[0]
    assert row["prompt"] == [{"role": "user", "content": "How many?"}] and len(row["images"]) == 1


@pytest.mark.parametrize("slots", [0, 2])
def test_image_parts_that_do_not_match_the_images_are_one_error_naming_the_question_column(tmp_path, slots):
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "a.png").write_bytes(png(picture(1)))
    question = [{"type": "image"}] * slots + [{"type": "text", "text": "How many?"}]
    (tmp_path / "rows.jsonl").write_text(json.dumps({"image": ["img/a.png"], "question": question, "answer": 1}))
    with pytest.raises(DataError) as err:
        build_dataset({"builder": "images", "path": str(tmp_path / "rows.jsonl")})
    assert err.value.problems[0].key == "data.question_column"
    assert f"{slots} image part(s) for the row's 1 image(s)" in str(err.value)
