"""The command line: --help is instant, rewards and data listings, the tiny model builder."""

from __future__ import annotations

import json
import re
import resource
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from grpo_trl.cli import main as cli_main

ROOT = Path(__file__).resolve().parents[2]


def test_help_is_fast_and_imports_nothing_heavy():
    heavy = "('torch', 'trl', 'transformers', 'datasets')"
    code = f"import sys, grpo_trl.cli as c; c.build_parser(); print(sorted(m for m in {heavy} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
    # CPU seconds of the child, not wall time: the bound is about what --help loads, not how busy the machine is
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "grpo_trl.cli", "--help"], capture_output=True, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime) < 1.5


def test_rewards_command_lists_builtins_and_plugins(tmp_path, capsys):
    plugin = tmp_path / "p.py"
    plugin.write_text(
        "from grpo_trl.rewards import register_reward\n"
        "@register_reward('t_cli_reward')\n"
        "def r(completions, scale: float = 2.0, **kw):\n"
        "    'A plugin reward.'\n"
        "    return [scale] * len(completions)\n"
    )
    from grpo_trl.rewards import unregister_reward

    try:
        assert cli_main(["rewards", "--plugin", str(plugin)]) == 0
    finally:
        unregister_reward("t_cli_reward")
    out = capsys.readouterr().out
    for name in ("countdown", "accuracy", "gsm8k", "think_format", "cosine", "soft_overlong", "t_cli_reward"):
        assert name in out
    assert "exact=2.0" in out and "scale=2.0" in out and "A plugin reward." in out


def test_data_command_prints_rendered_prompts(make_recipe, capsys):
    path = make_recipe(
        data={
            "builder": "countdown",
            "source": "generate",
            "size": 10,
            "system_prompt": "r1",
            "max_prompt_tokens": 4000,
        }
    )
    assert cli_main(["data", str(path), "-n", "1"]) == 0
    out = capsys.readouterr().out
    assert "10 rows loaded, dropped: none; train 10" in out
    assert "<|im_start|>system\nA conversation between User and Assistant" in out  # after the chat template
    assert out.rstrip().count("<|im_start|>assistant") == 1 and "reward columns" in out


def test_tiny_model_builds_fast_and_is_deterministic(tmp_path):
    from grpo_trl.models.tiny import build_tiny_model

    build_tiny_model(tmp_path / "warm")  # imports paid once
    start = time.perf_counter()
    a = build_tiny_model(tmp_path / "a", seed=1)
    assert time.perf_counter() - start < 3
    b = build_tiny_model(tmp_path / "b", seed=1)
    assert (Path(a) / "model.safetensors").read_bytes() == (Path(b) / "model.safetensors").read_bytes()


# ------------------------------------------------------------------------------------------------ what users read
WORD = r"( [a-z0-9]{1,8}| e\.g\. [a-z]{1,5}| ``[a-z_]{1,8}``| \(App\. C\.1\))"
sentence = st.from_regex(rf"[A-Z][a-z]{{1,8}}{WORD}{{0,8}}[.!?]", fullmatch=True)


@given(first=sentence, rest=st.lists(sentence, max_size=3), wrap=st.integers(10, 40))
@example(first="Aa cf?", rest=["Aa?"], wrap=40)  # found by hypothesis: "cf" stopped a "?" from ending a sentence
def test_first_sentence_is_whole_and_plain(first, rest, wrap):
    import textwrap

    from grpo_trl.cli.commands import first_sentence

    # a docstring wrapped mid-sentence (between words: textwrap would otherwise split a long word in two)
    doc = "\n".join(textwrap.wrap(" ".join([first, *rest]), wrap, break_long_words=False, break_on_hyphens=False))
    assert first_sentence(doc) == first.replace("`", "")


def test_rewards_shows_the_first_sentence_whole_without_markup(tmp_path, capsys):
    plugin = tmp_path / "p.py"
    plugin.write_text(
        "from grpo_trl.rewards import register_reward\n"
        "@register_reward('t_cli_sentence')\n"
        "def r(completions, **kw):\n"
        "    '''Scores ``<answer>`` blocks (App. C.1) against the\n"
        "    row's ``solution``, e.g. 1.0 for equal ones. Second sentence.'''\n"
        "    return [1.0] * len(completions)\n"
    )
    from grpo_trl.rewards import unregister_reward

    try:
        assert cli_main(["rewards", "--plugin", str(plugin)]) == 0
    finally:
        unregister_reward("t_cli_sentence")
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("t_cli_sentence"))
    assert line.split(None, 1)[1] == (
        "Scores <answer> blocks (App. C.1) against the row's solution, e.g. 1.0 for equal ones."
    )
    from grpo_trl.rewards.registry import REWARDS, list_rewards

    builtin = {
        i.name for i in list_rewards() if getattr(REWARDS.get(i.name).obj, "__module__", "").startswith("grpo_trl")
    }
    described = {x.split(None, 1)[0]: x[21:] for x in out.splitlines() if x and not x[0].isspace()}
    descriptions = [d for name, d in described.items() if name in builtin]  # other tests register their own
    assert descriptions and all(d.rstrip().endswith((".", "!", "?", ")")) for d in descriptions), descriptions
    assert "`" not in "".join(descriptions)


def test_first_sentence_does_not_end_at_an_abbreviation():
    from grpo_trl.cli.commands import first_sentence

    assert first_sentence("Scores ``<answer>`` tags (App. C.1), e.g. 1.0. More text.") == (
        "Scores <answer> tags (App. C.1), e.g. 1.0."
    )


def test_a_reward_without_a_docstring_is_shown_without_description():
    from grpo_trl.cli.commands import first_sentence

    assert first_sentence("") == first_sentence("  \n ") == "(no description)"


def test_eval_ends_with_a_short_table_not_json(make_recipe, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    flags = ["--split", "train", "--n", "2", "--limit", "2", "--max-new-tokens", "4", "--output-dir", str(tmp_path)]
    assert cli_main(["eval", str(make_recipe()), *flags]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    table = lines[lines.index(next(x for x in lines if x.startswith("grpo-trl eval: "))) :]
    assert len(table) <= 10 and not re.search(r"\d\.\d{5}", "\n".join(table))  # no 16-digit floats
    assert "{" not in "\n".join(table)
    rows = {x.split()[0]: x.split(None, 1)[1] for x in table[1:]}
    assert {"pass@1", "pass@2", "rows", "time", "results"} <= set(rows)
    report = json.loads((tmp_path / "eval.json").read_text())
    assert rows["pass@1"].startswith(f"{report['pass@1']:.3f}") and "2 prompts x 2 completions = 4" in rows["rows"]
    assert str(tmp_path / "eval.json") in rows["results"]


@pytest.mark.slow
def test_ctrl_c_during_train_names_the_last_checkpoint_and_the_resume_command(tmp_path, make_recipe, capsys):
    (tmp_path / "stop.py").write_text(
        "from grpo_trl.rewards import register_reward\n"
        "calls = []\n"
        "@register_reward('t_ctrl_c')\n"
        "def r(completions, **kw):\n"
        "    calls.append(1)\n"
        "    if len(calls) == 3:\n"
        "        raise KeyboardInterrupt\n"
        "    return [0.0] * len(completions)\n"
    )
    path = make_recipe(
        rewards=["t_ctrl_c"], trainer={"max_steps": 4, "save_strategy": "steps", "save_steps": 2},
        extra={"plugins": ["stop.py"]},
    )  # fmt: skip
    from grpo_trl.rewards import unregister_reward

    try:
        assert cli_main(["train", str(path), "--set", "trainer.seed=1"]) == 130
        err = capsys.readouterr().err.strip().splitlines()[-1]
        checkpoint = tmp_path / "out" / "checkpoint-2"
        assert f"last checkpoint: {checkpoint}" in err
        command = err.split("continue with: ", 1)[1]
        assert command == f"grpo-trl train {path} --set trainer.seed=1 --resume"
        assert cli_main(shlex.split(command)[1:]) == 0  # the command printed resumes the run
    finally:
        unregister_reward("t_ctrl_c")
    assert json.loads((tmp_path / "out" / "trainer_state.json").read_text())["global_step"] == 4


BAD_PATHS = {
    "a name too long": lambda tmp: tmp / ("a" * 300),
    "a path too long": lambda tmp: tmp.joinpath(*["b" * 200] * 30),
    "a file used as a folder": lambda tmp: tmp / "recipe.yaml" / "x",
    "a symlink loop": lambda tmp: tmp / "loop" / "x",
}
PATH_COMMANDS = {
    "report": lambda p, r: ["report", p],
    "report, overlaid": lambda p, r: ["report", str(r.parent / "run"), p],
    "export": lambda p, r: ["export", p],
    "export --to": lambda p, r: ["export", str(r.parent / "run"), "--to", p],
    "schema -o": lambda p, r: ["schema", "-o", p],
    "import": lambda p, r: ["import", p],
    "import -o": lambda p, r: ["import", str(r), "-o", p],
    "check": lambda p, r: ["check", p],
    "check, model.name": lambda p, r: ["check", str(r), "--set", f"model.name={p}"],
    "check, data.source": lambda p, r: ["check", str(r), "--set", f"data.source={p}"],
    "check, extends": lambda p, r: ["check", str(r), "--set", f"extends={p}"],
    "eval --output-dir": lambda p, r: ["eval", str(r), "--output-dir", p, "--limit", "1", "--n", "1"],
}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(form=st.sampled_from(sorted(BAD_PATHS)), command=st.sampled_from(sorted(PATH_COMMANDS)))
def test_a_path_the_os_refuses_is_one_error_line_in_every_command(tmp_path_factory, capsys, form, command):
    """A path named on the command line or in a recipe that the OS cannot even look at (ENAMETOOLONG, ENOTDIR,
    ELOOP) was an internal error (exit 70) in report, export, schema -o, import -o and check's model/data/extends:
    now one ``error:`` line, exit 1, wherever it is met."""
    import yaml

    tmp = tmp_path_factory.mktemp("paths")
    recipe = tmp / "recipe.yaml"
    recipe.write_text(
        yaml.safe_dump(
            {
                "model": {"name": "builtin:tiny"},
                "data": {"builder": "countdown", "source": "generate", "size": 8},
                "rewards": [{"name": "xml_format"}],
                "trainer": {"output_dir": str(tmp / "out"), "max_steps": 1, "use_cpu": True},
            }
        )
    )
    (tmp / "loop").symlink_to(tmp / "loop")
    (tmp / "run").mkdir()
    capsys.readouterr()
    code = cli_main(PATH_COMMANDS[command](str(BAD_PATHS[form](tmp)), recipe))
    err = capsys.readouterr().err
    assert code in (0, 1) and "internal error" not in err, err  # check may take a missing source for a Hub id
    assert code == 1 or command.startswith("check, "), err
    assert code == 0 or any(line.startswith("error:") for line in err.splitlines()), err


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    root=st.sampled_from(["ConnectionError", "TimeoutError", "ConnectionRefusedError", "ConnectError", "ReadTimeout"]),
    wrappers=st.lists(st.sampled_from([RuntimeError, OSError, ValueError]), max_size=3),
    cause=st.booleans(),
)
def test_a_server_not_reached_is_one_error_line_and_exit_1_never_70(capsys, monkeypatch, root, wrappers, cause):
    """A connection failure anywhere under a command (push_to_hub creating its repo, a download) is the network's:
    one ``error:`` line, exit 1, however deep it is chained."""
    import builtins

    import httpx2

    import grpo_trl.cli as cli

    exc: BaseException = (getattr(builtins, root, None) or getattr(httpx2, root))("no route to host")
    for wrap in wrappers:
        outer = wrap("while making the trainer")
        if cause:
            outer.__cause__ = exc
        else:
            outer.__context__ = exc
        exc = outer

    def fails(args):
        raise exc

    monkeypatch.setattr(cli.argparse.ArgumentParser, "parse_args", lambda self, argv=None: _Args(fails))
    assert cli._main(["check", "r.yaml"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: a server could not be reached")
    assert cli.unreachable(ValueError("not the network")) is False


class _Args:
    def __init__(self, func):
        self.func, self.recipe = func, "r.yaml"


def test_eval_help_gives_the_real_default_of_n(capsys):
    """``eval`` takes n from the benchmark (or 8): its help said "default: None"."""
    assert cli_main(["eval", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "default: None" not in out and "completions per prompt (default: 8; a benchmark: its own)" in out
