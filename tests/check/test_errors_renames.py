"""The did-you-mean helper knows every name ``grpo-trl import`` translates (one table, grpo_trl.tables, read
by grpo_trl.errors), so ``check`` answers a TRL / open-r1 name written in the wrong place of a recipe."""

from __future__ import annotations

import pytest

from grpo_trl import errors, tables
from grpo_trl.check import load_recipe
from grpo_trl.check.validate import validate


def test_every_importer_rename_is_known_to_suggest():
    known = errors.RENAMES
    for peer, (ours, _args, _note) in tables.REWARDS.items():
        assert peer == ours or known[peer] == ours, peer
    for key, ours in tables.MODEL_KEYS.items():
        assert key == ours or known[key] == f"model.{ours}", key
    for key, ours in tables.LORA_KEYS.items():
        assert known[key] == f"model.lora.{ours}", key
    for old, new in tables.RENAMED_FIELDS.items():
        assert known[old] == new
    for key, (ours, _why) in tables.RENAMES.items():
        assert known[key] == ours
        assert tables.rename_hint(key) == f"did you mean {ours!r}? ({_why})"


def test_one_table_a_rename_added_to_the_importer_reaches_suggest(monkeypatch):
    monkeypatch.setitem(tables.RENAMED_FIELDS, "old_peer_field", "new_field")
    assert errors.suggest("old_peer_field", ["new_field", "seed"]) == " (did you mean 'new_field'?)"
    assert errors.suggest("old_peer_field", ["seed"]) == ""  # a plain name only where it is a choice
    monkeypatch.setitem(errors.RENAMES, "old_peer_field", "newer_field")  # errors.RENAMES wins over the tables
    assert errors.closest("old_peer_field", ["new_field", "newer_field"]) == "newer_field"


@pytest.mark.parametrize(
    ("section", "value", "key", "hint"),
    [
        ("model", {"lora_r": 8}, "model.lora_r", "did you mean 'model.lora.r'?"),
        ("model", {"lora": {"lora_alpha": 16, "lora_r": 8}}, "model.lora.lora_r", "did you mean 'model.lora.r'?"),
        ("trainer", {"no_cuda": True}, "trainer.no_cuda", "did you mean 'use_cpu'?"),
        ("trainer", {"model_name_or_path": "x"}, "trainer.model_name_or_path", "did you mean 'model.name'?"),
        ("rewards", [{"name": "binary_code"}], "rewards.0.name", "did you mean 'code_tests'?"),
        ("rewards", [{"name": "get_soft_overlong_punishment"}], "rewards.0.name", "did you mean 'soft_overlong'?"),
        ("lora_r", 8, "lora_r", "did you mean 'model.lora.r'?"),
    ],
)
def test_check_names_the_new_key_for_a_peer_key_in_the_wrong_place(make_recipe, section, value, key, hint):
    extra = {"model": {"name": "builtin:tiny", **value}} if section == "model" else None
    path = {
        "model": lambda: make_recipe(extra=extra),
        "trainer": lambda: make_recipe(trainer=value),
        "rewards": lambda: make_recipe(rewards=value),
    }.get(section, lambda: make_recipe(extra={section: value}))()
    problems = [p for p in validate(load_recipe(path, validate=False)) if p.key == key]
    assert len(problems) == 1 and hint in str(problems[0]), [str(p) for p in problems]


def test_check_cli_prints_the_hint_as_one_error_line(make_recipe, capsys):
    from grpo_trl.cli import main

    assert main(["check", str(make_recipe(trainer={"no_cuda": True}))]) == 1
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert (
        any("trainer.no_cuda" in line and "did you mean 'use_cpu'?" in line for line in lines)
        and "Traceback" not in err
    )
