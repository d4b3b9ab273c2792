"""``grpo-trl check`` says OK to a ``data:`` section exactly when the data train builds builds: hostile values of the
builders' options and files (a number where text belongs, a template that cannot format a row or pads it too wide,
a mixture whose size, weights or columns cannot be met) are one ``error:`` line in both, never exit 70."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from grpo_trl.cli import main as cli_main
from grpo_trl.data import DataError, build_dataset
from grpo_trl.data.rows import needing

GENERATED = {"builder": "countdown", "source": "generate", "size": 8}
GSM = {"builder": "gsm8k", "source": "generate", "size": 8}
CASES = {
    "math: a number where text belongs": {"builder": "math", "path": "ints.jsonl"},
    "gsm8k: a number where text belongs": {"builder": "gsm8k", "path": "ints.jsonl"},
    "code: test_list not a list": {"builder": "code", "path": "mbpp.jsonl"},
    "files: format code of another type": {"builder": "files", "path": "qa.jsonl", "user_template": "{question:d}"},
    "files: no such attribute": {"builder": "files", "path": "qa.jsonl", "user_template": "{question.nope}"},
    "files: index out of range": {"builder": "files", "path": "qa.jsonl", "user_template": "{question[99]}"},
    "files: unknown conversion": {"builder": "files", "path": "qa.jsonl", "user_template": "{question!z}"},
    "files: width from a column": {"builder": "files", "path": "qa.jsonl", "user_template": "{question:{problem}}"},
    "files: a width past the bound": {"builder": "files", "path": "qa.jsonl", "user_template": "{question:>20000}"},
    "files: a fine template": {"builder": "files", "path": "qa.jsonl", "user_template": "{question:.1} {solution!r}"},
    "countdown: min_numbers above max_numbers": {**GENERATED, "min_numbers": 5, "max_numbers": 3},
    "squares: a picture past 1024 pixels": {"builder": "squares", "size": 2, "image_size": 5000},
    "files: eval_size as large as the file": {"builder": "files", "path": "qa.jsonl", "eval_size": 8},
    "mixture: larger than its parts": {"size": 100, "mixture": [GENERATED, GSM]},
    "mixture: a size that rounds every part to 0": {"size": 1, "mixture": [GENERATED, GSM]},
    "mixture: weights 1e308 apart": {"mixture": [{**GENERATED, "weight": 1e308}, {**GSM, "weight": 1e-308}]},
    "mixture: text and conversational prompts": {"mixture": [{"builder": "hub", "path": "qa.jsonl"}, GENERATED]},
    "mixture: local and generated": {"mixture": [{"builder": "files", "path": "qa.jsonl"}, GENERATED]},
}


def _files(folder: Path) -> None:
    def lines(rows: list[dict]) -> str:
        return "".join(json.dumps(r) + "\n" for r in rows)

    qa = [{"question": f"q{i}", "solution": str(i), "problem": "20000", "prompt": f"p{i}"} for i in range(8)]
    (folder / "qa.jsonl").write_text(lines(qa))
    (folder / "ints.jsonl").write_text(
        lines([{"question": i, "answer": i, "problem": i, "solution": i} for i in range(4)])
    )
    (folder / "mbpp.jsonl").write_text(lines([{"text": "t", "test_list": 5}] * 4))


@pytest.mark.parametrize("model", ["builtin:tiny", "no-such-org/no-such-model"])  # not local: still checked
@pytest.mark.parametrize("case", CASES)
def test_check_says_ok_exactly_when_the_data_train_builds_builds(tmp_path, capsys, case, model):
    _files(tmp_path)
    recipe = {
        "model": {"name": model, "dtype": "float32"},
        "data": CASES[case],
        "rewards": [{"name": "xml_format"}],
        "trainer": {"output_dir": str(tmp_path / "out"), "max_steps": 1, "report_to": "none"},
    }
    (tmp_path / "recipe.yaml").write_text(yaml.safe_dump(recipe))
    rc = cli_main(["check", str(tmp_path / "recipe.yaml")])
    err = capsys.readouterr().err.strip().splitlines()
    try:
        with needing([]):
            build_dataset(CASES[case], base_dir=tmp_path)  # what train builds (its tokenizer only filters rows)
    except DataError as exc:
        (problem,) = exc.problems
        key = problem.key or re.match(r"data[\w.]*", problem.message)[0]  # "data.mixture: ..." names it itself
        assert rc == 1 and len(err) == 1 and f": {key}: " in err[0], err  # one line, at the key train names
        return
    assert rc == 0 and case in FINE, err


FINE = ("files: a fine template", "mixture: weights 1e308 apart", "mixture: local and generated")  # the rest: refused
