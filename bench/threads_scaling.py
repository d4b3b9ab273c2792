"""Threads vs model size on a many-core CPU (no TRL needed): one GRPO-shaped step of a random Qwen2 (generate 16 x 32
tokens, then forward + backward on them) timed at 1..cores threads, idle and beside 2 x cores spinning processes."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

SIZES = {"0.1M": (64, 2), "3M": (256, 4), "25M": (512, 8), "150M": (1024, 12)}


def _step_s(hidden: int, layers: int, threads: int, reps: int) -> float:
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    torch.set_num_threads(threads)
    cfg = Qwen2Config(
        vocab_size=512,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=hidden * 4,
        max_position_embeddings=256,
    )
    model = Qwen2ForCausalLM(cfg)
    prompt = torch.randint(2, 512, (16, 32))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    times = []
    for _ in range(reps + 1):
        start = time.perf_counter()
        with torch.no_grad():
            out = model.generate(prompt, max_new_tokens=32, do_sample=True, min_new_tokens=32, pad_token_id=1)
        loss = model(out, labels=out).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        times.append(time.perf_counter() - start)
    return statistics.median(times[1:])


def _loop(sizes: list[str], threads: list[int]) -> dict:
    """One process per wait policy: every size at every thread count (``torch.set_num_threads`` between them)."""
    return {size: {t: _step_s(*SIZES[size], t, 3) for t in threads} for size in sizes}


def main() -> dict:
    cores = os.cpu_count() or 1
    threads = sorted({t for t in (1, 2, 4, 8, 16, cores) if t <= cores})
    sizes = sys.argv[1].split(",") if len(sys.argv) > 1 else ["0.1M", "3M", "25M"]
    results: dict = {"cores": cores}
    here = os.path.dirname(os.path.abspath(__file__))
    for condition in ("idle", "busy"):
        spin = [sys.executable, "-c", "while True: pass"]
        burners = [subprocess.Popen(spin) for _ in range(2 * cores)] if condition == "busy" else []
        try:
            for policy in ("active", "passive"):
                env = {**os.environ, **({"OMP_WAIT_POLICY": "PASSIVE"} if policy == "passive" else {})}
                code = f"import sys,json; sys.path.insert(0, {here!r}); from threads_scaling import _loop; "
                code += f"print(json.dumps(_loop({sizes!r}, {threads!r})))"
                out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
                row = json.loads(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else out.stderr[-500:]
                results[f"{condition}/{policy}"] = row
                print(condition, policy, json.dumps(row), os.getloadavg()[0], flush=True)
        finally:
            for p in burners:
                p.kill()
    return results


if __name__ == "__main__":
    res = main()
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "threads_scaling.json"), "w") as fh:
            json.dump(res, fh, indent=1)
