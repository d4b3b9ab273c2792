"""A real finished training run (checkpoints 2 and 4, final save) that output-directory tests copy and damage."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from tests.conftest import shared_build, tiny_recipe

RUN = {"max_steps": 4, "save_strategy": "steps", "save_steps": 2}


@pytest.fixture(scope="session")
def trained_run(tmp_path_factory, tiny_model) -> Path:
    """Trained once per test run, shared by the xdist workers (tests only copy it)."""
    from grpo_trl.cli import train_main

    def train(base: Path) -> Path:
        base.mkdir()
        path = tiny_recipe(base, tiny_model, trainer=RUN, extra={"logging": {"completions_every": 1}})
        assert train_main([str(path)]) == 0
        return base / "out"

    return Path(shared_build(tmp_path_factory, "trained-run", train))


@pytest.fixture
def run_copy(trained_run, tmp_path, tiny_model):
    """``make(**trainer)`` -> (recipe path, output_dir): a private copy of the finished run and its recipe."""

    def make(trainer: dict | None = None, **kwargs) -> tuple[Path, Path]:
        out = tmp_path / "out"
        shutil.copytree(trained_run, out, symlinks=True)
        extra = {"logging": {"completions_every": 1}, **kwargs.pop("extra", {})}
        return tiny_recipe(tmp_path, tiny_model, trainer={**RUN, **(trainer or {})}, extra=extra, **kwargs), out

    return make


def snapshot(folder: Path) -> dict[str, tuple[str, int]]:
    """Every file under ``folder`` (the lock files aside) with its sha256 and mtime."""
    out = {}
    for p in sorted(folder.rglob("*")):
        rel = str(p.relative_to(folder))
        if p.is_file() and rel not in (".grpo-trl/lock", ".grpo-trl/lock.json"):
            out[rel] = (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
    return out
