"""``keys.yaml``'s one-to-one rules are the importer's translations as data: every rule names a section the
interpreter runs and a known check, and a peer value reaches its recipe key, or is one error naming the peer key."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from grpo_trl.errors import RecipeError
from grpo_trl.importer import import_text
from grpo_trl.importer.rules import KINDS, RULES

BASE = {"model_name_or_path": "m", "dataset_name": "d", "reward_funcs": ["accuracy_reward"]}


def test_every_rule_names_a_section_and_a_known_check():
    for key, rule in RULES.items():
        assert rule["to"].split(".")[0] in ("model", "data", "launch"), key
        assert rule.get("as") is None or rule["as"] in KINDS, key


@settings(max_examples=30, deadline=None)
@given(key=st.sampled_from(sorted(RULES)), value=st.integers(-3, 5) | st.booleans() | st.text(max_size=6))
@example(key="dataset_config", value=0).via("a falsy YAML int that names a config")
def test_a_rule_carries_a_value_or_names_the_key(key, value):
    import yaml

    rule = RULES[key]
    ok, _ = KINDS[rule.get("as", "flag")]
    try:
        result = import_text(yaml.safe_dump({**BASE, key: value}))
    except RecipeError as err:
        assert not ok(value) and [p.key for p in err.problems] == [key]
        return
    assert ok(value)
    section, name = rule["to"].split(".")
    written = result.recipe.get(section, {}).get(name)
    shown = str(value) if rule.get("as") == "string" else value  # a config named 0 is the string '0'
    if shown or not rule.get("if_true"):
        assert written is not None and result.comments[(section, name)] == rule.get("note", key)
    else:
        assert written is None
    assert key in result.text


def test_launch_rule_checks_before_it_writes():
    with pytest.raises(RecipeError, match="num_processes: must be a positive integer"):
        import_text("model_name_or_path: m\ndataset_name: d\nreward_funcs: [accuracy_reward]\nnum_processes: 0\n")
