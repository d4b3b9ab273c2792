"""``grpo-trl filter`` + ``data.pass_rate``: pass rates measured per prompt (through tests/fake_openai.py, a local fake
of an external OpenAI-compatible server, answering right, wrong or half-right per prompt), stored by prompt hash,
and the band keeping only prompts that teach, with drops counted by reason."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grpo_trl.check import load_recipe
from grpo_trl.cli import main
from grpo_trl.data import DataError, build_dataset, validate_data_config
from grpo_trl.data.pass_rate import prompt_hash
from grpo_trl.eval.backends import render
from tests.fake_openai import FakeOpenAI

DATA = {"builder": "countdown", "source": "generate", "size": 12, "system_prompt": "none"}
messages = st.lists(
    st.fixed_dictionaries({"role": st.sampled_from(["system", "user"]), "content": st.text(max_size=30)}),
    min_size=1,
    max_size=3,
)


@given(messages, messages)
def test_prompt_hash_depends_on_content_only(a, b):
    assert prompt_hash(a) == prompt_hash([dict(reversed(list(m.items()))) for m in a])  # key order is irrelevant
    assert len(prompt_hash(a)) == 16
    if a != b:
        assert prompt_hash(a) != prompt_hash(b)


@pytest.mark.parametrize(
    "option, key",
    [
        ("file.json", "data.pass_rate"),
        ({}, "data.pass_rate.file"),
        ({"file": ""}, "data.pass_rate.file"),
        ({"file": "r.json", "above": "0"}, "data.pass_rate.above"),
        ({"file": "r.json", "below": True}, "data.pass_rate.below"),
        ({"file": "r.json", "below": float("inf")}, "data.pass_rate.below"),
        ({"file": "r.json", "above": 0.8, "below": 0.2}, "data.pass_rate"),
        ({"file": "r.json", "unscored": "maybe"}, "data.pass_rate.unscored"),
        ({"file": "r.json", "abve": 0.1}, "data.pass_rate.abve"),
    ],
)
def test_bad_band_options_are_reported_by_check(option, key):
    problems = validate_data_config({**DATA, "pass_rate": option})
    assert [p.key for p in problems] == [key]
    assert validate_data_config({**DATA, "pass_rate": {"file": "r.json", "above": None, "below": 0.5}}) == []


def _rates_file(tmp_path, prompts, rates):
    path = tmp_path / "rates.json"
    path.write_text(
        json.dumps({"rates": {prompt_hash(p): {"p": r, "passed": 0, "n": 8} for p, r in zip(prompts, rates)}})
    )
    return path


def test_band_keeps_the_middle_and_counts_drops_by_reason(tmp_path):
    prompts = list(build_dataset(DATA).train["prompt"])
    _rates_file(tmp_path, prompts[:10], [0.0, 0.0, 0.0, 1.0, 1.0, 0.5, 0.125, 0.875, 0.5, 0.5])  # 2 unscored
    result = build_dataset({**DATA, "pass_rate": {"file": "rates.json"}}, base_dir=tmp_path)
    assert len(result.train) == 7  # 5 in the band + 2 unscored kept
    assert result.dropped == {"pass_rate (p <= 0, too hard)": 3, "pass_rate (p >= 1, too easy)": 2}
    assert "3 by pass_rate (p <= 0, too hard)" in result.summary()
    result = build_dataset(
        {**DATA, "pass_rate": {"file": "rates.json", "above": None, "below": 0.6, "unscored": "drop"}},
        base_dir=tmp_path,
    )
    assert len(result.train) == 3 + 4  # p = 0 kept now; 0.875 and 1.0 dropped; the 2 unscored dropped
    assert result.dropped == {"pass_rate (p >= 0.6, too easy)": 3, "pass_rate (unscored)": 2}


@pytest.mark.parametrize("content", [None, "{not json", '{"rates": [1, 2]}', '{"rates": {"ab": {"q": 1}}}'])
def test_missing_or_foreign_rates_file_is_one_data_error(tmp_path, content):
    if content is not None:
        (tmp_path / "rates.json").write_text(content)
    with pytest.raises(DataError, match="data.pass_rate.file: .*rates.json (does not exist|is not a pass-rate file)"):
        build_dataset({**DATA, "pass_rate": {"file": "rates.json"}}, base_dir=tmp_path)


@pytest.mark.slow
def test_filter_measures_stores_and_the_band_keeps_the_prompts_that_teach(tmp_path, make_recipe, capsys):
    path = make_recipe(data=DATA, rewards=[{"name": "countdown"}])
    recipe = load_recipe(path)
    from grpo_trl.models.load import load_tokenizer

    tokenizer = load_tokenizer(recipe.model, recipe.model["name"], recipe.file, recipe.base_dir)
    rows = build_dataset(DATA).train
    kind = {
        render(tokenizer, p): (i % 3, eq) for i, (p, eq) in enumerate(zip(rows["prompt"], rows["reference_equation"]))
    }

    def reply(body):  # i % 3 == 0: always right; 1: always wrong; 2: right on even seeds (half the samples)
        k, equation = kind[body["prompt"]]
        right = k == 0 or (k == 2 and body["seed"] % 2 == 0)
        return f"<think>x</think>\n<answer>{equation if right else '1 + 1'}</answer>"

    with FakeOpenAI(models=["served"], reply=reply) as server:
        argv = ["filter", str(path), "--backend", "endpoint", "--model", "served", "--base-url", server.base_url]
        assert main([*argv, "--n", "4"]) == 0
    out = capsys.readouterr().out
    summary = json.loads(out[: out.index("}") + 1])
    assert summary["prompts"] == 12 and summary["all_fail (p = 0)"] == 4 and summary["all_pass (p = 1)"] == 4
    assert summary["mixed (0 < p < 1)"] == 4 and "pass_rate: {file: recipe.pass_rates.json" in out
    stored = json.loads((tmp_path / "recipe.pass_rates.json").read_text())
    assert stored["n"] == 4 and stored["backend"] == "endpoint"
    assert {v["p"] for v in stored["rates"].values()} == {0.0, 0.5, 1.0}

    kept = build_dataset({**DATA, "pass_rate": {"file": "recipe.pass_rates.json"}}, base_dir=tmp_path)
    assert sorted(kept.train["reference_equation"]) == sorted(rows["reference_equation"][2::3])
    assert kept.dropped == {"pass_rate (p <= 0, too hard)": 4, "pass_rate (p >= 1, too easy)": 4}


def test_check_names_the_pass_rate_band_as_what_makes_the_row_count_a_bound(tmp_path, make_recipe, capsys):
    (tmp_path / "rates.json").write_text(json.dumps({"rates": {}}))
    path = make_recipe(data={**DATA, "pass_rate": {"file": "rates.json"}}, rewards=[{"name": "countdown"}])
    assert main(["check", str(path)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("  data "))
    assert "12 at most (data.pass_rate drop" in line and "token" not in line  # no token filter in this recipe


def test_filter_bad_values_are_error_lines(capsys, make_recipe):
    assert main(["filter", str(make_recipe()), "--n", "0"]) == 1
    assert capsys.readouterr().err.strip() == "error: grpo-trl filter: --n: must be an integer >= 1, got 0"


@pytest.mark.parametrize("where", ["folder", "under-a-file"])
def test_an_output_that_cannot_be_written_is_one_error_line_before_generating(capsys, make_recipe, tmp_path, where):
    (tmp_path / "folder").mkdir()
    (tmp_path / "a-file").write_text("x")
    output = tmp_path / ("folder" if where == "folder" else "a-file/rates.json")
    argv = ["filter", str(make_recipe()), "--n", "1", "--limit", "1", "--output", str(output)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: grpo-trl filter: --output: ") and "generating" not in err


def test_limit_counts_training_prompts_and_a_foreign_rates_file_is_replaced(capsys, make_recipe, tmp_path):
    """--limit N scores N training prompts (the recipe's eval_size rows are held out first, as in training)."""
    data = {"builder": "countdown", "source": "generate", "size": 16, "system_prompt": "none", "eval_size": 4}
    output = tmp_path / "rates.json"
    output.write_text('{"rates": [1, 2]}')
    argv = ["filter", str(make_recipe(data=data)), "--n", "1", "--limit", "3", "--max-new-tokens", "2"]
    assert main([*argv, "--output", str(output)]) == 0
    assert len(json.loads(output.read_text())["rates"]) == 3
