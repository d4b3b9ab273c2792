"""The generic `hub` builder on local files written here: string prompts (TRL's standard format) and message lists
(conversational), the solution column, kept columns, every malformed input one DataError; and a real tiny training
run on plain-string prompts."""

from __future__ import annotations

import contextlib
import io

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_trl.data import DataError, build_dataset, expected_size
from grpo_trl.data.shape import dataset_columns
from grpo_trl.eval.benchmarks import BENCHMARKS
from tests.data.test_builders import write_jsonl

ROWS = [
    {"question": "What is 2 + 3?", "answer": "5", "level": "easy"},
    {"question": "What is 7 * 6?", "answer": "42", "level": "easy"},
    {"question": "What is 12 - 5?", "answer": "7", "level": "hard"},
]
CHAT_ROWS = [
    {"prompt": [{"role": "user", "content": "Say hi."}], "solution": "hi"},
    {"prompt": [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "Say yo."}], "solution": "yo"},
]


@pytest.fixture
def qa_file(tmp_path):
    return write_jsonl(tmp_path / "qa.jsonl", ROWS)


def test_string_prompts_stay_strings_with_solution_and_columns(qa_file):
    cfg = {"builder": "hub", "path": str(qa_file), "prompt_column": "question", "solution_column": "answer"}
    ds = build_dataset(cfg).train
    assert ds["prompt"] == [r["question"] for r in ROWS]  # TRL's standard format, no chat template
    assert ds["solution"] == ["5", "42", "7"] and ds["level"] == ["easy", "easy", "hard"]
    assert "question" not in ds.column_names
    assert dataset_columns(cfg) >= {"solution", "level", "answer"}


def test_system_prompt_or_conversational_format_makes_messages(qa_file):
    base = {"builder": "hub", "path": str(qa_file), "prompt_column": "question"}
    ds = build_dataset({**base, "system_prompt": "Be brief."}).train
    assert ds[0]["prompt"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is 2 + 3?"},
    ]
    ds = build_dataset({**base, "prompt_format": "conversational"}).train
    assert ds[0]["prompt"] == [{"role": "user", "content": "What is 2 + 3?"}]


def test_message_list_prompts_are_kept_and_get_a_missing_system_turn(tmp_path):
    path = write_jsonl(tmp_path / "chat.jsonl", CHAT_ROWS)
    ds = build_dataset({"builder": "hub", "path": str(path)}).train
    assert ds[1]["prompt"][0] == {"role": "system", "content": "Be kind."} and ds["solution"] == ["hi", "yo"]
    ds = build_dataset({"builder": "hub", "path": str(path), "system_prompt": "Sys prompt."}).train
    assert ds[0]["prompt"][0] == {"role": "system", "content": "Sys prompt."}
    assert [t["role"] for t in ds[1]["prompt"]] == ["system", "user"]  # the dataset's own system turn is kept


def test_columns_limits_what_rewards_see(qa_file):
    cfg = {"builder": "hub", "path": str(qa_file), "prompt_column": "question", "columns": ["level"]}
    ds = build_dataset(cfg).train
    assert sorted(ds.column_names) == ["level", "prompt"]


@pytest.mark.parametrize(
    "extra, match",
    [
        ({"prompt_column": "nope"}, r"data.prompt_column: .*missing column\(s\) nope;"),
        ({"prompt_column": "question", "columns": ["missing"]}, r"data.columns: .*missing column\(s\) missing;"),
        ({"prompt_column": "question", "solution_column": "missing"}, "solution_column"),
        ({"prompt_column": "question", "prompt_format": "chat"}, "prompt_format"),
        ({"prompt_column": "question", "prompt_format": "standard", "system_prompt": "Be brief."}, "system"),
        ({"prompt_column": "level", "name": "x/y"}, "exactly one of name"),
        ({"prompt_column": "question", "unknown_option": 1}, "unknown option"),
    ],
)
def test_bad_options_are_one_data_error(qa_file, extra, match):
    with pytest.raises(DataError, match=match):
        build_dataset({"builder": "hub", "path": str(qa_file), **extra})


@pytest.mark.parametrize("bad", [3, None, {"role": "user"}, [{"no": "role"}], ["text"]])
def test_malformed_prompt_values_name_the_row(tmp_path, bad):
    # every row the same bad type (a column mixing types is read as text by load_file)
    path = write_jsonl(tmp_path / "bad.jsonl", [{"prompt": bad, "solution": "1"}, {"prompt": bad, "solution": "2"}])
    with pytest.raises(DataError, match=r"row \d+: 'prompt'"):
        build_dataset({"builder": "hub", "path": str(path)})


def test_standard_format_refuses_messages(tmp_path):
    path = write_jsonl(tmp_path / "chat.jsonl", CHAT_ROWS)
    with pytest.raises(DataError, match="message list"):
        build_dataset({"builder": "hub", "path": str(path), "prompt_format": "standard"})


def test_unreachable_hub_dataset_says_how_to_use_a_local_file():
    with pytest.raises(DataError, match="data.path"):
        build_dataset({"builder": "hub", "name": "no-such-org/no-such-dataset-xyz"})


def test_planned_size_follows_the_source(qa_file, tmp_path):
    assert expected_size({"builder": "hub", "path": str(qa_file), "prompt_column": "question"}) == (3, True)
    assert expected_size({"builder": "hub", "name": "a/b"}) == (None, False)
    # math: the known 7,500 rows describe its default Hub source only
    assert expected_size({"builder": "math"})[0] == 7500
    assert expected_size({"builder": "math", "source": "someone/other-math"})[0] is None
    import pandas as pd

    path = tmp_path / "m.parquet"
    pd.DataFrame({"problem": ["a", "b"], "solution": ["\\boxed{1}", "\\boxed{2}"]}).to_parquet(path)
    assert expected_size({"builder": "math", "path": str(path)}) == (2, True)


def test_token_filter_works_on_string_prompts(qa_file, tiny_model):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model)
    cfg = {"builder": "hub", "path": str(qa_file), "prompt_column": "question"}
    lengths = [len(tok(r["question"], add_special_tokens=False)["input_ids"]) for r in ROWS]
    limit = sorted(lengths)[1]
    result = build_dataset({**cfg, "max_prompt_tokens": limit}, tokenizer=tok)
    assert len(result.train) == sum(n <= limit for n in lengths) and result.dropped["max_prompt_tokens"] >= 0


@pytest.mark.slow
def test_plain_string_prompts_train_end_to_end(tmp_path, make_recipe):
    """A real GRPO run on the tiny model where prompts are plain strings: TRL samples from the raw text."""
    from grpo_trl.rewards import register_reward, unregister_reward
    from grpo_trl.train import train

    write_jsonl(tmp_path / "qa.jsonl", ROWS * 4)
    seen: dict[str, set] = {"prompts": set(), "completions": set()}

    @register_reward("t_hub_seen")
    def seen_reward(completions, prompts, solution, **kwargs):
        seen["prompts"] |= {type(p).__name__ for p in prompts}
        seen["completions"] |= {type(c).__name__ for c in completions}
        return [float(len(c) % 3) for c in completions]

    try:
        path = make_recipe(
            data={"builder": "hub", "path": "qa.jsonl", "prompt_column": "question", "solution_column": "answer"},
            rewards=[{"name": "t_hub_seen"}],
            trainer={"max_steps": 2},
        )
        result = train(path)
    finally:
        unregister_reward("t_hub_seen")
    assert result.global_step == 2
    assert seen == {"prompts": {"str"}, "completions": {"str"}}  # standard format all the way through


def test_data_command_shows_string_prompts_as_they_are(tmp_path, make_recipe, capsys):
    from grpo_trl.cli import main as cli_main

    write_jsonl(tmp_path / "qa.jsonl", ROWS)
    path = make_recipe(
        data={"builder": "hub", "path": "qa.jsonl", "prompt_column": "question", "solution_column": "answer"}
    )
    assert cli_main(["data", str(path), "-n", "1"]) == 0
    out = capsys.readouterr().out
    assert "--- prompt 0 as the model sees it ---\nWhat is 2 + 3?\n" in out and "<|im_start|>" not in out


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    benchmark=st.sampled_from(sorted(BENCHMARKS)),
    failure=st.sampled_from([ConnectionError("no route"), OSError("offline"), ValueError("gated"), TimeoutError()]),
)
def test_a_benchmark_the_hub_cannot_serve_is_one_error_naming_its_local_copy(monkeypatch, benchmark, failure):
    """``heldout.benchmark`` and ``eval --benchmark`` load through ``load_hub_or_file``: a Hub that does not answer is
    one error line naming the key of a local copy (it was exit 70 in a training run)."""
    import datasets

    from grpo_trl.eval.benchmarks import load_rows

    def unreachable(*args, **kwargs):
        raise failure

    monkeypatch.setattr(datasets, "load_dataset", unreachable)
    with pytest.raises(DataError, match=r"--data \(heldout.data in a recipe\)"):
        load_rows(benchmark)


@pytest.mark.parametrize("name", ["rows.ndjson", "rows.jsonlines", "rows.NDJSON", "rows.ndjson.gz"])
def test_json_lines_under_its_other_names_is_read(tmp_path, name):
    """.ndjson and .jsonlines are JSON Lines too (eval --benchmark --data read them before it shared this reader)."""
    import gzip

    from grpo_trl.data.sources import load_file

    text = '{"prompt": "a", "solution": "1"}\n{"prompt": "b", "solution": "2"}\n'
    path = tmp_path / name
    path.write_bytes(gzip.compress(text.encode()) if name.endswith(".gz") else text.encode())
    assert list(load_file(path)["prompt"]) == ["a", "b"]


@pytest.mark.parametrize("name", ["rows.ndjson", "rows.jsonlines", "rows.csv.gz"])
def test_a_bad_row_of_a_line_file_is_named_by_its_line(tmp_path, name):
    import gzip

    from grpo_trl.data.rows import needing

    text = "prompt,solution\na,1\nb,\n" if ".csv" in name else '{"prompt": "a", "solution": "1"}\n{"prompt": "b"}\n'
    path = tmp_path / name
    path.write_bytes(gzip.compress(text.encode()) if name.endswith(".gz") else text.encode())
    line = 3 if ".csv" in name else 2
    with needing(["solution"]), pytest.raises(DataError, match=f"line {line} of {name}"):
        build_dataset({"builder": "hub", "path": name, "bad_rows": "error"}, base_dir=tmp_path)


@pytest.mark.parametrize(
    "option",
    [
        "builder: hub\n  prompt_column: no",
        "builder: images\n  image_column: false",
        "builder: images\n  answer_column: off",
    ],
)
def test_a_column_named_by_yaml_no_is_one_error_line_not_an_internal_error(tmp_path, capsys, option):
    """YAML 1.1 reads an unquoted no/off/false as a bool: the column "no" is named missing, exit 1 (was exit 70)."""
    from grpo_trl.cli import main

    (tmp_path / "q.jsonl").write_text(
        '{"question": "1+1?", "solution": "2", "prompt": "hi", "answer": "2", "image": null}\n'
    )
    recipe = tmp_path / "r.yaml"
    recipe.write_text(
        f"model: {{name: builtin:tiny}}\ndata:\n  {option}\n  path: {tmp_path / 'q.jsonl'}\n"
        "rewards: [{name: accuracy}]\ntrainer: {output_dir: " + str(tmp_path / "out") + ", max_steps: 1}\n"
    )
    try:
        rc = main(["check", str(recipe)])
    except SystemExit as exc:
        rc = exc.code
    out = capsys.readouterr()
    errors = [line for line in (out.out + out.err).splitlines() if line.startswith("error:")]
    assert rc == 1, out
    assert any("missing column(s) no;" in line for line in errors), errors  # YAML 1.1 no: the word


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    option=st.sampled_from(
        [
            "builder: files\n  path: {v}",
            "builder: files\n  path: {q}\n  question_column: {v}",
            "builder: files\n  path: {q}\n  user_template: {v}",
            "builder: math\n  path: {q}\n  problem_column: {v}",
            "builder: math\n  path: {q}\n  solution_column_in: {v}",
            "builder: countdown\n  source: generate\n  size: 4\n  max_number: {v}",
        ]
    ),
    value=st.sampled_from(["no", "off", "false", "0", "-1"]),
)
def test_a_builder_option_yaml_reads_oddly_is_refused_in_one_line_never_an_internal_error(tmp_path, option, value):
    """YAML's no/off/false for a text option (a bool) and a count below 1: exit 1 with a data.* line, never 70."""
    from grpo_trl.cli import main

    q = tmp_path / "q.jsonl"
    q.write_text('{"question": "1+1?", "solution": "2", "problem": "p"}\n')
    recipe = tmp_path / "r.yaml"
    recipe.write_text(
        "model: {name: builtin:tiny}\ndata:\n  " + option.format(v=value, q=q) + "\n"
        "rewards: [{name: think_format}]\ntrainer: {output_dir: " + str(tmp_path / "out") + ", max_steps: 1}\n"
    )
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(["check", str(recipe)])
        except SystemExit as exc:
            rc = exc.code
    text = out.getvalue() + err.getvalue()
    assert rc in (0, 1), text
    assert rc == 0 or any(line.startswith("error:") and ": data" in line for line in text.splitlines()), text
