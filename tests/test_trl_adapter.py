"""The TRL internals grpo-trl relies on (grpo_trl/trl_adapter.py) exist in the installed TRL, and work on a real
trainer. When a TRL release renames one, this fails naming the TRL version and what is gone."""

from __future__ import annotations

import pytest

from grpo_trl import trl_adapter


def test_trl_internals_present():
    from trl import GRPOTrainer

    missing = trl_adapter.check_internals(GRPOTrainer)
    assert not missing, f"TRL {trl_adapter.trl_version()} changed internals grpo-trl uses: " + "; ".join(missing)


def test_check_internals_detects_a_rename():
    from trl import GRPOTrainer

    renamed = type("Renamed", (GRPOTrainer,), {"_generate": None})
    assert any("_generate" in line for line in trl_adapter.check_internals(renamed))


@pytest.mark.slow
def test_adapter_on_a_real_trainer(make_recipe, tmp_path):
    """Two real steps: the adapter times generation and reads TRL's last batch."""
    from transformers import TrainerCallback

    from grpo_trl.check import load_recipe
    from grpo_trl.train import run

    recipe = load_recipe(make_recipe(trainer={"max_steps": 2}))
    captured = {}

    class Grab(TrainerCallback):
        def __init__(self):
            self.trainer = None

        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "loss" in logs and self.trainer is not None:
                captured["batch"] = trl_adapter.last_batch(self.trainer)
                captured["logs"] = dict(logs)

    grab = Grab()
    import trl

    class Spy(trl.GRPOTrainer):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            grab.trainer = self

    trl.GRPOTrainer, saved = Spy, trl.GRPOTrainer  # run() imports it at call time: the spy hands us the trainer
    try:
        run(recipe, extra_callbacks=[grab])
    finally:
        trl.GRPOTrainer = saved
    batch = captured["batch"]
    assert batch and len(batch["prompt"]) == len(batch["completion"]) == len(batch["advantages"]) > 0
    assert set(batch["rewards"]) == {"xml_format"}
    assert captured["logs"]["timing/generation_s"] > 0, f"TRL {trl_adapter.trl_version()}: generation not timed"
