"""DeepSpeed ZeRO-2/3 on two CPU processes (gloo), verified beyond the exit code: the distributed type, state really
sharded (ZeRO-2: each rank's fp32 optimizer partition is half the model; ZeRO-3: the parameters too), and a
checkpoint that saves and resumes. The configs are the shipped recipes/accelerate/zero{2,3}_cpu.yaml.

FSDP2 cannot be rehearsed on CPU with accelerate 1.15: its AcceleratorState applies an FSDP plugin only to GPU-like
distributed types, so a CPU launch with an FSDP config runs as MULTI_CPU, unsharded (measured, see the README);
``grpo-trl check`` warns about it."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

# deepspeed runs in the launched processes only: found, not imported here (importing it costs collection seconds)
pytestmark = [
    pytest.mark.slow,
    pytest.mark.xdist_group("two-process-launch"),  # one launch of two ranks at a time: 2 cores
    pytest.mark.skipif(
        importlib.util.find_spec("deepspeed") is None,
        reason="pip install 'grpo-trl[deepspeed]' to run the DeepSpeed CPU rehearsal",
    ),
]
ROOT = Path(__file__).resolve().parents[2]

PROBE = '''
import json, sys
import deepspeed.ops
import torch.distributed as dist
from transformers import TrainerCallback
from grpo_trl.check import load_recipe
from grpo_trl.train import run


class Probe(TrainerCallback):
    """Records, on each rank at its first step, how the model is distributed."""

    def __init__(self, path):
        self.path, self.done = path, False

    def on_step_end(self, args, state, control, model=None, **kwargs):
        if self.done:
            return
        self.done = True
        from accelerate.state import AcceleratorState

        params = list(model.parameters())
        inner = getattr(kwargs.get("optimizer"), "optimizer", None)  # accelerate wrapper -> DeepSpeed ZeRO optimizer
        parts = getattr(inner, "single_partition_of_fp32_groups", None) or getattr(
            inner, "fp32_partitioned_groups_flat", None
        ) or []
        record = {
            "rank": dist.get_rank(), "world": dist.get_world_size(), "backend": dist.get_backend(),
            "type": str(AcceleratorState().distributed_type), "step": state.global_step,
            "zero_stage": AcceleratorState().deepspeed_plugin.zero_stage,
            "full": sum(getattr(p, "ds_numel", p.numel()) for p in params),
            "local_params": sum(p.ds_tensor.numel() if hasattr(p, "ds_tensor") else p.numel() for p in params),
            "local_optim": sum(t.numel() for t in parts),
        }
        with open(f"{self.path}.rank{record['rank']}.jsonl", "a") as fh:
            fh.write(json.dumps(record) + "\\n")


# DeepSpeed's shared-memory all-reduce serves its inference engine only (ZeRO training reduces through gloo): not
# building it spares its compile (~1-3 min of one core, on every fresh machine such as CI's)
deepspeed.ops.__compatible_ops__["deepspeed_shm_comm"] = False

if __name__ == "__main__":
    from grpo_trl.rewards.stray_threads import exit_if_stray_threads

    recipe = load_recipe(sys.argv[1], [a for a in sys.argv[3:] if a != "--set"])
    run(recipe, resume="trainer.max_steps=4" in sys.argv, extra_callbacks=[Probe(sys.argv[2])])
    # ends as `accelerate launch -m grpo_trl.train` does (exit handlers, then os._exit): left to interpreter
    # finalization, a gloo worker thread still freeing ZeRO-3's last async all-gather takes the GIL while Python
    # finalizes, and that thread's forced unwind aborts rank 1 (SIGABRT, "terminate called without an active
    # exception"; gdb on a core, 1-2 runs in 10 under load)
    exit_if_stray_threads(0, everything=True)
'''


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch(config: str, script: Path, recipe: Path, probe: Path, *overrides: str) -> subprocess.CompletedProcess:
    path = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": path}
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(ROOT / config),
           "--main_process_port", str(_free_port()), str(script), str(recipe), str(probe), *overrides]  # fmt: skip
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def _records(probe: Path) -> list[dict]:
    return [json.loads((Path(f"{probe}.rank{r}.jsonl")).read_text().splitlines()[-1]) for r in (0, 1)]


@pytest.mark.parametrize("stage", [2, 3])
def test_deepspeed_zero_on_two_cpu_processes_shards_saves_and_resumes(tmp_path, make_recipe, stage):
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    recipe = make_recipe(
        trainer={"max_steps": 2, "save_strategy": "steps", "save_steps": 2, "per_device_train_batch_size": 4,
                 "use_cpu": False, "ddp_backend": "gloo"},
        extra={"launch": {"num_processes": 2}},
    )  # fmt: skip
    probe = tmp_path / "probe"
    config = f"recipes/accelerate/zero{stage}_cpu.yaml"
    proc = _launch(config, script, recipe, probe)
    assert proc.returncode == 0, proc.stderr[-3000:]
    first = _records(probe)
    full = first[0]["full"]
    for rec in first:
        assert (rec["world"], rec["backend"], rec["type"]) == (2, "gloo", "DistributedType.DEEPSPEED")
        assert rec["zero_stage"] == stage and rec["full"] == full > 100_000
        assert abs(rec["local_optim"] - full / 2) <= 0.01 * full  # fp32 master + Adam states: half per rank
        if stage == 3:
            assert abs(rec["local_params"] - full / 2) <= 0.01 * full  # the parameters too
        else:
            assert rec["local_params"] == full  # ZeRO-2 keeps whole parameters
    out = tmp_path / "out"
    ckpt = out / "checkpoint-2"
    assert json.loads((ckpt / "trainer_state.json").read_text())["global_step"] == 2
    shards = sorted(p.name for p in (ckpt / "global_step2").glob("*optim_states.pt"))
    assert len(shards) == 2 and all(f"rank_{r}_" in "".join(shards) for r in (0, 1)), shards  # one per rank

    proc = _launch(config, script, recipe, probe, "--set", "trainer.max_steps=4")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [r["step"] for r in _records(probe)] == [3, 3]  # continued after checkpoint-2, not from step 0
    assert json.loads((out / "trainer_state.json").read_text())["global_step"] == 4
