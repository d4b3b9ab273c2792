"""``eval --backend vllm`` (offline ``vllm.LLM`` in the process) on CPU: greedy completions equal the transformers
backend's, and so does everything in eval.json. Runs where vllm is importable (``make test-vllm``'s .venv-vllm)."""

from __future__ import annotations

import json

import yaml

from tests.vllm_runs import VLLM_TINY, require_vllm, run_module

pytestmark = require_vllm()


def test_vllm_and_transformers_backends_agree_on_greedy_completions(tmp_path):
    recipe = {
        "model": {"name": "builtin:tiny", "dtype": "float32", "tiny": VLLM_TINY},
        "data": {"builder": "countdown", "source": "generate", "size": 32, "system_prompt": "none", "eval_size": 4},
        "rewards": [{"name": "countdown"}, {"name": "xml_format", "args": {"tags": ["think", "answer"]}}],
        "generation": {"max_model_length": 512},
        "trainer": {"output_dir": str(tmp_path / "out"), "max_completion_length": 16, "use_cpu": True, "bf16": False},
    }
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe))
    reports, rows = {}, {}
    for backend in ("vllm", "transformers"):
        out = tmp_path / backend
        args = ["eval", str(path), "--backend", backend, "--n", "3", "--temperature", "0", "--output-dir", str(out)]
        proc = run_module("grpo_trl.cli", args, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        reports[backend] = json.loads((out / "eval.json").read_text())
        rows[backend] = [json.loads(x) for x in (out / "eval_completions.jsonl").read_text().splitlines()]
    assert rows["vllm"] == rows["transformers"] and len(rows["vllm"]) == 12
    assert reports["vllm"].pop("backend") == "vllm"
    reports["transformers"].pop("backend")
    assert reports["vllm"] == reports["transformers"]


def test_filter_with_vllm_sampling_writes_rates_for_every_prompt(tmp_path):
    recipe = {
        "model": {"name": "builtin:tiny", "dtype": "float32", "tiny": VLLM_TINY},
        "data": {"builder": "countdown", "source": "generate", "size": 6, "system_prompt": "none"},
        "rewards": [{"name": "xml_format", "args": {"tags": ["think", "answer"], "per_tag": 0.25}}],
        "generation": {"max_model_length": 512},
        "trainer": {"output_dir": str(tmp_path / "out"), "max_completion_length": 8, "use_cpu": True, "bf16": False},
    }
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe))
    proc = run_module("grpo_trl.cli", ["filter", str(path), "--backend", "vllm", "--n", "4"], timeout=600)  # sampled
    assert proc.returncode == 0, proc.stderr[-3000:]
    rates = json.loads((tmp_path / "recipe.pass_rates.json").read_text())
    assert rates["backend"] == "vllm" and len(rates["rates"]) == 6
    assert all(v["n"] == 4 and 0 <= v["p"] <= 1 for v in rates["rates"].values())
