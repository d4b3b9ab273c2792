"""CPU threads: ``grpo-trl train recipes/demo/tiny-cpu.yaml`` seconds per step under each thread setting, idle and
beside other work. Settings: grpo-trl's choice (nothing set), one thread, torch's default (one per core), one per core
with ``OMP_WAIT_POLICY=passive``. "busy" adds ``2 x cores`` spinning processes (in a session of their own, as another
user's work) for the whole run; "idle" adds nothing. Each setting runs in a fresh process, settings alternating; the
console's s/step (the mean since the start) at the end of a run, or where ``limit_s`` stopped it.
``python bench/threads.py --idle`` (about 3 minutes on 2 idle cores) writes bench/threads_idle.json; ``--busy``:
bench/threads_busy.json (up to 20 minutes); ``MODEL=path`` another model, ``STEPS``, ``REPEATS``."""

from __future__ import annotations

import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORES = os.cpu_count() or 1
AUTO = "grpo-trl's choice"
SETTINGS = {
    AUTO: {},
    "1 thread": {"OMP_NUM_THREADS": "1"},
    f"torch default ({CORES} threads)": {"OMP_NUM_THREADS": str(CORES)},
    f"{CORES} threads, passive wait": {"OMP_NUM_THREADS": str(CORES), "OMP_WAIT_POLICY": "PASSIVE"},
}
CLEAN = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT")


def step_time(env: dict, out: Path, steps: int, limit_s: float, model: str | None = None) -> tuple[float, str]:
    """Seconds per step as the console's last ``step`` line gives it, and grpo-trl's thread line (if any)."""
    clean = {k: v for k, v in os.environ.items() if k not in CLEAN}
    sets = [f"trainer.max_steps={steps}", f"trainer.output_dir={out}", "trainer.save_strategy=no"]
    sets += ["trainer.disable_tqdm=true", "trainer.logging_steps=1", *([f"model.name={model}"] if model else [])]
    cmd = [str(Path(sys.executable).parent / "grpo-trl"), "train", "recipes/demo/tiny-cpu.yaml", "--overwrite"]
    cmd += [a for s in sets for a in ("--set", s)]
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    with subprocess.Popen(cmd, cwd=ROOT, env={**clean, **env}, **pipes) as proc:
        try:
            text, err = proc.communicate(timeout=limit_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            text, err = proc.communicate()
    if proc.returncode not in (0, -9):
        print(err[-2000:], file=sys.stderr)
    rates = re.findall(r"^step (\d+)/\d+ .*\| ([\d.]+) s/step", text, re.M)
    line = next((ln for ln in text.splitlines() if ln.startswith("grpo-trl: CPU:")), "")
    return (float(rates[-1][1]) if rates else math.inf), line


def burners(n: int) -> list[subprocess.Popen]:
    spin = [sys.executable, "-c", "while True: pass"]
    return [subprocess.Popen(spin, start_new_session=True) for _ in range(n)]


def measure(
    condition: str, steps: int, repeats: int, limit_s: float, names: tuple = tuple(SETTINGS), model: str | None = None
) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="grpo-threads-"))
    spinning = burners(2 * CORES) if condition == "busy" else []
    times: dict[str, list[float]] = {name: [] for name in names}
    loads, lines = [], set()
    start = time.perf_counter()
    try:
        for i in range(repeats):
            for name in names if i % 2 == 0 else reversed(names):
                seconds, line = step_time(SETTINGS[name], tmp / "run", steps, limit_s, model)
                times[name].append(seconds)
                loads.append(os.getloadavg()[0])
                lines.add(line) if line else None
                print(condition, name, f"{seconds:.2f} s/step, load {loads[-1]:.1f}", line, flush=True)
    finally:
        for p in spinning:
            p.kill()
            p.wait()
    step = {name: statistics.median(v) for name, v in times.items()}
    best = min(step.values())
    return {
        "condition": condition,
        "model": model or "builtin:tiny",
        "cores": CORES,
        "steps": steps,
        "repeats": repeats,
        "load": statistics.median(loads),
        "step_s": step,
        "auto_vs_best": step[AUTO] / best if AUTO in step and math.isfinite(best) else None,
        "auto_lines": sorted(lines),
        "wall_s": time.perf_counter() - start,
    }


def row(r: dict) -> str:
    listed = ", ".join(f"{n} {s:.2f}" if math.isfinite(s) else f"{n}: no step" for n, s in r["step_s"].items())
    ratio = f"{r['auto_vs_best']:.2f}x" if r["auto_vs_best"] else "?"
    return (
        f"| CPU threads, `grpo-trl train recipes/demo/tiny-cpu.yaml` ({r['model']}) s/step, {r['condition']} "
        f"({r['cores']} cores, load {r['load']:.1f}; `bench/threads.py`) | {listed}; "
        f"grpo-trl's choice {ratio} the best |"
    )


def run(quick: bool = False) -> dict:
    if quick:  # the code path only: one condition, grpo-trl's own setting (each setting is one more `train` process)
        results = [measure("idle", 3, 1, 300, (AUTO,))]
    else:
        results = [measure(c, 30, 2, 150) for c in ("idle", "busy")]
    return {"results": results, "rows": [row(r) for r in results]}


if __name__ == "__main__":
    import signal

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # the spinning processes go too
    conditions = [c.lstrip("-") for c in sys.argv[1:]] or ["idle", "busy"]
    for condition in conditions:
        steps, limit = (20, 50) if condition == "idle" else (30, 150)  # idle: the whole command within 4 minutes
        env = {"steps": int(os.environ.get("STEPS", steps)), "repeats": int(os.environ.get("REPEATS", 2))}
        res = measure(condition, **env, limit_s=limit, model=os.environ.get("MODEL"))  # MODEL: a path or Hub id
        (ROOT / "bench" / f"threads_{condition}.json").write_text(json.dumps(res, indent=1) + "\n")
        print(row(res))
