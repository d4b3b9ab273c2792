"""``model.lora: {}`` is peft's ``LoraConfig()``: the recipe trains the same adapters as TRL's own
``GRPOTrainer(peft_config=LoraConfig())``, step for step (the same trainable parameters, loss and grad_norm)."""

from __future__ import annotations

import copy

import pytest
import yaml

pytestmark = pytest.mark.filterwarnings("ignore")


def test_empty_lora_trains_as_trl_with_lora_config(tmp_path):
    from peft import LoraConfig, PeftModel
    from transformers import set_seed
    from trl import GRPOTrainer

    from grpo_trl.check import load_recipe
    from grpo_trl.train import build_trainer

    recipe_path = tmp_path / "r.yaml"
    recipe_path.write_text(
        yaml.safe_dump(
            {
                "model": {"name": "builtin:tiny", "lora": {}},
                "data": {"builder": "countdown", "source": "generate", "size": 16, "system_prompt": "none"},
                "rewards": [{"name": "xml_format"}],
                "trainer": {
                    "output_dir": str(tmp_path / "out"),
                    "max_steps": 1,
                    "per_device_train_batch_size": 4,
                    "num_generations": 4,
                    "max_completion_length": 8,
                    "learning_rate": 1e-2,
                    "logging_steps": 1,
                    "save_strategy": "no",
                    "report_to": "none",
                    "use_cpu": True,
                    "seed": 0,
                },
            }
        )
    )
    recipe = load_recipe(recipe_path)
    set_seed(0)
    ours = build_trainer(recipe)
    set_seed(0)
    theirs = GRPOTrainer(
        model=str(tmp_path / "out" / "tiny-model"),
        reward_funcs=ours.reward_funcs,
        args=copy.deepcopy(ours.args),
        train_dataset=ours.train_dataset,
        processing_class=ours.processing_class,
        peft_config=LoraConfig(),
    )
    assert isinstance(ours.model, PeftModel) and isinstance(theirs.model, PeftModel)

    def trainable(trainer):
        return {
            n.split("base_model.model.", 1)[-1]: p.numel()
            for n, p in trainer.model.named_parameters()
            if p.requires_grad
        }

    assert trainable(ours) == trainable(theirs) and trainable(ours)  # LoRA adapters only, the same ones
    logs = []
    for trainer in (ours, theirs):
        set_seed(0)
        trainer.train()
        logs.append(next(h for h in trainer.state.log_history if "loss" in h))
    for key in ("loss", "grad_norm", "reward"):
        assert logs[0][key] == pytest.approx(logs[1][key], rel=1e-5, abs=1e-7), key
