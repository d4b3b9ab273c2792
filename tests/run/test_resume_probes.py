"""Adversarial ``--resume`` probes that found a hang or a crash: each entry of a checkpoint replaced by a named pipe
or a folder is a reason to skip it, answered at once; a resumed run saves the steps it skipped into new folders, not
over what the skipped checkpoints left."""

from __future__ import annotations

import json
import os
import select
import signal
from pathlib import Path

import pytest

from grpo_trl.cli import train_main
from grpo_trl.run.resume import checkpoint_problem, newest_complete, saved_by

pytestmark = pytest.mark.fault

ENTRIES = ["trainer_state.json", "model.safetensors", "optimizer.pt", "scheduler.pt", "rng_state.pth"]


def _answer(ckpt: Path) -> str | None:
    """``checkpoint_problem(ckpt)`` from a forked child within 10 s (a reader stuck on a named pipe may hold the GIL:
    a thread could not be waited for)."""
    read, write = os.pipe()
    if (pid := os.fork()) == 0:
        try:
            os.write(write, json.dumps(checkpoint_problem(ckpt)).encode())
        finally:
            os._exit(0)
    os.close(write)
    ready = select.select([read], [], [], 10)[0]
    if not ready:
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    assert ready, "checkpoint_problem waited on a named pipe"
    with os.fdopen(read) as fh:
        return json.loads(fh.read())


@pytest.mark.parametrize("kind", ["fifo", "folder"])
@pytest.mark.parametrize("name", ENTRIES)
def test_an_entry_that_is_not_a_file_is_a_reason_answered_at_once(trained_run, tmp_path, name, kind):
    ckpt = tmp_path / "checkpoint-4"
    ckpt.mkdir()
    for entry in (trained_run / "checkpoint-4").iterdir():
        (ckpt / entry.name).symlink_to(entry)  # the run's files, read only
    (ckpt / name).unlink()
    os.mkfifo(ckpt / name) if kind == "fifo" else (ckpt / name).mkdir()
    why = _answer(ckpt)
    assert why and name in why, why


@pytest.mark.slow
def test_a_resumed_run_saves_the_skipped_steps_into_new_folders(run_copy, capsys, caplog):
    """checkpoint-4 skipped (its optimizer state cut), holding what another launch left (its scheduler.pt a folder,
    rank 1's RNG state, a DeepSpeed global_step4/): the resumed run moves it aside, then saves a checkpoint-4 of its
    own that the next --resume counts as saved by this one process (before: a crash writing scheduler.pt)."""
    path, out = run_copy({"max_steps": 6})
    (out / "trainer_state.json").unlink()  # killed after checkpoint-4
    old = out / "checkpoint-4"
    (old / "optimizer.pt").write_bytes((old / "optimizer.pt").read_bytes()[:100])
    (old / "scheduler.pt").unlink()
    (old / "scheduler.pt").mkdir()
    (old / "rng_state_1.pth").write_bytes((old / "rng_state.pth").read_bytes())
    (old / "global_step4").mkdir()
    assert train_main([str(path), "--resume"]) == 0
    err = capsys.readouterr().err + caplog.text
    assert "skipping checkpoint-4: " in err and "moved the skipped checkpoint-4/ into" in err
    assert json.loads((out / "trainer_state.json").read_text())["global_step"] == 6
    assert (out / ".grpo-trl" / "previous" / "checkpoint-4" / "global_step4").is_dir()  # moved, nothing deleted
    assert saved_by(out / "checkpoint-4") == (1, None) and not (out / "checkpoint-4" / "global_step4").exists()
    assert newest_complete(out)[0] == out / "checkpoint-6"


@pytest.mark.parametrize(
    ("edit", "words"),
    [  # before: the first two made the run "finished" at that step, the last one ended in exit 70 (TypeError)
        ({"global_step": 7}, "trainer_state.json is of step 7, not 2"),
        ({"global_step": 10**30}, f"trainer_state.json is of step {10**30}, not 2"),
        ({"log_history": [1, "x", None]}, "trainer_state.json is unreadable (log_history.0 is 1"),
    ],
)
def test_a_trainer_state_that_is_not_this_checkpoints_is_a_reason(tmp_path, edit, words):
    from tests.run.test_saved_by import fabricate

    ckpt = fabricate(tmp_path / "checkpoint-2", 1, "plain")
    state = json.loads((ckpt / "trainer_state.json").read_text())
    (ckpt / "trainer_state.json").write_text(json.dumps({**state, **edit}))
    assert words in checkpoint_problem(ckpt)
