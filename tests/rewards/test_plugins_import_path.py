"""Plugin files that register nothing are named by `check` with both fixes; `module:function` rewards next to the
recipe import without PYTHONPATH."""

from __future__ import annotations

import logging
import sys

from grpo_trl.check import load_recipe
from grpo_trl.check.rewards import build_rewards
from grpo_trl.check.validate import validate
from grpo_trl.cli import main as cli_main

PLAIN = "def brevity(completions, **kwargs):\n    return [1.0] * len(completions)\n\ndef _helper():\n    pass\n"


def test_plugin_with_plain_functions_gets_a_warning_naming_them(tmp_path, make_recipe, caplog):
    (tmp_path / "plainfuncs_a.py").write_text(PLAIN)
    path = make_recipe(extra={"plugins": ["plainfuncs_a.py"]})
    with caplog.at_level(logging.WARNING, logger="grpo_trl.recipe"):
        assert validate(load_recipe(path, validate=False)) == []
    text = caplog.text
    assert "plainfuncs_a.py registers no reward but defines brevity:" in text and "_helper" not in text
    assert "@register_reward" in text and "'plainfuncs_a:brevity'" in text


def test_no_warning_when_the_function_is_named_or_registered(tmp_path, make_recipe, caplog):
    (tmp_path / "plainfuncs_b.py").write_text(PLAIN)
    path = make_recipe(extra={"plugins": ["plainfuncs_b.py"]}, rewards=[{"name": "plainfuncs_b:brevity"}])
    with caplog.at_level(logging.WARNING, logger="grpo_trl.recipe"):
        assert validate(load_recipe(path, validate=False)) == []
    assert "registers no reward" not in caplog.text
    (tmp_path / "regfuncs_c.py").write_text(
        "from grpo_trl import register_reward\n@register_reward('t_regfuncs_c')\n" + PLAIN
    )
    from grpo_trl.rewards import unregister_reward

    try:
        path = make_recipe(extra={"plugins": ["regfuncs_c.py"]})
        with caplog.at_level(logging.WARNING, logger="grpo_trl.recipe"):
            validate(load_recipe(path, validate=False))
    finally:
        unregister_reward("t_regfuncs_c")
    assert "registers no reward" not in caplog.text


def test_module_function_next_to_the_recipe_is_importable(tmp_path, make_recipe, capsys):
    (tmp_path / "nextdoor_rewards.py").write_text(PLAIN)
    path = make_recipe(rewards=[{"name": "nextdoor_rewards:brevity"}])
    assert str(tmp_path) not in sys.path
    assert cli_main(["check", str(path)]) == 0
    assert "brevity x1.0" in capsys.readouterr().out
    assert sys.path[-1] == str(tmp_path.resolve())  # searched last: never shadows installed packages
    funcs, _ = build_rewards(load_recipe(path))
    assert funcs[0](["a", "b"]) == [1.0, 1.0]


def test_missing_module_next_to_the_recipe_is_one_error(tmp_path, make_recipe, capsys):
    path = make_recipe(rewards=[{"name": "not_here_rewards:brevity"}])
    assert cli_main(["check", str(path)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "rewards.0.name" in err[0] and "cannot import module 'not_here_rewards'" in err[0]
