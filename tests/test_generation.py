"""Generation backends: the vLLM server health check against a real local HTTP server, `grpo-trl serve --dry-run`,
and the clear errors before training. (A real vLLM cannot run on these CPU machines: see README, "Verified where".)"""

from __future__ import annotations

import http.server
import socket
import threading
import time
from pathlib import Path

import pytest
import yaml

from grpo_trl.check import load_recipe
from grpo_trl.cli import main as cli_main
from grpo_trl.generation import GenerationError, check_server, preflight, serve_command, vllm_installed
from tests.fake_openai import QuietServer

ROOT = Path(__file__).resolve().parents[1]


class _Handler(http.server.BaseHTTPRequestHandler):
    delay = 0.0
    status = 200

    def do_GET(self):  # noqa: N802
        time.sleep(self.delay)
        self.send_response(self.status if self.path == "/health" else 404)
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


def _serve(delay=0.0, status=200):
    handler = type("H", (_Handler,), {"delay": delay, "status": status})
    server = QuietServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_health_check_up():
    server = _serve()
    try:
        assert check_server(f"http://127.0.0.1:{server.server_port}/health", timeout=2) == (True, "")
    finally:
        server.shutdown()


def test_health_check_down_is_fast():
    start = time.perf_counter()
    ok, why = check_server(f"http://127.0.0.1:{_free_port()}/health", timeout=2)
    assert not ok and "refused" in why.lower()
    assert time.perf_counter() - start < 2


def test_health_check_wrong_path_or_status():
    server = _serve(status=503)
    try:
        assert check_server(f"http://127.0.0.1:{server.server_port}/health", timeout=2) == (False, "HTTP 503")
    finally:
        server.shutdown()


def test_health_check_slow_server_times_out_in_seconds():
    server = _serve(delay=5)
    try:
        start = time.perf_counter()
        ok, why = check_server(f"http://127.0.0.1:{server.server_port}/health", timeout=0.5)
        assert not ok and "0.5 s" in why
        assert time.perf_counter() - start < 2
    finally:
        server.shutdown()


def _server_recipe(tmp_path, port, extra=None):
    data = {
        "model": {"name": "Qwen/Qwen2.5-0.5B-Instruct", "dtype": "bfloat16"},
        "data": {"builder": "countdown", "source": "generate", "size": 8},
        "rewards": [{"name": "countdown"}],
        "generation": {
            "backend": "vllm",
            "vllm_mode": "server",
            "server_host": "127.0.0.1",
            "server_port": port,
            "health_timeout": 1,
            "gpu_memory_utilization": 0.7,
            "tensor_parallel_size": 1,
            **(extra or {}),
        },
        "trainer": {"num_generations": 4, "per_device_train_batch_size": 4},
    }
    path = tmp_path / "server.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_recipe(path)


def test_preflight_server_mode(tmp_path):
    server = _serve()
    try:
        preflight(_server_recipe(tmp_path, server.server_port))  # no error: the server answers
    finally:
        server.shutdown()
    port = _free_port()
    start = time.perf_counter()
    with pytest.raises(GenerationError, match=f"no vLLM server at http://127.0.0.1:{port}/health .*grpo-trl serve"):
        preflight(_server_recipe(tmp_path, port))
    assert time.perf_counter() - start < 3


def test_train_fails_fast_without_server(tmp_path, capsys):
    path = _server_recipe(tmp_path, _free_port()).path
    start = time.perf_counter()
    assert cli_main(["train", str(path), "--set", f"trainer.output_dir={tmp_path / 'out'}"]) == 1
    assert "no vLLM server at" in capsys.readouterr().err
    assert time.perf_counter() - start < 10  # before any model is loaded


@pytest.mark.skipif(vllm_installed(), reason="vllm is installed here")
def test_colocate_without_vllm_names_the_extra(tmp_path):
    path = tmp_path / "colo.yaml"
    recipe = _server_recipe(tmp_path, 1).data
    recipe["generation"] = {"backend": "vllm", "vllm_mode": "colocate"}
    path.write_text(yaml.safe_dump(recipe))
    with pytest.raises(GenerationError, match=r"pip install 'grpo-trl\[vllm\]'"):
        preflight(load_recipe(path))


def test_serve_command_maps_the_recipe(tmp_path):
    argv, env = serve_command(_server_recipe(tmp_path, 8123, {"max_model_length": 2048}))
    assert env == {"VLLM_SERVER_DEV_MODE": "1"}
    joined = " ".join(argv)
    assert "vllm.entrypoints.cli.main serve Qwen/Qwen2.5-0.5B-Instruct" in joined
    for expected in [
        "--port 8123",
        "--host 127.0.0.1",
        "--gpu-memory-utilization 0.7",
        "--tensor-parallel-size 1",
        "--dtype bfloat16",
        "--max-model-len 2048",
        "--weight-transfer-config",
    ]:
        assert expected in joined


def test_serve_dry_run_prints_the_command(capsys):
    assert cli_main(["serve", str(ROOT / "recipes/countdown/qwen2.5-3b-instruct.yaml"), "--dry-run"]) == 0
    out = capsys.readouterr().out.strip()
    assert (
        out.startswith("VLLM_SERVER_DEV_MODE=1 ") and "serve Qwen/Qwen2.5-3B-Instruct" in out and "--port 8000" in out
    )
