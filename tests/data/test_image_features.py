"""Every feature type that carries images (``Image``, ``List``/``Sequence``/``LargeList`` of ``Image``, nested lists)
is read undecoded by ``check`` and by the data train builds, and decoded only when a row is read: the same rows from
every form, through the ``images`` builder and the ``files`` builder."""

from __future__ import annotations

import io

import pytest
import yaml
from datasets import Dataset, Features, Image, LargeList, List, Sequence, Value
from PIL import Image as PIL

from grpo_trl.cli import main as cli_main
from grpo_trl.data import build_dataset

FORMS = {
    "Image": Image(),
    "List(Image)": List(Image()),
    "LargeList(Image)": LargeList(Image()),
    "Sequence(Image)": Sequence(Image()),
    "List(List(Image))": List(List(Image())),
    "LargeList(LargeList(Image))": LargeList(LargeList(Image())),
}


def png(i: int) -> bytes:
    buffer = io.BytesIO()
    PIL.new("RGB", (6, 5), (40 * i, 0, 200 - 40 * i)).save(buffer, format="PNG")
    return buffer.getvalue()


def nest(feature, value):
    """``value`` (one image) as a cell of ``feature``: wrapped in a list per list level."""
    while not isinstance(feature, Image):
        feature, value = feature.feature, [value]
    return value


@pytest.fixture
def decodes(monkeypatch) -> list[int]:
    """How many times ``datasets`` decodes an image cell (a counter around its own decoder)."""
    count, decode = [0], Image.decode_example

    def counted(self, *args, **kwargs):
        count[0] += 1
        return decode(self, *args, **kwargs)

    monkeypatch.setattr(Image, "decode_example", counted)
    return count


@pytest.mark.parametrize("builder", ["images", "files"])
@pytest.mark.parametrize("form", FORMS)
def test_every_image_feature_is_read_undecoded_by_check_and_train_and_gives_the_same_rows(
    tmp_path, capsys, decodes, form, builder
):
    features = Features({"image": FORMS[form], "question": Value("string"), "answer": Value("string")})
    rows = {"image": [nest(FORMS[form], {"bytes": png(i), "path": None}) for i in range(3)]}
    rows |= {"question": [f"q{i}" for i in range(3)], "answer": [str(i) for i in range(3)]}
    Dataset.from_dict(rows, features=features).to_parquet(tmp_path / "rows.parquet")
    data = {"builder": builder, "path": "rows.parquet", "system_prompt": "none"}
    data |= {"columns": ["image", "answer"]} if builder == "files" else {}
    recipe = {
        "model": {"name": "builtin:tiny-vlm", "dtype": "float32"},
        "data": data,
        "rewards": [{"name": "xml_format"}],
        "trainer": {"output_dir": str(tmp_path / "out"), "max_steps": 1, "report_to": "none"},
    }
    (tmp_path / "recipe.yaml").write_text(yaml.safe_dump(recipe))
    assert cli_main(["check", str(tmp_path / "recipe.yaml")]) == 0, capsys.readouterr().err
    assert decodes[0] == 0  # check opened no image through datasets' decoder

    ds = build_dataset(data, base_dir=tmp_path).train  # what train builds
    assert decodes[0] == 0
    assert [p[-1]["content"] for p in ds["prompt"]] == ["q0", "q1", "q2"]
    column = "images" if builder == "images" else "image"
    cells = [ds[i][column] for i in range(3)]  # read: decoded now
    flat = [c if isinstance(c, PIL.Image) else c[0] if builder == "images" else nest_out(c) for c in cells]
    assert [im.getpixel((0, 0)) for im in flat] == [(40 * i, 0, 200 - 40 * i) for i in range(3)]
    assert decodes[0] >= 3


def nest_out(cell):
    while isinstance(cell, list):
        (cell,) = cell
    return cell
