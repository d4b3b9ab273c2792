"""Unwritable or full output_dir: a clear error before training starts (before the model is even built)."""

from __future__ import annotations

import os
import subprocess
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_trl.cli import main, train_main
from grpo_trl.run.directory import output_dir_problems

pytestmark = pytest.mark.fault


def test_output_dir_under_a_file_is_reported(tmp_path, make_recipe, capsys):
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("x")
    path = make_recipe(trainer={"output_dir": str(blocker / "run")})
    start = time.perf_counter()
    assert train_main([str(path)]) == 1
    err = capsys.readouterr().err
    assert "output_dir" in err and "is not writable" in err and "--set trainer.output_dir=" in err
    assert time.perf_counter() - start < 10
    assert not (blocker.parent / "run").exists()


@pytest.fixture
def tiny_disk(tmp_path):
    """A real 256 KiB filesystem (tmpfs), so "disk full" is the kernel's answer, not a fake."""
    mount = tmp_path / "small"
    mount.mkdir()
    if (
        os.geteuid() != 0
        or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], capture_output=True
        ).returncode
    ):
        pytest.skip("mounting a tmpfs needs root")
    yield mount
    subprocess.run(["umount", str(mount)], check=False)


def test_full_disk_is_reported_before_training(tiny_disk, make_recipe, capsys):
    path = make_recipe(trainer={"output_dir": str(tiny_disk / "run")})
    assert train_main([str(path)]) == 1
    err = capsys.readouterr().err
    assert "MB free on the disk of" in err and "GRPO_TRL_MIN_FREE_MB" in err
    assert not (tiny_disk / "run" / "tiny-model").exists()  # nothing was built, no step was run


def test_disk_that_fills_during_the_write_probe(tiny_disk, make_recipe, capsys, monkeypatch):
    (tiny_disk / "filler").write_bytes(b"\0" * (256 * 1024 - 512))  # leave less than the probe needs
    monkeypatch.setenv("GRPO_TRL_MIN_FREE_MB", "0")
    path = make_recipe(trainer={"output_dir": str(tiny_disk / "run")})
    assert train_main([str(path)]) == 1
    assert "is not writable (No space left on device)" in capsys.readouterr().err


@pytest.mark.parametrize("form", ["nul", "loop", "loop above", "too long"])
def test_an_output_dir_no_folder_can_have_is_one_check_error(tmp_path, make_recipe, capsys, form):
    """A NUL byte or a symlink loop in trainer.output_dir made check exit 70 (again, after an earlier fix)."""
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    value = {
        "nul": str(tmp_path / "out\0x"),
        "loop": str(tmp_path / "a"),
        "loop above": str(tmp_path / "a" / "out"),
        "too long": str(tmp_path / ("x" * 300)),
    }[form]
    assert main(["check", str(make_recipe(trainer={"output_dir": value}))]) == 1
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and ": trainer.output_dir: " in err[0] and "internal error" not in err[0], err


@settings(max_examples=200, deadline=None)
@given(text=st.text(st.sampled_from("ab/.\0~ \\-"), max_size=30))
def test_output_dir_problems_answers_any_text(text):
    assert isinstance(output_dir_problems(text), list)
