"""``build_trainer``'s keyword arguments are GRPOTrainer's: a wrong one stops before the tokenizer, dataset and model
load, naming the closest argument (TRL's own TypeError comes after loading and names none)."""

from __future__ import annotations

import inspect

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from trl import GRPOTrainer

from grpo_trl.train import build_trainer
from tests.conftest import tiny_recipe

ACCEPTED = set(inspect.signature(GRPOTrainer.__init__).parameters) - {"self"}


@pytest.mark.parametrize(
    "typo, meant",
    [
        ("reward_func", "reward_funcs"),
        ("train_datset", "train_dataset"),
        ("callback", "callbacks"),
        ("peft_confg", "peft_config"),
    ],
)
def test_a_misspelt_argument_names_the_right_one(make_recipe, typo, meant):
    with pytest.raises(TypeError, match=rf"GRPOTrainer takes no argument '{typo}' \(did you mean '{meant}'\?\)"):
        build_trainer(make_recipe(), **{typo: None})


@pytest.fixture(scope="module")
def checked_recipe(tmp_path_factory, tiny_model):
    """One checked recipe for every example (checking it is not what the examples vary)."""
    from grpo_trl.check import load_recipe

    return load_recipe(tiny_recipe(tmp_path_factory.mktemp("recipe"), tiny_model))


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.from_regex(r"[a-z_]{1,30}", fullmatch=True).filter(lambda n: n not in ACCEPTED))
def test_any_unknown_argument_stops_before_loading(checked_recipe, name):
    with pytest.raises(TypeError, match=f"no argument '{name}'.*it takes: "):
        build_trainer(checked_recipe, **{name: None})
