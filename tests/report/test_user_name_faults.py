"""Names a user chooses (reward aliases) and files found in a run folder never break the report or the card, and
enter the HTML and Markdown escaped; special files where a run folder's state goes are refused, never waited on."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_trl.cli import main as cli_main
from grpo_trl.report.page import write_report

pytestmark = pytest.mark.fault  # a fault probe: `make faults` selects it

ALIASES = st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=24).filter(lambda a: a.strip())


def _run_folder(folder: Path, aliases: list[str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    history = []
    for step in (1, 2, 3):
        row = {"step": step, "loss": 0.1 * step, "reward": 0.2 * step, "learning_rate": 1e-3}
        for i, alias in enumerate(aliases):
            row[f"rewards/{alias}/mean"] = 0.1 * (step + i)
            row[f"reward_none_frac/{alias}"] = 0.0
        history.append(row)
    (folder / "trainer_state.json").write_text(json.dumps({"global_step": 3, "log_history": history}))
    return folder


@pytest.mark.slow
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(aliases=st.lists(ALIASES, min_size=1, max_size=2, unique=True))
def test_any_reward_alias_gives_a_report_with_it_escaped(tmp_path_factory, aliases):
    folder = _run_folder(tmp_path_factory.mktemp("run") / "out", ["$\\frac{x$", "<script>x</script>", *aliases])
    page = Path(write_report(folder)).read_text()  # was: matplotlib's TeX parser raised on "$\\frac{x$" (exit 70)
    assert "<script>x</script>" not in page and "&lt;script&gt;" in page


@pytest.mark.parametrize("kind", ["fifo", "folder", "/dev/zero"])
def test_a_special_file_as_the_runs_trainer_state_is_one_error_line(tmp_path, capsys, kind):
    folder = tmp_path / "out"
    folder.mkdir()
    state = folder / "trainer_state.json"
    if kind == "fifo":
        os.mkfifo(state)
    elif kind == "folder":
        state.mkdir()
    else:
        state.symlink_to(kind)
    assert cli_main(["report", str(folder)]) == 1  # a FIFO was waited on forever, /dev/zero read until memory ran out
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and err[0].startswith("error: ") and "internal error" not in err[0], err
