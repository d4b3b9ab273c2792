"""``async_grpo:``: AsyncGRPOConfig typed from the installed TRL, check's problems and plan, serve's LoRA flags
(against TRL's own server check), and the trainer class train builds (on CPU: as far as TRL's CUDA-only probe)."""

from __future__ import annotations

import dataclasses
import os
import re
import tempfile
import traceback
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_trl.check import load_recipe
from grpo_trl.check.validate import validate
from grpo_trl.cli import main as cli_main
from grpo_trl.recipe.async_grpo import async_model, config_class, plan_lines, serve_extras, trainer_class

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
from trl import GRPOConfig  # noqa: E402
from trl.experimental.async_grpo.async_grpo_trainer import select_adapter_sync  # noqa: E402

ASYNC_FIELDS = {f.name for f in dataclasses.fields(config_class()) if f.init}
GRPO_ONLY = sorted({f.name for f in dataclasses.fields(GRPOConfig) if f.init} - ASYNC_FIELDS - {"reward_weights"})
FAST = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def recipe_dict(name: str = "builtin:tiny", **sections) -> dict:
    base = {
        "model": {"name": name, "dtype": "float32"},
        "data": {"builder": "countdown", "source": "generate", "size": 16},
        "rewards": [{"name": "countdown"}],
        "generation": {"backend": "vllm", "vllm_mode": "server", "server_port": 8001, "server_timeout": 2},
        "trainer": {"output_dir": "out", "num_generations": 4, "per_device_train_batch_size": 8, "report_to": "none"},
        "async_grpo": {},
    }
    for name, value in sections.items():
        if value is None:
            base.pop(name, None)
        elif isinstance(value, dict) and isinstance(base.get(name), dict):
            base[name] = {**base[name], **value}
        else:
            base[name] = value
    return base


def load(data: dict, folder: str | None = None):
    folder = folder or tempfile.mkdtemp()
    path = Path(folder) / "recipe.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_recipe(path, validate=False)


def keys(recipe) -> set[str]:
    return {p.key for p in validate(recipe)}


def test_section_is_every_async_only_field_of_the_installed_class():
    assert set(async_model().model_fields) == ASYNC_FIELDS - {f.name for f in dataclasses.fields(GRPOConfig)}
    assert {"max_staleness", "max_inflight_tasks", "weight_sync_steps", "queue_maxsize"} <= set(
        async_model().model_fields
    )


def test_a_plain_async_recipe_validates_and_builds_a_real_config():
    recipe = load(recipe_dict(async_grpo={"max_staleness": 2, "weight_sync_steps": 3}))
    assert validate(recipe) == []
    from grpo_trl.recipe.async_grpo import to_async_config

    cfg = to_async_config(recipe)
    assert type(cfg).__name__ == "AsyncGRPOConfig"
    assert (cfg.max_staleness, cfg.weight_sync_steps, cfg.vllm_server_base_url) == (2, 3, "http://localhost:8001")
    assert (cfg.num_generations, cfg.per_device_train_batch_size, cfg.vllm_server_timeout) == (4, 8, 2)


@FAST
@given(name=st.sampled_from(GRPO_ONLY))
def test_every_grpo_only_trainer_field_is_refused_by_name(name):
    default = next(f for f in dataclasses.fields(GRPOConfig) if f.name == name)
    value = default.default if default.default is not dataclasses.MISSING else None
    recipe = load(recipe_dict(trainer={name: value}, generation=None))  # nothing else to conflict with
    assert f"trainer.{name}" in keys(recipe)


@FAST
@given(
    field=st.sampled_from(["max_staleness", "weight_sync_steps", "queue_maxsize", "max_inflight_tasks"]),
    value=st.one_of(st.text(max_size=3), st.floats(allow_nan=False), st.lists(st.integers(), max_size=2)),
)
def test_malformed_async_values_are_refused_at_their_key(field, value):
    recipe = load(recipe_dict(async_grpo={field: value}))
    assert any(k.startswith(f"async_grpo.{field}") or k == "async_grpo" for k in keys(recipe))


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"async_grpo": {"max_stalenes": 1}}, "async_grpo.max_stalenes"),
        ({"generation": {"vllm_mode": "colocate"}}, "generation.vllm_mode"),
        ({"rewards": [{"name": "countdown", "weight": 2.0}]}, "rewards[0].weight"),
        ({"rollout_func": "os.path:join"}, "rollout_func"),
        ({"model": {"lora": {"r": 4, "target_modules": ["q_proj", "lm_head"]}}}, "model.lora.target_modules"),
    ],
)
def test_what_async_grpo_cannot_honour_is_one_problem_at_its_key(change, key):
    assert key in keys(load(recipe_dict(**change)))


@FAST
@given(
    staleness=st.integers(0, 8),
    per_device=st.sampled_from([4, 8, 16]),
    accumulation=st.integers(1, 4),
    world=st.integers(1, 4),
    inflight=st.sampled_from([-1, 1, 64]),
)
def test_plan_arithmetic(staleness, per_device, accumulation, world, inflight):
    trainer = {"per_device_train_batch_size": per_device, "gradient_accumulation_steps": accumulation}
    trainer["num_train_epochs"] = 2.0
    async_ = {"max_staleness": staleness, "max_inflight_tasks": inflight}
    text = "\n".join(plan_lines(load(recipe_dict(trainer=trainer, async_grpo=async_)), world, 16, []))
    per_step = per_device * accumulation * world
    inflight = inflight if inflight >= 0 else max(staleness, 1) * per_step
    assert f" {per_step} completions per optimizer step; up to {inflight} requests in flight" in text
    groups, ceiling = re.search(r"after (\d+) prompt groups .* max_steps (\d+) is only a ceiling", text).groups()
    assert int(groups) == 32 and int(ceiling) * per_step >= 32 * 4  # the ceiling covers every group


def test_check_prints_the_async_plan_instead_of_the_generation_batch(tmp_path, capsys):
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(recipe_dict(async_grpo={"max_staleness": 3, "weight_sync_steps": 2})))
    assert cli_main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "AsyncGRPOTrainer" in out and "more than 3 version(s) old are dropped" in out
    assert "every 2 step(s)" in out and "generation batch" not in out


@FAST
@given(staleness=st.integers(0, 6), rank=st.sampled_from([1, 4, 8, 16, 33]))
def test_serve_lora_flags_satisfy_trls_own_server_check(tiny_model, staleness, rank):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    lora = {"r": rank, "target_modules": ["q_proj", "v_proj"]}
    recipe = load(recipe_dict(tiny_model, model={"lora": lora}, async_grpo={"max_staleness": staleness}))
    flags, env = serve_extras(recipe, ["--enforce-eager"])
    assert env == {"VLLM_ALLOW_RUNTIME_LORA_UPDATING": "1"} and flags[-1] == "--enforce-eager"
    served = {"max_lora_rank": int(flags[flags.index("--max-lora-rank") + 1])}
    served["max_loras"] = int(flags[flags.index("--max-loras") + 1])
    assert "--enable-lora" in flags and served["max_loras"] >= staleness + 1
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(tiny_model), LoraConfig(**lora))
    info = {"lora_config": served, "parallel_config": {"data_parallel_size": 1}}
    args = type("Args", (), {"max_staleness": staleness})()  # the one field select_adapter_sync reads
    assert select_adapter_sync(info, model, args) is True
    fewer = {**info, "lora_config": {**served, "max_loras": served["max_loras"] - 1}}
    with pytest.raises(ValueError, match="max-loras"):  # one slot fewer: TRL refuses the server
        select_adapter_sync(fewer, model, args)


def test_serve_dry_run_adds_lora_flags_only_for_async_lora(tmp_path, capsys):
    lora = {"lora": {"r": 8, "target_modules": ["q_proj"]}}
    for data, expected in [
        (recipe_dict(model=lora, async_grpo={"max_staleness": 4}), True),
        (recipe_dict(model=lora, async_grpo=None), False),
        (recipe_dict(), False),
    ]:
        path = tmp_path / "r.yaml"
        path.write_text(yaml.safe_dump(data))
        assert cli_main(["serve", str(path), "--dry-run"]) == 0
        out = capsys.readouterr().out
        assert ("--enable-lora --max-lora-rank 8 --max-loras 6" in out) is expected
        assert ("VLLM_ALLOW_RUNTIME_LORA_UPDATING=1" in out) is expected and "--weight-transfer-config" in out


def test_trainer_class_follows_the_section():
    from trl import GRPOTrainer

    assert trainer_class(load(recipe_dict(async_grpo=None))) is GRPOTrainer
    build = trainer_class(load(recipe_dict()))
    with pytest.raises(TypeError, match="eval_dataset"):
        build(model="m", eval_dataset=[1])


def test_train_builds_async_grpo_trainer_up_to_trls_cuda_probe(tiny_model, tmp_path):
    """On CPU, AsyncGRPOTrainer.__init__ loads the model, tokenizer and Trainer, then TRL asks CUDA for its peak
    FLOPs (``get_peak_flops_per_device``), which a CPU-only torch refuses: the run stops there, before any server."""
    import torch

    from grpo_trl.train import build_trainer

    if torch.cuda.is_available():
        pytest.skip("with CUDA the trainer goes on to the vLLM server, which this test does not start")
    data = recipe_dict(tiny_model, trainer={"output_dir": str(tmp_path / "out"), "max_steps": 2})
    with pytest.raises(Exception) as info:  # noqa: PT011 - TRL's own error, checked by where it came from
        build_trainer(load(data, str(tmp_path)))
    frames = [(Path(f.filename).name, f.name) for f in traceback.extract_tb(info.value.__traceback__)]
    assert ("async_grpo_trainer.py", "__init__") in frames
    assert frames[-1][1] == "_lazy_init" or "get_peak_flops_per_device" in {name for _, name in frames}
