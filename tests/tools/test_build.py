"""The Python API: build_trainer returns the real GRPOTrainer; train() merges extra GRPOTrainer keywords."""

from __future__ import annotations

import pytest
from transformers import TrainerCallback
from trl import GRPOTrainer

import grpo_trl
from grpo_trl.tools.calculator import calculator


def shorter(completions, **kwargs):
    return [-len(str(c)) / 100 for c in completions]


class Seen(TrainerCallback):
    def __init__(self):
        self.steps = 0

    def on_step_end(self, args, state, control, **kwargs):
        self.steps += 1


def test_build_trainer_merges_keywords(make_recipe):
    path = make_recipe()
    seen = Seen()
    trainer = grpo_trl.build_trainer(str(path), reward_funcs=[shorter], callbacks=[seen])
    assert isinstance(trainer, GRPOTrainer)
    assert trainer.reward_func_names == ["xml_format", "shorter"]
    assert trainer.reward_weights.tolist() == [1.0, 1.0]
    assert seen in trainer.callback_handler.callbacks


def test_build_trainer_keeps_recipe_weights_and_passes_single_values(make_recipe, tiny_model):
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM

    path = make_recipe(rewards=[{"name": "xml_format", "weight": 3.0}])
    model = AutoModelForCausalLM.from_pretrained(tiny_model)
    trainer = grpo_trl.build_trainer(
        str(path), reward_funcs=shorter, model=model, peft_config=LoraConfig(r=2, target_modules=["q_proj"])
    )
    assert trainer.reward_weights.tolist() == [3.0, 1.0]
    assert trainer.model.peft_config["default"].r == 2


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"reward_func": [shorter]}, "did you mean 'reward_funcs'"), ({"tool": [calculator]}, "did you mean 'tools'")],
)
def test_unknown_trainer_keyword_is_named(make_recipe, kwargs, match):
    with pytest.raises(TypeError, match=match):
        grpo_trl.build_trainer(str(make_recipe()), **kwargs)


@pytest.mark.slow
def test_train_passes_keywords_through(make_recipe):
    calls = []

    def rollout_spy(completions, **kwargs):
        calls.append(len(completions))
        return [0.0] * len(completions)

    seen = Seen()
    result = grpo_trl.train(str(make_recipe(trainer={"max_steps": 2})), reward_funcs=[rollout_spy], callbacks=[seen])
    assert result.global_step == 2 and seen.steps == 2 and calls == [8, 8]
    assert all("rewards/rollout_spy/mean" in h for h in result.log_history if "loss" in h)
