"""``data.pass_rate.file`` is read by ``check`` as ``train`` reads it, whatever the model: a missing file, a folder,
a FIFO, an empty file or malformed rates are one ``error:`` line naming the key, with a built-in model and with a Hub
model that is not there (check, offline, skips the model's checks but not the file's)."""

from __future__ import annotations

import json
import math
import os
import socket
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_trl.cli import main as cli_main
from grpo_trl.data import DataError, build_dataset
from grpo_trl.data.pass_rate import load_rates, prompt_hash

KEY = "data.pass_rate.file"


def _write(folder: Path, case: str) -> None:
    target = folder / "rates.json"
    if case == "folder":
        target.mkdir()
    elif case == "fifo":
        os.mkfifo(target)
    elif case != "missing":
        text = {
            "empty file": "",
            "not JSON": "{rates",
            "a list": "[1, 2]",
            "no rates": '{"model": "m"}',
            "rates a list": '{"rates": [0.5]}',
            "a rate a number": '{"rates": {"ab": 0.5}}',
            "a rate without p": '{"rates": {"ab": {"passed": 1, "n": 2}}}',
            "p text": '{"rates": {"ab": {"p": "0.5"}}}',
            "p above 1": '{"rates": {"ab": {"p": 1.5}}}',
            "p NaN": '{"rates": {"ab": {"p": NaN}}}',
            "p true": '{"rates": {"ab": {"p": true}}}',
        }[case]
        target.write_text(text)


CASES = ["missing", "folder", "fifo", "empty file", "not JSON", "a list", "no rates", "rates a list"]
CASES += ["a rate a number", "a rate without p", "p text", "p above 1", "p NaN", "p true"]
SOURCES = {
    "generated": {"builder": "countdown", "source": "generate", "size": 16},
    "local file": {"builder": "files", "path": "rows.jsonl"},
    "mixture": {"mixture": [{"builder": "files", "path": "rows.jsonl"}, {"builder": "countdown", "size": 8}]},
}


@pytest.fixture
def no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("check tried the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)


def _recipe(folder: Path, model: str, source: str) -> Path:
    rows = [{"question": f"q{i}", "solution": str(i)} for i in range(8)]
    (folder / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    data = json.loads(json.dumps(SOURCES[source]))
    band = {"file": "rates.json", "above": 0.0, "below": 1.0}
    for part in data.get("mixture", [data]):
        part["pass_rate"] = band
    recipe = {
        "model": {"name": model, "dtype": "float32"},
        "data": data,
        "rewards": [{"name": "xml_format"}],
        "trainer": {"output_dir": str(folder / "out"), "max_steps": 1, "report_to": "none"},
    }
    (folder / "recipe.yaml").write_text(yaml.safe_dump(recipe))
    return folder / "recipe.yaml"


MODELS = ["builtin:tiny", "no-such-org/no-such-model"]
# every case on generated data, a few on each other source
MATRIX = [(c, m, "generated") for c in CASES for m in MODELS]
MATRIX += [(c, m, s) for c in ("missing", "fifo", "p NaN") for m in MODELS for s in SOURCES if s != "generated"]


@pytest.mark.parametrize(("case", "model", "source"), MATRIX)
def test_a_pass_rate_file_train_cannot_read_is_one_check_error_whatever_the_model(
    tmp_path, capsys, no_network, case, model, source
):
    path = _recipe(tmp_path, model, source)
    _write(tmp_path, case)
    assert cli_main(["check", str(path)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{KEY}: " in err[0] and "rates.json" in err[0], err
    with pytest.raises(DataError) as train:  # what train builds refuses it in the same words
        build_dataset(yaml.safe_load(path.read_text())["data"], base_dir=tmp_path)
    assert str(train.value.problems[0]).split(": ", 1)[1] in err[0]


@pytest.mark.parametrize("model", MODELS)
def test_a_band_that_keeps_no_row_of_a_local_file_fails_check_as_it_fails_train(tmp_path, capsys, model):
    path = _recipe(tmp_path, model, "local file")
    rates = {prompt_hash([{"role": "user", "content": f"q{i}"}]): {"p": 1.0, "passed": 2, "n": 2} for i in range(8)}
    (tmp_path / "rates.json").write_text(json.dumps({"rates": rates}))
    assert cli_main(["check", str(path)]) == 1
    err = capsys.readouterr().err
    assert "empty after filtering" in err and "pass_rate (p >= 1, too easy)" in err
    rates = {h: {**r, "p": 0.5} for h, r in rates.items()}
    (tmp_path / "rates.json").write_text(json.dumps({"rates": rates}))
    assert cli_main(["check", str(path)]) == 0, capsys.readouterr().err


JSON = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=True) | st.integers() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rates=JSON | st.dictionaries(st.text(max_size=3), JSON | st.fixed_dictionaries({"p": JSON}), max_size=3))
def test_any_json_is_rates_in_0_1_or_one_data_error_naming_the_file(tmp_path, rates):
    path = tmp_path / "rates.json"
    path.write_text(json.dumps({"rates": rates}))
    try:
        got = load_rates(path)
    except DataError as exc:
        (problem,) = exc.problems
        assert problem.key == KEY and str(path) in problem.message
        return
    assert all(not isinstance(e["p"], bool) and 0 <= e["p"] <= 1 and not math.isnan(e["p"]) for e in got.values())
