"""Adversarial probes of the card, export, init_kwargs, images and refill features that found a broken promise;
each test failed before its fix."""

from __future__ import annotations

import pytest
import yaml

from grpo_trl.cli import main

pytestmark = pytest.mark.fault  # a fault probe: `make faults` selects it


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "kind"), [("README.md", "link"), ("README.md", "folder"), ("completions.jsonl", "link")]
)
def test_resume_refuses_a_link_where_the_run_writes_in_place(make_recipe, tmp_path, capsys, name, kind):
    """TRL's create_model_card writes OUTPUT_DIR/README.md at every checkpoint save with open(..., "w"), and
    completions.jsonl is appended to: through a link a user put there, onto their own file. --resume refuses, with
    one error line, and writes nothing there."""
    path = make_recipe(trainer={"max_steps": 1, "save_strategy": "steps", "save_steps": 1})
    assert main(["train", str(path)]) == 0
    out = tmp_path / "out"
    (out / name).unlink()
    mine = tmp_path / "mine.txt"
    mine.write_text("the user's own notes")
    if kind == "folder":
        (out / name).mkdir()
    else:
        (out / name).symlink_to(mine)
    data = yaml.safe_load(path.read_text())
    data["trainer"]["max_steps"] = 2
    path.write_text(yaml.safe_dump(data))
    capsys.readouterr()
    assert main(["train", str(path), "--resume"]) == 1
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "a link or a folder, where the run writes its model card and logs" in errors[0]
    assert mine.read_text() == "the user's own notes" and not (out / "checkpoint-2").exists()
