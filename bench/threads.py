"""CPU threads: ``grpo-trl train`` seconds per step under each thread setting, model size, idle and beside other work.

Settings: torch's default (one thread per core), one thread, one per core with ``OMP_WAIT_POLICY=passive``, and
grpo-trl's own choice (nothing set). "busy" adds ``2 x cores`` processes spinning on the CPU for the whole run; "idle"
adds nothing (the load average beside each figure says how idle the machine really was). Each setting runs in a fresh
process, settings alternating, the median of each run's ``step_time`` after its first two steps.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORES = os.cpu_count() or 1
AUTO = "grpo-trl's choice"
SETTINGS = {
    "torch default": {"OMP_NUM_THREADS": str(CORES)},
    "1 thread": {"OMP_NUM_THREADS": "1"},
    f"{CORES} threads, passive wait": {"OMP_NUM_THREADS": str(CORES), "OMP_WAIT_POLICY": "PASSIVE"},
    AUTO: {},
}
SIZES = {"tiny": {}, "small": {"hidden_size": 256, "num_layers": 4}, "medium": {"hidden_size": 512, "num_layers": 8}}


def _step_time(model: str, env: dict, out: Path, steps: int) -> float:
    clean = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY")}
    sets = [f"model.name={model}", f"trainer.max_steps={steps}", f"trainer.output_dir={out}"]
    sets += ["trainer.save_strategy=no", "trainer.disable_tqdm=true"]
    cmd = [str(Path(sys.executable).parent / "grpo-trl"), "train", "recipes/demo/tiny-cpu.yaml", "--overwrite"]
    proc = subprocess.run(
        [*cmd, *(a for s in sets for a in ("--set", s))], cwd=ROOT, env={**clean, **env}, capture_output=True
    )
    if proc.returncode:
        raise RuntimeError(proc.stderr.decode()[-2000:])
    history = json.loads((out / "trainer_state.json").read_text())["log_history"]
    return statistics.median([h["step_time"] for h in history if "step_time" in h][2:])


def _burners(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def measure(sizes: list[str], steps: int, repeats: int, conditions: tuple[str, ...] = ("idle", "busy")) -> dict:
    from grpo_trl.models.tiny import build_tiny_model

    tmp = Path(tempfile.mkdtemp(prefix="grpo-threads-"))
    results: dict = {"cores": CORES, "steps": steps, "repeats": repeats}
    for size in sizes:
        model = build_tiny_model(tmp / f"model-{size}", **SIZES[size])
        params = json.loads((Path(model) / "grpo_trl_tiny.json").read_text())["params"]
        for condition in conditions:
            burners = _burners(2 * CORES) if condition == "busy" else []
            try:
                times: dict[str, list[float]] = {name: [] for name in SETTINGS}
                loads = []
                for i in range(repeats):
                    order = list(SETTINGS) if i % 2 == 0 else list(reversed(SETTINGS))
                    for name in order:
                        times[name].append(_step_time(model, SETTINGS[name], tmp / "run", steps))
                        loads.append(os.getloadavg()[0])
            finally:
                for p in burners:
                    p.kill()
                    p.wait()
            results[f"{size}/{condition}"] = {
                "params": params,
                "load": statistics.median(loads),
                "step_s": {name: statistics.median(v) for name, v in times.items()},
            }
    return results


def rows(results: dict) -> list[str]:
    out = []
    for key, r in results.items():
        if not isinstance(r, dict):
            continue
        size, condition = key.split("/")
        step = r["step_s"]
        best = min(step.values())
        listed = ", ".join(f"{name} {s:.2f}" for name, s in step.items())
        out.append(
            f"| CPU threads, `grpo-trl train` {size} model ({r['params'] / 1e6:.1f}M params), {condition} "
            f"(load {r['load']:.1f}, {results['cores']} cores): s/step | {listed}; torch default "
            f"{step['torch default'] / best:.2f}x the best, grpo-trl's choice {step[AUTO] / best:.2f}x |"
        )
    return out


def run(quick: bool = False) -> dict:
    result = measure(["tiny"], 5, 1) if quick else measure(list(SIZES), 10, 2)
    result["rows"] = rows(result)
    return result


if __name__ == "__main__":
    sizes = sys.argv[1].split(",") if len(sys.argv) > 1 else list(SIZES)
    conditions = tuple(sys.argv[2].split(",")) if len(sys.argv) > 2 else ("idle", "busy")
    res = measure(sizes, int(os.environ.get("STEPS", 10)), int(os.environ.get("REPEATS", 2)), conditions)
    print(json.dumps(res, indent=1))
    print("\n".join(rows(res)))
