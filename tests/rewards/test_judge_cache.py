"""The judge's ``args.cache`` (an SQLite file) follows the one writer's rules: never through a symlink, never into a
file grpo-trl did not make (empty, text, another program's database), never a FIFO or folder; a cache it made earlier
is reused. ``grpo-trl check`` runs the same rule as the reward train builds, so it refuses what train cannot open."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
import yaml

from grpo_trl.cli import main as cli_main
from grpo_trl.errors import GrpoTrlError
from grpo_trl.rewards.judge import Judge
from tests.fake_openai import FakeOpenAI


def _plant(tmp_path: Path, kind: str) -> tuple[Path, Path]:
    """(the cache path, the file whose bytes must not change)."""
    cache, other = tmp_path / "judge_cache.sqlite", tmp_path / "mine.db"
    if kind in ("symlink", "foreign_db"):
        sqlite3.connect(other).execute("create table mine(x)").connection.commit()
        if kind == "foreign_db":
            other.rename(cache)
            other = cache
        else:
            cache.symlink_to(other)
    elif kind == "dangling_symlink":
        cache.symlink_to(other)
    elif kind in ("empty_file", "text_file"):
        other = cache
        cache.write_text("" if kind == "empty_file" else "my notes\n")
    elif kind == "fifo":
        os.mkfifo(cache)
    elif kind == "folder":
        cache.mkdir()
    return cache, other


def _bytes(path: Path) -> bytes | None:
    return path.read_bytes() if path.is_file() and not path.is_symlink() else None


def _judge(cache: Path) -> Judge:
    return Judge(base_url="http://127.0.0.1:9/v1", model="m", prompt="Rate {{ completion }}", cache=str(cache))


KINDS = ["symlink", "dangling_symlink", "empty_file", "text_file", "foreign_db", "fifo", "folder"]


@pytest.mark.parametrize("kind", KINDS)
def test_judge_refuses_a_cache_path_it_did_not_make(tmp_path, kind):
    cache, other = _plant(tmp_path, kind)
    before = _bytes(other)
    with pytest.raises(GrpoTrlError) as refused:
        _judge(cache)
    assert _bytes(other) == before  # a dangling link's target is still not made
    (problem,) = refused.value.problems
    assert problem.key == "args.cache" and "move it away" in problem.fix, problem


def test_judge_reuses_the_cache_it_made(tmp_path):
    cache = tmp_path / "sub" / "judge_cache.sqlite"
    _judge(cache).cache.put({"k": "7"})
    assert _judge(cache).cache.get("k") == "7"


@pytest.mark.parametrize("kind", ["text_file", "foreign_db", "symlink", "fifo"])
def test_check_refuses_the_cache_train_cannot_open(tmp_path, capsys, kind):
    cache, _ = _plant(tmp_path, kind)
    recipe = {
        "model": {"name": "builtin:tiny"},
        "data": {"builder": "countdown", "source": "generate", "size": 8},
        "trainer": {"output_dir": str(tmp_path / "run"), "use_cpu": True, "report_to": "none"},
    }
    with FakeOpenAI(models=["m"]) as server:
        args = {"base_url": server.base_url, "model": "m", "prompt": "Rate {{ completion }}", "cache": str(cache)}
        recipe["rewards"] = [{"name": "judge", "args": args}]
        path = tmp_path / "judge.yaml"
        path.write_text(yaml.safe_dump(recipe))
        assert cli_main(["check", str(path)]) == 1
    err = capsys.readouterr().err
    assert "rewards.0.args.cache:" in err and "internal error" not in err, err


# a judge cache written before the application_id mark (the same table) is adopted, not refused
def test_judge_cache_of_the_previous_version_is_usable(tmp_path):
    from grpo_trl.rewards.judge import cache_path

    path = tmp_path / "judge.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, answer TEXT NOT NULL)")
        db.execute("INSERT INTO answers VALUES ('k', '7')")
    db.close()
    assert cache_path(path) == path
