"""Generation around TRL: ``preflight`` (vLLM installed; a server answering within seconds, not after TRL's
retries) and ``serve_command`` for ``grpo-trl serve``.

    >>> health_url({"server_host": "10.0.0.2", "server_port": 8001})
    'http://10.0.0.2:8001/health'
"""

from __future__ import annotations

import importlib.util
import shlex
import time
import urllib.error
import urllib.request
from typing import Any

from grpo_trl.errors import GenerationError, Problem

__all__ = ["GenerationError", "check_server", "format_command", "health_url", "preflight"]
SERVE_ARGS = {  # generation: key -> trl vllm-serve's ScriptArguments
    "server_host": "host",
    "server_port": "port",
    "gpu_memory_utilization": "gpu_memory_utilization",
    "tensor_parallel_size": "tensor_parallel_size",
    "max_model_length": "max_model_len",
}


def health_url(gen: dict) -> str:
    """The server's ``/health`` from ``generation:`` (``server_base_url`` wins over host and port, as in TRL)."""
    if gen.get("server_base_url"):
        return str(gen["server_base_url"]).rstrip("/") + "/health"
    host = gen.get("server_host", "0.0.0.0")
    return f"http://{'127.0.0.1' if host == '0.0.0.0' else host}:{gen.get('server_port', 8000)}/health"


def check_server(url: str, timeout: float = 5.0) -> tuple[bool, str]:
    """GET ``url`` once within ``timeout``: ``(True, "")`` on HTTP 200, else ``(False, why)`` (TRL's
    ``VLLMClient.check_server`` needs vLLM and waits without a timeout)."""
    start = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - the user's own server URL
            return (True, "") if response.status == 200 else (False, f"HTTP {response.status}")
    except urllib.error.HTTPError as exc:
        return False, f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        if "timed out" in str(reason) or time.monotonic() - start >= timeout:
            return False, f"no answer within {timeout:g} s"
        return False, str(reason)


def vllm_installed() -> bool:
    return importlib.util.find_spec("vllm") is not None


def preflight(recipe: Any, config: Any = None) -> None:
    """Fail fast when the recipe's vLLM is missing, or no server answers in server mode."""
    if not recipe.uses_vllm:
        return
    if recipe.vllm_mode == "colocate" and not vllm_installed():
        why = "vllm is not installed; pip install 'grpo-trl[vllm]' (GPU machines), or use backend: transformers"
        raise GenerationError([Problem(recipe.file, "generation.backend", why)])
    if recipe.vllm_mode == "server":
        gen = dict(recipe.generation)
        for key in ("server_host", "server_port", "server_base_url") if config is not None else ():
            gen.setdefault(key, getattr(config, f"vllm_{key}"))  # trainer.vllm_* fields count too
        url = health_url(gen)
        ok, why = check_server(url, float(gen.get("health_timeout", 5.0)))
        if not ok:
            start = f"start it with `grpo-trl serve {recipe.file}` on the GPU(s) not used for training"
            raise GenerationError([Problem(recipe.file, "generation", f"no vLLM server at {url} ({why}) — {start}")])


def serve_command(recipe: Any, extra_args: list[str] | None = None) -> tuple[list[str], dict[str, str]]:
    """The command (argv) and extra environment that serve the recipe's model the way TRL's trainer expects."""
    from grpo_trl.trl_adapter import vllm_serve_command

    gen, model = recipe.generation, recipe.model
    kwargs: dict[str, Any] = {arg: gen[key] for key, arg in SERVE_ARGS.items() if gen.get(key) is not None}
    kwargs |= {key: model[key] for key in ("revision", "trust_remote_code") if model.get(key) is not None}
    kwargs |= {"dtype": model["dtype"]} if model.get("dtype") else {}
    return vllm_serve_command(extra_args, model=model["name"], **kwargs), {"VLLM_SERVER_DEV_MODE": "1"}


def format_command(argv: list[str], env: dict[str, str]) -> str:
    return " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()) + " " + shlex.join(argv)
