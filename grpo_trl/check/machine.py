"""What this machine lacks for a valid recipe (a GPU, the Hub or its cache, vLLM or its server), as ``warning:``
lines (the recipe may be meant for another machine), and a note on a run already in ``output_dir``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from grpo_trl.recipe.core import Recipe


def hub_dataset(cfg: dict) -> str | None:
    """The Hub dataset the ``data:`` section downloads (``None``: generated or local; a mixture: its first part)."""
    from grpo_trl.data.registry import builder_params, from_plugin, get_builder

    if cfg.get("mixture"):
        return next(filter(None, (hub_dataset(part) for part in cfg["mixture"])), None)
    builder = get_builder(cfg["builder"])
    params = builder_params(builder)
    if from_plugin(builder) or cfg.get("path") or cfg.get("source") == "generate" or "source" not in params:
        return None
    source = cfg.get("source") or params.get("source")
    return source if isinstance(source, str) and source and not Path(source).expanduser().exists() else None


def _cached(repo_id: str, repo_type: str) -> bool:
    from huggingface_hub import constants
    from huggingface_hub.file_download import repo_folder_name

    try:
        return (Path(constants.HF_HUB_CACHE) / repo_folder_name(repo_id=repo_id, repo_type=repo_type)).is_dir()
    except ValueError:  # not a valid repo id: the loader says so when train builds it
        return False


def hub_model(name: str, base_dir: Path) -> str | None:
    """``name`` when it is a Hub id (not built in, not a local folder)."""
    local = name.startswith("builtin:") or Path(name).expanduser().exists() or (base_dir / name).exists()
    return None if local else name


def machine_warnings(recipe: Recipe, config: Any) -> list[str]:
    """``warning:`` lines for what this machine lacks, and the existing run in ``output_dir``."""
    import torch
    from huggingface_hub import constants

    out = []
    gpu = torch.cuda.is_available()
    trainer = recipe.trainer
    if not gpu:
        for key in ("bf16", "fp16"):
            if trainer.get(key) is True:
                out.append(f"trainer.{key}: true needs a CUDA GPU, which this machine lacks; on CPU set {key}: false")
        if recipe.model.get("quantization"):
            out.append("model.quantization needs a CUDA GPU (bitsandbytes), which this machine lacks")
    if recipe.model.get("quantization"):
        import importlib.util

        if importlib.util.find_spec("bitsandbytes") is None:
            out.append("model.quantization needs bitsandbytes, not installed here: pip install 'grpo-trl[qlora]'")
    if recipe.uses_vllm:
        out += _vllm_warnings(recipe, config, gpu)
    if trainer.get("push_to_hub"):
        from huggingface_hub import get_token

        if constants.HF_HUB_OFFLINE or get_token() is None:  # transformers creates the repo when the trainer is made
            out.append(
                "trainer.push_to_hub: train creates the Hub repo when it starts, and this machine has "
                + ("HF_HUB_OFFLINE set" if constants.HF_HUB_OFFLINE else "no Hub token")
                + ": set HF_TOKEN (or `hf auth login`) where the Hub answers, or push_to_hub: false"
            )
    hub = [("model.name", hub_model(str(recipe.model.get("name")), recipe.base_dir), "model")]
    hub += [("data", hub_dataset(recipe.dataset), "dataset")]
    for key, repo, kind in hub:
        if repo and not _cached(repo, kind):
            flag = " --repo-type dataset" if kind == "dataset" else ""
            out.append(
                f"{key}: {repo} is a Hub {kind} not in the local cache, and HF_HUB_OFFLINE is set: train cannot "
                f"download it; unset HF_HUB_OFFLINE, or on a connected machine `hf download {repo}{flag}`"
                if constants.HF_HUB_OFFLINE
                else f"{key}: {repo} is downloaded from the Hugging Face Hub when train starts (not cached here)"
            )
    return [f"warning: {recipe.file}: {line}" for line in out] + _existing_run(recipe, config)


def _vllm_warnings(recipe: Recipe, config: Any, gpu: bool) -> list[str]:
    from grpo_trl.generation import check_server, health_url, vllm_installed

    if recipe.vllm_mode == "colocate":
        if not vllm_installed():
            return ["generation.backend: vllm is not installed here: pip install 'grpo-trl[vllm]' (GPU machines)"]
        return [] if gpu else ["generation.backend: vllm colocated with training needs a CUDA GPU here"]
    gen = {
        "server_host": config.vllm_server_host,
        "server_port": config.vllm_server_port,
        "server_base_url": config.vllm_server_base_url,
        **recipe.generation,
    }
    url = health_url(gen)
    if not any(host in url for host in ("://localhost", "://127.0.0.1", "://0.0.0.0")):
        return []  # a server elsewhere: train checks it answers before loading the model
    ok, why = check_server(url, 0.5)
    if ok:
        return []
    return [f"generation: no vLLM server at {url} ({why}); start it with `grpo-trl serve {recipe.file}`"]


def _existing_run(recipe: Recipe, config: Any) -> list[str]:
    from transformers.trainer_utils import get_last_checkpoint

    from grpo_trl.run.names import STATE

    folder = (Path.cwd() / os.path.expanduser(str(config.output_dir))).resolve()
    if not folder.is_dir():
        return []
    last = get_last_checkpoint(str(folder))
    if not (last or (folder / STATE).exists() or (folder / "trainer_state.json").exists()):
        return []
    at = f" (last checkpoint: {Path(last).name})" if last else ""
    return [
        f"note: trainer.output_dir {folder} holds a run{at}: `grpo-trl train {recipe.file} --resume` continues it, "
        "`--overwrite` starts again"
    ]
