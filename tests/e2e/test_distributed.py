"""A real 2-process distributed GRPO run on CPU: accelerate launch + recipes/accelerate/multi_cpu.yaml (gloo)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from grpo_trl.check import load_recipe
from grpo_trl.check.plan import make_plan

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("two-process-launch")]  # one launch at a time: 2 cores
ROOT = Path(__file__).resolve().parents[2]

RANK_RECORDER = '''
import json, os
import torch.distributed as dist
from grpo_trl.rewards import register_reward
from grpo_trl.check.plan import make_plan

@register_reward("t_rank")
def rank_recorder(completions, log_dir: str = "", **kwargs):
    """Records which process scored what."""
    rank = dist.get_rank() if dist.is_initialized() else -1
    world = dist.get_world_size() if dist.is_initialized() else 1
    backend = dist.get_backend() if dist.is_initialized() else "none"
    if log_dir:  # called without it (a probe of the reward), it records nothing: never into the working directory
        with open(os.path.join(log_dir, f"rank{rank}.jsonl"), "a") as fh:
            fh.write(json.dumps({"rank": rank, "world": world, "backend": backend, "n": len(completions)}) + "\\n")
    return [float(len(c[0]["content"]) % 3) for c in completions]
'''


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_process_cpu_training(tmp_path, make_recipe):
    (tmp_path / "rank_rewards.py").write_text(RANK_RECORDER)
    path = make_recipe(
        rewards=[{"name": "t_rank", "args": {"log_dir": str(tmp_path)}}],
        data={"builder": "countdown", "source": "generate", "size": 16, "system_prompt": "none"},
        trainer={
            "max_steps": -1,
            "num_train_epochs": 1,
            "num_generations": 4,
            "per_device_train_batch_size": 8,
            "save_strategy": "no",
        },
        extra={"plugins": ["rank_rewards.py"], "launch": {"num_processes": 2}},
    )
    planned = make_plan(load_recipe(path)).total_optimizer_steps
    assert planned == 4  # 16 rows x 4 generations / (8 per device x 2 processes); 8 with one process
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    cmd = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--config_file",
        str(ROOT / "recipes/accelerate/multi_cpu.yaml"),
        "--main_process_port",
        str(_free_port()),
        "-m",
        "grpo_trl.train",
        str(path),
    ]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = {r: [json.loads(x) for x in (tmp_path / f"rank{r}.jsonl").read_text().splitlines()] for r in (0, 1)}
    for rows in records.values():
        assert len(rows) == planned  # every step, both ranks generated and scored their own share
        assert all(row["world"] == 2 and row["backend"] == "gloo" and row["n"] == 8 for row in rows)
    state = json.loads((tmp_path / "out" / "trainer_state.json").read_text())
    assert state["global_step"] == planned
    assert "trained 4 steps" in proc.stdout and proc.stdout.count("trained 4 steps") == 1  # summary from rank 0 only
