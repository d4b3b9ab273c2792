"""Issue 20, items 7 and 8: every bad input is ONE ``error:`` line naming the file and key, exit 1 (these were exit 70,
"bug in grpo-trl", or a silent exit 0); ``check`` calls no plugin builder and writes nothing to the datasets cache;
a plugin file also named as ``module:attr`` is executed once."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_trl.check.rewards import build_rewards
from grpo_trl.cli import main as cli_main
from grpo_trl.errors import RecipeError
from grpo_trl.recipe.load import apply_override, parse_yaml
from tests.conftest import tiny_recipe

pytestmark = pytest.mark.fault  # a fault probe: `make faults` selects it


def run(capsys, *argv: str) -> tuple[int, list[str]]:
    code = cli_main(list(argv))
    return code, [line for line in capsys.readouterr().err.splitlines() if line.strip()]


def one_error(capsys, *argv: str) -> str:
    code, lines = run(capsys, *argv)
    errors = [line for line in lines if line.startswith("error:")]
    assert code == 1 and len(errors) == 1, (code, lines)
    return errors[0]


def files_data(tmp_path: Path, name: str) -> dict:
    return {"builder": "files", "path": str(tmp_path / name), "system_prompt": "none"}


BIG = "9" * 4400


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        ([f"trainer.max_steps={BIG}"], "trainer.max_steps"),
        ([f"data.size={BIG}"], "data.size"),
        ([f"rewards.{BIG}.weight=1"], "rewards.999"),
        (["data.seed=-1"], "data.seed"),
        (["trainer.seed=-1"], "trainer.seed"),
        ([f"trainer.seed={2**32}"], "trainer.seed"),
    ],
)
def test_out_of_range_numbers_are_one_error(capsys, make_recipe, overrides, key):
    """A 4,400-digit integer was exit 70; seeds of -1 passed `check` and failed in train."""
    sets = [arg for o in overrides for arg in ("--set", o)]
    line = one_error(capsys, "check", str(make_recipe()), *sets)
    assert key in line and len(line) < 600, line


@settings(max_examples=25, deadline=None)
@given(digits=st.integers(4301, 6000), where=st.sampled_from(["a: {}", "a:\n  b: [1, {}]", "x: -{}"]))
def test_any_integer_past_pythons_digit_limit_is_a_recipe_error(digits, where):
    with pytest.raises(RecipeError, match="a value cannot be read"):
        parse_yaml(where.format("7" * digits), "r.yaml")
    with pytest.raises(RecipeError, match="value is not valid YAML"):
        apply_override({}, "trainer.max_steps=" + "7" * digits)


def test_paths_with_nul_bytes_and_symlink_loops_are_one_error(capsys, tmp_path, tiny_model):
    (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    cases = [
        ({"plugins": [str(tmp_path / "loop1")]}, "plugins.0", "cannot be read"),
        ({"plugins": ["a\0b.py"]}, "plugins.0", "cannot be read"),
        ({"data": files_data(tmp_path, "a\0b.jsonl")}, "data", "NUL byte"),
        ({"data": files_data(tmp_path, "loop1")}, "data", "loop1"),
    ]
    for extra, key, what in cases:
        path = tiny_recipe(tmp_path, tiny_model, extra=extra)
        line = one_error(capsys, "check", str(path))
        assert f"{path}: {key}" in line and what in line, line


def test_a_data_file_that_is_not_utf8_is_one_error_naming_its_line(capsys, tmp_path, tiny_model):
    rows = [json.dumps({"question": f"q{i}", "solution": str(i)}) for i in range(5)]
    (tmp_path / "latin.jsonl").write_bytes("\n".join(rows).encode() + b'\n{"question": "caf\xe9", "solution": "1"}\n')
    path = tiny_recipe(tmp_path, tiny_model, data=files_data(tmp_path, "latin.jsonl"))
    line = one_error(capsys, "check", str(path))
    assert "latin.jsonl" in line and "not UTF-8" in line and "(line 6)" in line, line


def test_a_huge_file_of_nul_bytes_fails_at_once(capsys, tmp_path, tiny_model):
    """A 1 GB file of NULs took 3.5 min to fail with StopIteration (made sparse here: no disk is used)."""
    with open(tmp_path / "zeros.jsonl", "wb") as fh:
        fh.truncate(2**30)
    path = tiny_recipe(tmp_path, tiny_model, data=files_data(tmp_path, "zeros.jsonl"))
    start = time.monotonic()
    line = one_error(capsys, "check", str(path))
    assert "zeros.jsonl" in line and "NUL byte at byte 0" in line, line
    assert time.monotonic() - start < 10


def test_a_malformed_judge_url_is_one_error(capsys, make_recipe):
    args = {"base_url": "http://[::1", "model": "m", "prompt": "Score: {completion}"}
    line = one_error(capsys, "check", str(make_recipe(rewards=[{"name": "judge", "args": args}])))
    assert "rewards.0" in line and "not a valid URL" in line, line


@pytest.mark.parametrize(
    ("flags", "flag"),
    [
        (["--n", "99999999999999999999"], "--n"),
        (["--batch-size", str(2**40)], "--batch-size"),
        (["--seed", "-1"], "--seed"),
        (["--n", BIG], "--n"),
    ],
)
def test_eval_bounds_its_numbers(capsys, make_recipe, flags, flag):
    line = one_error(capsys, "eval", str(make_recipe()), *flags)
    assert flag in line and len(line) < 400, line


# ------------------------------------------------------------------------------------------------ item 7: check
def test_check_writes_nothing_to_the_datasets_cache(capsys, tmp_path, tiny_model, monkeypatch):
    """`check` wrote a full Arrow copy of a local data file into ~/.cache/huggingface/datasets (146 MB for 50 MB)."""
    import datasets.config

    cache = tmp_path / "hf-cache"
    cache.mkdir()
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", cache)
    monkeypatch.setenv("HF_DATASETS_CACHE", str(cache))
    rows = [json.dumps({"question": f"what is {i}?", "solution": str(i)}) for i in range(3000)]
    (tmp_path / "data.jsonl").write_text("\n".join(rows) + "\n")
    path = tiny_recipe(tmp_path, tiny_model, data=files_data(tmp_path, "data.jsonl"))
    code, lines = run(capsys, "check", str(path))
    assert code == 0, lines
    written = [p for p in cache.rglob("*") if p.is_file()]
    assert not written, written[:5]


def test_check_calls_no_plugin_builder(capsys, tmp_path, tiny_model):
    marker = tmp_path / "called"
    (tmp_path / "builders.py").write_text(
        "from pathlib import Path\nfrom grpo_trl.data.registry import register_builder\n"
        "@register_builder('issue20_marker', columns=('solution',))\n"
        "def build(split='train', *, path: str, base_dir=None):\n"
        f"    Path({str(marker)!r}).write_text('called')\n"
        "    raise RuntimeError('a plugin builder ran during check')\n"
    )
    data = {"builder": "issue20_marker", "path": "x.jsonl", "system_prompt": "none"}
    path = tiny_recipe(tmp_path, tiny_model, data=data, extra={"plugins": ["builders.py"]})
    code, lines = run(capsys, "check", str(path))
    assert code == 0, lines
    assert not marker.exists()


def test_a_plugin_also_named_as_module_attr_is_imported_once(capsys, tmp_path, tiny_model):
    """A file under `plugins:` and named `module:attr` was executed twice: `already registered`."""
    (tmp_path / "issue20_once.py").write_text(
        "from grpo_trl import register_reward\nCOUNT = globals().get('COUNT', 0) + 1\n"
        "@register_reward('issue20_once_reward')\n"
        "def score(completions, **kwargs):\n    return [1.0] * len(completions)\n"
    )
    rewards = [{"name": "issue20_once_reward"}, {"name": "issue20_once:score"}]
    path = tiny_recipe(tmp_path, tiny_model, rewards=rewards, extra={"plugins": ["issue20_once.py"]})
    recipe_text = yaml.safe_load(path.read_text())
    assert recipe_text["plugins"] == ["issue20_once.py"]
    code, lines = run(capsys, "check", str(path))
    assert code == 0, lines
    from grpo_trl.check import load_recipe

    funcs, _ = build_rewards(load_recipe(path))
    assert [f.__name__ for f in funcs] == ["issue20_once_reward", "score"]
    import sys

    assert sys.modules["issue20_once"].COUNT == 1
    os.environ.pop("GRPO_TRL_UNUSED", None)


@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.3, 0.6, 1.5])  # before ~0.1 s it is Python's own start-up (site), not ours
def test_ctrl_c_at_any_moment_of_start_up_is_one_line(tmp_path, make_recipe, delay):
    """Ctrl-C in the first 0.3 s (while the libraries import) printed a traceback."""
    import signal
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    launcher = "import sys; sys.argv[0] = '/usr/bin/grpo-trl'; from grpo_trl.cli import main; sys.exit(main())"
    proc = subprocess.Popen(
        [sys.executable, "-c", launcher, "check", str(make_recipe())],
        env={**os.environ, "PYTHONPATH": str(root)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert "Traceback" not in err, err[-2000:]
    assert proc.returncode == 130 and err.strip().splitlines()[-1] == "interrupted", (proc.returncode, err[-500:])


def test_an_unwritable_datasets_cache_is_blamed_not_the_data_file(tmp_path, monkeypatch):
    """With the cache unusable, the error blamed the data file ("cannot be read")."""
    import datasets.config

    from grpo_trl.data.sources import load_file
    from grpo_trl.errors import DataError

    (tmp_path / "not-a-folder").write_text("")
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "not-a-folder" / "cache")
    (tmp_path / "d.jsonl").write_text('{"question": "q", "solution": "1"}\n')
    with pytest.raises(DataError, match="cannot be cached: NotADirectoryError.*make HF_DATASETS_CACHE a writable"):
        load_file(tmp_path / "d.jsonl")
