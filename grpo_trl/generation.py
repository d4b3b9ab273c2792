"""Generation backends around TRL: checks before training, and ``grpo-trl serve`` for vLLM server mode.

- ``preflight``: vLLM requested but not installed -> one error naming the extra; server mode -> a health check with a
  short timeout, so a missing server is reported in seconds instead of after TRL's retries.
- ``serve_command``: the exact command TRL's ``trl vllm-serve`` would run (``trl_adapter.vllm_serve_command``),
  built from the recipe's model and ``generation:`` settings.

Example:
    >>> health_url({"server_host": "10.0.0.2", "server_port": 8001})
    'http://10.0.0.2:8001/health'
"""

from __future__ import annotations

import importlib.util
import shlex
import time
import urllib.error
import urllib.request
from typing import Any, Protocol

from grpo_trl.errors import GenerationError, Problem

__all__ = ["GenerationError", "base_url", "check_server", "format_command", "health_url", "preflight"]


class Recipe(Protocol):
    """What this module reads of a ``grpo_trl.recipe.Recipe`` (a floor above: not imported)."""

    file: str
    model: dict
    generation: dict
    uses_vllm: bool
    vllm_mode: str


def base_url(gen: dict) -> str:
    """The server's base URL from ``generation:`` (``server_base_url`` wins over host and port, as in TRL)."""
    if gen.get("server_base_url"):
        return str(gen["server_base_url"]).rstrip("/")
    host = gen.get("server_host", "0.0.0.0")
    host = "127.0.0.1" if host == "0.0.0.0" else host
    return f"http://{host}:{gen.get('server_port', 8000)}"


def health_url(gen: dict) -> str:
    return base_url(gen) + "/health"


def check_server(url: str, timeout: float = 5.0) -> tuple[bool, str]:
    """GET ``url`` once with a ``timeout``: ``(True, "")`` on HTTP 200, else ``(False, why)``.

    Not TRL's ``VLLMClient.check_server`` (``trl.generation.vllm_client`` in TRL 1.16): constructing the client
    needs vLLM installed where ``check`` runs, its ``requests.get`` has no timeout (a server that accepts and never
    answers hangs it), and an answer other than 200 is retried forever without looking at ``total_timeout``."""
    start = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - the user's own server URL
            if response.status == 200:
                return True, ""
            return False, f"HTTP {response.status}"
    except urllib.error.HTTPError as exc:
        return False, f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        if "timed out" in str(reason) or time.monotonic() - start >= timeout:
            return False, f"no answer within {timeout:g} s"
        return False, str(reason)


def vllm_installed() -> bool:
    return importlib.util.find_spec("vllm") is not None


def preflight(recipe: Recipe, config: Any = None) -> None:
    """Fail fast on generation problems: vLLM missing, or no server answering in server mode."""
    if not recipe.uses_vllm:
        return
    if recipe.vllm_mode == "colocate" and not vllm_installed():
        raise GenerationError(
            [
                Problem(
                    recipe.file,
                    "generation.backend",
                    "vllm is not installed; pip install 'grpo-trl[vllm]' (GPU machines), or use backend: transformers",
                )
            ]
        )
    if recipe.vllm_mode == "server":
        gen = dict(recipe.generation)
        if config is not None:  # trainer.vllm_* fields count too
            gen.setdefault("server_host", config.vllm_server_host)
            gen.setdefault("server_port", config.vllm_server_port)
            gen.setdefault("server_base_url", config.vllm_server_base_url)
        url = health_url(gen)
        ok, why = check_server(url, float(gen.get("health_timeout", 5.0)))
        if not ok:
            raise GenerationError(
                [
                    Problem(
                        recipe.file,
                        "generation",
                        f"no vLLM server at {url} ({why}) — start it with `grpo-trl serve {recipe.file}` "
                        "on the GPU(s) not used for training",
                    )
                ]
            )


def serve_command(recipe: Recipe, extra_args: list[str] | None = None) -> tuple[list[str], dict[str, str]]:
    """The command (argv) and extra environment that serve the recipe's model the way TRL's trainer expects."""
    from grpo_trl.trl_adapter import vllm_serve_command

    gen, model = recipe.generation, recipe.model
    kwargs: dict[str, Any] = {"model": model["name"]}
    mapping = {
        "server_host": "host",
        "server_port": "port",
        "gpu_memory_utilization": "gpu_memory_utilization",
        "tensor_parallel_size": "tensor_parallel_size",
        "max_model_length": "max_model_len",
    }
    for key, arg in mapping.items():
        if gen.get(key) is not None:
            kwargs[arg] = gen[key]
    if model.get("dtype"):
        kwargs["dtype"] = model["dtype"]
    for key in ("revision", "trust_remote_code"):
        if model.get(key) is not None:
            kwargs[key] = model[key]
    return vllm_serve_command(extra_args, **kwargs), {"VLLM_SERVER_DEV_MODE": "1"}


def format_command(argv: list[str], env: dict[str, str]) -> str:
    return " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()) + " " + shlex.join(argv)
