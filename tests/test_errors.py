"""The one error line: a user-given name (a data column, a reward, a key) is shown visibly, whatever it holds."""

from __future__ import annotations

import json

import pytest
import yaml
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from grpo_trl.cli import main as cli_main

HOSTILE = [
    "",
    " ",
    "  ",
    "\t",
    "\n",
    "a\nb",
    "\r",
    "x\r\ny",
    "\x00",
    "\x1b[31mred",
    "\x1b[2J",
    "\u200b",
    "\u2028",
    " a",
]
NAMES = st.one_of(st.sampled_from(HOSTILE), st.text(max_size=8))
KINDS = {  # what the recipe gets wrong -> the key its error line names
    "data.prompt_column": "data.prompt_column",  # the name is a column the data lacks
    "data column": "data.prompt_column",  # the name is a column the data has (listed in the line)
    "rewards.0.name": "rewards.0.name",
    "trainer key": "trainer.",
}


def visible(name: str) -> str:
    """How a name must read on an error line: as it is when that shows it, else quoted."""
    return name if name and name.strip() == name and name.isprintable() else repr(name)


@pytest.mark.parametrize("kind", [pytest.param(k, marks=pytest.mark.slow) if k == "data column" else k for k in KINDS])
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=NAMES)
@example(name="")
@example(name=" ")
@example(name="a\nb")
def test_a_name_on_an_error_line_is_visible_and_never_splits_it(tmp_path, capsys, kind, name):
    """``prompt_column: ""`` printed ``missing column(s) ;`` and a column named " " vanished from ``the data has:``:
    every name a line shows is quoted when it is empty, blank at an end or holds what does not print, and a newline
    in it never starts a second line (one problem, one ``error:`` line; ordinary names read as before)."""
    assume(name not in ("question", "answer", "prompt", "nope") and "." not in name)
    assume(kind != "data column" or "\x00" not in name)  # Arrow cannot cast a column named with a NUL
    row = {"question": "1+1", "answer": "2", **({name: "x"} if kind == "data column" else {})}
    (tmp_path / "d.jsonl").write_text(json.dumps(row) + "\n")
    column = {"data.prompt_column": name, "data column": "nope"}.get(kind, "question")
    recipe = {
        "model": {"name": "builtin:tiny"},
        "data": {"builder": "hub", "path": "d.jsonl", "prompt_column": column, "solution_column": "answer"},
        "rewards": [{"name": name if kind == "rewards.0.name" else "accuracy"}],
        "trainer": {
            "output_dir": "out",
            "max_steps": 1,
            "use_cpu": True,
            **({name: 1} if kind == "trainer key" else {}),
        },
    }
    (tmp_path / "recipe.yaml").write_text(yaml.safe_dump(recipe))
    assert cli_main(["check", str(tmp_path / "recipe.yaml")]) == 1
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert all(line.startswith("error: ") and line.isprintable() for line in lines), lines
    (line,) = lines
    if kind == "rewards.0.name":  # a reward's name is always quoted
        assert ": rewards.0.name: " in line and (repr(name) if name else "must not be empty") in line, line
    elif kind == "trainer key":
        assert f": trainer.{visible(name)}: " in line, line
    else:
        assert f": {KINDS[kind]}: " in line and f"{visible(name)}" in line, line
        shown = line.rsplit("the data has: ", 1)[1] if kind == "data column" else line
        assert visible(name) in shown.split(", ") or f"missing column(s) {visible(name)};" in shown, line
