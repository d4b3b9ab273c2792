"""Issue 27 part 2: a row without a value the prompt or a reward needs never trains silently. ``check``, ``grpo-trl
data`` and ``train`` drop it with a count and the first line (or refuse it, ``data.bad_rows: error``), through one
function (``grpo_trl.data.rows.drop_bad_rows``), eagerly or lazily."""

from __future__ import annotations

import json

import pytest
from datasets import Dataset
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_trl.data import build_dataset
from grpo_trl.data.rows import drop_bad_rows, needing
from grpo_trl.errors import DataError

ABSENT = object()  # the key is left out of the JSONL line
GOOD = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=8).filter(str.strip)
BAD = st.sampled_from([ABSENT, None, "", "   "])


def write(path, rows) -> None:
    lines = [json.dumps({k: v for k, v in row.items() if v is not ABSENT}) for row in rows]
    path.write_text("\n".join(lines) + "\n")


rows_st = st.lists(
    st.fixed_dictionaries({"question": st.one_of(GOOD, BAD), "solution": st.one_of(GOOD, BAD)}),
    min_size=2,
    max_size=12,
).filter(lambda rows: any(isinstance(r["question"], str) and r["question"].strip() for r in rows))


def bad(row) -> bool:
    return any(not (isinstance(v, str) and v.strip()) for v in row.values())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=rows_st, how=st.sampled_from(["drop", "error"]))
def test_a_jsonl_row_without_question_or_answer_is_dropped_with_count_and_first_line(tmp_path, rows, how):
    write(tmp_path / "d.jsonl", rows)
    cfg = {"builder": "files", "path": "d.jsonl", "system_prompt": "none", "bad_rows": how}
    broken = [i for i, r in enumerate(rows) if bad(r)]
    good = [r for r in rows if not bad(r)]
    if not broken or not good:
        return
    with needing(["solution"]):  # what the reward reads, as train / data / check say
        if how == "error":
            with pytest.raises(DataError) as info:
                build_dataset(cfg, base_dir=tmp_path)
            assert f"{len(broken)} row(s) with a missing or empty" in str(info.value)
            assert f"the first at line {broken[0] + 1} of d.jsonl" in str(info.value)
            assert info.value.problems[0].key == "data.bad_rows"
            return
        result = build_dataset(cfg, base_dir=tmp_path)
    assert [r["prompt"][-1]["content"] for r in result.train] == [r["question"] for r in good]
    assert [r["solution"] for r in result.train] == [r["solution"] for r in good]
    assert f"dropped: {len(broken)} by a missing or empty user/solution (first: line {broken[0] + 1} of d.jsonl)" in (
        result.summary()
    )


def test_without_needing_only_the_prompt_is_needed_and_a_template_field_counts(tmp_path):
    write(tmp_path / "d.jsonl", [{"a": "x", "b": "1"}, {"a": None, "b": "2"}, {"a": "y", "b": None}])
    cfg = {
        "builder": "files",
        "path": "d.jsonl",
        "system_prompt": "none",
        "question_column": "a",
        "user_template": "{a} / {b}",
    }
    result = build_dataset(cfg, base_dir=tmp_path)
    assert [r["prompt"][0]["content"] for r in result.train] == ["x / 1"]  # never the text "None"
    assert "dropped: 2 by a missing or empty user (first: line 2 of d.jsonl)" in result.summary()


def test_csv_counts_the_header_line(tmp_path):
    (tmp_path / "d.csv").write_text("question,solution\nq1,1\n,2\nq3,\n")
    with needing(["solution"]):
        result = build_dataset({"builder": "files", "path": "d.csv", "system_prompt": "none"}, base_dir=tmp_path)
    assert len(result.train) == 1 and "(first: line 3 of d.csv)" in result.summary()


@given(values=st.lists(st.one_of(GOOD, BAD.filter(lambda v: v is not ABSENT)), min_size=1, max_size=10))
@settings(max_examples=30, deadline=None)
def test_lazily_on_an_iterable_dataset(values):
    rows = [{"user": "q", "solution": v} for v in values]
    lazy = Dataset.from_list(rows).to_iterable_dataset()
    kept, dropped = drop_bad_rows(lazy, ["solution"])
    assert dropped == {} and [r["solution"] for r in kept] == [v for v in values if v is not None and v.strip()]
    refused, _ = drop_bad_rows(lazy, ["solution"], how="error")
    if any(v is None or not v.strip() for v in values):
        with pytest.raises(DataError, match="a row with a missing or empty user/solution, the first at row"):
            list(refused)


def test_chat_prompts_and_lists():
    ds = Dataset.from_list(
        [
            {"prompt": [{"role": "user", "content": "hi"}], "tests": ["assert 1"]},
            {"prompt": None, "tests": ["assert 1"]},
            {"prompt": [{"role": "user", "content": ""}], "tests": ["assert 1"]},  # environment's placeholder
            {"prompt": [{"role": "user", "content": "hi"}], "tests": []},
        ]
    )
    kept, dropped = drop_bad_rows(ds, ["tests"], where="hub/name")
    assert len(kept) == 2 and dropped == {"a missing or empty prompt/tests (first: row 2 of hub/name)": 2}
    assert len(drop_bad_rows(Dataset.from_list([{"user": ""}, {"user": None}]))[0]) == 1  # environment's rows


# ------------------------------------------------------------------------------------------------ the three commands
REWARD = """from grpo_trl import register_reward


@register_reward("exact")
def exact(completions, answer, **kwargs):
    return [float(str(a) in str(c)) for c, a in zip(completions, answer)]
"""


@pytest.fixture
def bad_data_recipe(tmp_path, tiny_model):
    from tests.conftest import tiny_recipe

    (tmp_path / "rewards.py").write_text(REWARD)
    rows = [{"question": f"{i}+1?", "answer": str(i + 1)} for i in range(8)]
    rows[2] = {"answer": "3"}  # no question: trained as the prompt "None" before
    rows[5] = {"question": "6+1?", "answer": None}  # no answer: a TypeError in the reward before
    write(tmp_path / "data.jsonl", rows)
    data = {"builder": "files", "path": "data.jsonl", "system_prompt": "none"}

    def make(**extra):
        return tiny_recipe(
            tmp_path,
            tiny_model,
            data={**data, **extra},
            rewards=[{"name": "exact"}],
            extra={"plugins": ["rewards.py"]},
        )

    return make


@pytest.mark.slow
def test_check_data_and_train_count_the_same_rows(bad_data_recipe, capsys, caplog):
    from grpo_trl.cli import main
    from grpo_trl.train import build_trainer

    path = str(bad_data_recipe())
    said = "2 row(s) with a missing or empty user/answer (first: line 3 of data.jsonl)"  # once, not per build
    assert main(["check", path]) == 0
    assert "OK" in capsys.readouterr().out
    assert [r.getMessage() for r in caplog.records if "row(s)" in r.getMessage()] == [
        f"dropped {said}; data.bad_rows: error refuses them"
    ]
    assert main(["data", path, "-n", "1"]) == 0
    assert (
        "dropped: 2 by a missing or empty user/answer (first: line 3 of data.jsonl); train 6"
        in capsys.readouterr().out
    )
    trainer = build_trainer(path)
    assert len(trainer.train_dataset) == 6 and None not in trainer.train_dataset["answer"]

    refused = str(bad_data_recipe(bad_rows="error"))
    assert main(["check", refused]) == 1
    err = capsys.readouterr().err
    assert "error: " in err and "data.bad_rows" in err and "2 row(s) with a missing or empty user/answer" in err


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    # a file without any solution key has no solution column: the reward's column check refuses it, not bad_rows
    rows=st.lists(
        st.fixed_dictionaries({"question": st.one_of(GOOD, BAD), "solution": st.one_of(GOOD, BAD)}), min_size=1
    ).filter(lambda rows: any(r["solution"] is not ABSENT for r in rows)),
    how=st.sampled_from(["drop", "error"]),
)
def test_check_refuses_a_file_iff_train_refuses_it(tmp_path, rows, how):
    """A file whose every row lacks a value: check said OK (it warned of the drops), then train stopped on an empty
    dataset. One rule in ``build_one`` now: check's scan and train's build refuse the same files."""
    from grpo_trl.data.shape import check_rows

    write(tmp_path / "d.jsonl", rows)
    cfg = {"builder": "files", "path": "d.jsonl", "system_prompt": "none", "bad_rows": how}
    verdicts = []
    for run in (lambda: check_rows(cfg, tmp_path, ["solution"]), lambda: build_dataset(cfg, base_dir=tmp_path)):
        with needing(["solution"]):
            try:
                run()
                verdicts.append("ok")
            except DataError as exc:
                verdicts.append(str(exc).split(":")[0])
    assert verdicts[0] == verdicts[1]
    assert (verdicts[0] == "ok") == (all(not bad(r) for r in rows) or (how == "drop" and not all(map(bad, rows))))
