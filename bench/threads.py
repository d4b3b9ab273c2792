"""CPU threads: ``grpo-trl train`` seconds per step under each thread setting, model size, idle and beside other work.

Settings: torch's default (one thread per core), one thread, one per core with ``OMP_WAIT_POLICY=passive``, and
grpo-trl's own choice (nothing set). "busy" adds ``2 x cores`` processes spinning on the CPU for the whole run; "idle"
adds nothing (the load average beside each figure says how idle the machine really was). Each setting runs in a fresh
process, settings alternating; the console's s/step at the end of each run (a run past 240 s: "no step").
``bench/threads_scaling.py`` times one GRPO-shaped step without TRL at 1..cores threads, for many-core machines.
"""

from __future__ import annotations

import json
import math
import os
import re
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


def _step_time(model: str, env: dict, out: Path, steps: int, limit_s: float = 240) -> float:
    """Seconds per step as the console's last ``step`` line gives it (a run past ``limit_s`` is stopped there)."""
    clean = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY")}
    sets = [f"model.name={model}", f"trainer.max_steps={steps}", f"trainer.output_dir={out}"]
    sets += ["trainer.save_strategy=no", "trainer.disable_tqdm=true", "trainer.logging_steps=1"]
    cmd = [str(Path(sys.executable).parent / "grpo-trl"), "train", "recipes/demo/tiny-cpu.yaml", "--overwrite"]
    cmd += [a for s in sets for a in ("--set", s)]
    with subprocess.Popen(cmd, cwd=ROOT, env={**clean, **env}, stdout=subprocess.PIPE, text=True) as proc:
        try:
            text = proc.communicate(timeout=limit_s)[0]
        except subprocess.TimeoutExpired:
            proc.kill()
            text = proc.communicate()[0]
    rates = re.findall(r"^step (\d+)/\d+ .*\| ([\d.]+) s/step", text, re.M)
    return float(rates[-1][1]) if rates else math.inf  # not one step in limit_s


def _burners(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def measure(
    sizes: list[str], steps: int, repeats: int, conditions: tuple[str, ...] = ("idle", "busy"), names: tuple = ()
) -> dict:
    from grpo_trl.models.tiny import build_tiny_model

    tmp = Path(tempfile.mkdtemp(prefix="grpo-threads-"))
    results: dict = {"cores": CORES, "steps": steps, "repeats": repeats}
    for size in sizes:
        model = build_tiny_model(tmp / f"model-{size}", **SIZES[size])
        params = json.loads((Path(model) / "grpo_trl_tiny.json").read_text())["params"]
        for condition in conditions:
            burners = _burners(2 * CORES) if condition == "busy" else []
            try:
                times: dict[str, list[float]] = {name: [] for name in names or SETTINGS}
                loads = []
                for i in range(repeats):
                    order = list(times) if i % 2 == 0 else list(reversed(times))
                    for name in order:
                        times[name].append(_step_time(model, SETTINGS[name], tmp / "run", steps))
                        loads.append(os.getloadavg()[0])
                        print(size, condition, name, f"{times[name][-1]:.2f} s/step, load {loads[-1]:.1f}", flush=True)
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
        times = {n: f"{v / best:.2f}x" if math.isfinite(v) else "no step in 240 s" for n, v in step.items()}
        default = f"torch default {times['torch default']}, " if "torch default" in step else ""
        listed = ", ".join(
            f"{name} {s:.2f}" if math.isfinite(s) else f"{name}: no step in 240 s" for name, s in step.items()
        )
        out.append(
            f"| CPU threads, `grpo-trl train` {size} model ({r['params'] / 1e6:.1f}M params), {condition} "
            f"(load {r['load']:.1f}, {results['cores']} cores): s/step | {listed}; {default}"
            f"grpo-trl's choice {times[AUTO]} the best |"
        )
    return out


def run(quick: bool = False) -> dict:
    if quick:  # the code path only: one condition, two settings
        result = measure(["tiny"], 4, 1, ("idle",), ("1 thread", AUTO))
    else:
        result = measure(list(SIZES), 10, 2)
    result["rows"] = rows(result)
    return result


if __name__ == "__main__":
    sizes = sys.argv[1].split(",") if len(sys.argv) > 1 else list(SIZES)
    conditions = tuple(sys.argv[2].split(",")) if len(sys.argv) > 2 else ("idle", "busy")
    res = measure(sizes, int(os.environ.get("STEPS", 10)), int(os.environ.get("REPEATS", 2)), conditions)
    print(json.dumps(res, indent=1))
    print("\n".join(rows(res)))
