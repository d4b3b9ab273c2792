"""The memory plan (grpo_trl/check/memory.py): ZeRO accounting against the paper, parameter counts against real models,
LoRA counts against peft, and what ``grpo-trl check`` prints."""

from __future__ import annotations

import json

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from grpo_trl.check.memory import GIB, model_states, parse_size, plan_memory, sharding
from grpo_trl.cli import main as cli_main
from grpo_trl.models.shape import Shape

QWEN25_05B = {
    "model_type": "qwen2",
    "vocab_size": 151936,
    "hidden_size": 896,
    "intermediate_size": 4864,
    "num_hidden_layers": 24,
    "num_attention_heads": 14,
    "num_key_value_heads": 2,
    "tie_word_embeddings": True,
    "dtype": "bfloat16",
}


def model_state_bytes(params, **kw):
    return sum(model_states(params, **kw))


def test_zero_paper_worked_example():
    # Rajbhandari et al. 2020, Figure 1: 7.5B parameters, N_d = 64, K = 12
    gb = [model_state_bytes(7.5e9, n_gpus=64, stage=s) / 1e9 for s in (0, 1, 2, 3)]
    assert [round(x, 1) for x in gb] == [120.0, 31.4, 16.6, 1.9]
    assert model_state_bytes(7.5e9, n_gpus=1, stage=3) == 120e9  # one GPU: nothing to shard over


@given(
    params=st.floats(1e6, 1e12),
    n=st.integers(1, 1024),
    precision=st.sampled_from(["mixed", "bf16", "fp32"]),
)
def test_each_stage_shards_more_and_more_gpus_never_cost_more(params, n, precision):
    per_stage = [model_state_bytes(params, n_gpus=n, stage=s, precision=precision) for s in range(4)]
    assert all(a >= b for a, b in zip(per_stage, per_stage[1:]))
    assert per_stage[0] == model_state_bytes(params, n_gpus=1, precision=precision)  # DDP replicates
    assert per_stage[3] * n == pytest.approx(per_stage[0])  # ZeRO-3 divides everything by N
    more = [model_state_bytes(params, n_gpus=n + 1, stage=s, precision=precision) for s in range(4)]
    assert all(b <= a for a, b in zip(per_stage, more))


@pytest.mark.parametrize(
    "config",
    [
        QWEN25_05B,
        {**QWEN25_05B, "tie_word_embeddings": False, "num_hidden_layers": 2},
        {"model_type": "llama", "vocab_size": 1000, "hidden_size": 128, "intermediate_size": 344,
         "num_hidden_layers": 3, "num_attention_heads": 8, "num_key_value_heads": 8, "tie_word_embeddings": False},
        {"model_type": "llama", "vocab_size": 999, "hidden_size": 96, "intermediate_size": 200, "num_hidden_layers": 2,
         "num_attention_heads": 6, "num_key_value_heads": 2, "head_dim": 32, "tie_word_embeddings": True},
    ],
)  # fmt: skip
def test_parameter_count_matches_the_real_model(config):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = AutoConfig.for_model(**config)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(cfg)
    assert Shape.from_config(cfg.to_dict()).params()[0] == model.num_parameters()
    if config is QWEN25_05B:
        assert model.num_parameters() == 494_032_768  # Qwen2.5-0.5B's published count


@pytest.mark.parametrize("targets", ["all-linear", ["q_proj", "v_proj"], ["down_proj"]])
def test_lora_count_matches_peft(targets):
    from peft import LoraConfig, get_peft_model
    from transformers import Qwen2Config, Qwen2ForCausalLM

    cfg = Qwen2Config(vocab_size=300, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=True)  # fmt: skip
    model = get_peft_model(Qwen2ForCausalLM(cfg), LoraConfig(r=4, target_modules=targets, task_type="CAUSAL_LM"))
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert Shape.from_config(cfg.to_dict()).lora_params(4, targets) == trainable


def _items(plan):
    return {name: b for name, b, _ in plan.items}


def test_plan_terms_move_the_way_they_should():
    shape = Shape.from_config(QWEN25_05B)
    base = dict(batch=8, prompt_tokens=300, completion_tokens=512)
    full = _items(plan_memory(shape, beta=0.04, **base))
    assert full["weights"] == full["gradients"] == 2 * 494_032_768 and full["optimizer (Adam)"] == 2 * full["weights"]
    assert full["reference model"] == full["weights"]
    assert "reference model" not in _items(plan_memory(shape, beta=0.0, **base))
    lora = _items(plan_memory(shape, beta=0.04, lora={"r": 16, "target_modules": "all-linear"}, **base))
    assert "reference model" not in lora and lora["LoRA adapters + grads + Adam"] < full["gradients"] / 5
    qlora = _items(plan_memory(shape, lora={"r": 16}, quant_bits=4, **base))
    assert qlora["base weights"] < 0.6 * lora["base weights"]
    ckpt = _items(plan_memory(shape, gradient_checkpointing=True, **base))
    assert ckpt["activations"] < full["activations"] / 3
    assert _items(plan_memory(shape, **{**base, "batch": 16}))["activations"] == 2 * full["activations"]
    zero3 = {"distributed_type": "DEEPSPEED", "deepspeed_config": {"zero_stage": 3}}
    z3 = _items(plan_memory(shape, world_size=8, accelerate_config=zero3, beta=0.04, **base))
    assert z3["weights"] == 2 * 494_032_768 / 8 and z3["optimizer (Adam)"] == 12 * 494_032_768 / 8  # mixed precision
    assert z3["reference model"] == z3["weights"]
    coloc = plan_memory(shape, vllm_colocate_share=0.3, gpu_bytes=80 * GIB, **base)
    assert _items(coloc)["vLLM colocate"] == 0.3 * 80 * GIB and "generation KV cache" not in _items(coloc)
    assert not coloc.exceeds and plan_memory(shape, gpu_bytes=1 * GIB, **base).exceeds


@pytest.mark.parametrize(
    ("cfg", "want"),
    [
        (None, ("ddp", 0)),
        ({"distributed_type": "MULTI_GPU"}, ("ddp", 0)),
        ({"distributed_type": "DEEPSPEED", "deepspeed_config": {"zero_stage": 2}}, ("zero", 2)),
        ({"distributed_type": "FSDP", "fsdp_config": {"fsdp_version": 2, "fsdp_reshard_after_forward": True}},
         ("fsdp", 3)),
        ({"distributed_type": "FSDP", "fsdp_config": {"fsdp_sharding_strategy": "SHARD_GRAD_OP",
                                                      "fsdp_reshard_after_forward": False}}, ("fsdp", 2)),
    ],
)  # fmt: skip
def test_sharding_from_accelerate_configs(cfg, want):
    assert sharding(cfg) == want


def test_shipped_accelerate_configs_are_read():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "recipes" / "accelerate"
    got = {p.stem: sharding(yaml.safe_load(p.read_text())) for p in root.glob("*.yaml")}
    assert got["zero2"] == ("zero", 2) and got["zero3"] == ("zero", 3) and got["fsdp"] == ("fsdp", 3)
    assert got["ddp"] == ("ddp", 0)


@pytest.mark.parametrize("text", ["80", "80XB", "-1GiB", "GiB", "", "1e400GB", "nan GB"])
def test_bad_gpu_memory_sizes(text):
    with pytest.raises(ValueError, match="not a memory size"):
        parse_size(text)
    assert parse_size("16000MiB") == 16000 * 2**20 and parse_size("24g") == 24 * 2**30
    assert parse_size("80 GiB") == 80 * 2**30 and parse_size("1.5GB") == 1.5e9 and parse_size(".5K") == 512


def test_check_prints_the_plan_and_warns(tmp_path, make_recipe, capsys):
    path = make_recipe()
    assert cli_main(["check", str(path), "--gpu-memory", "80GiB"]) == 0
    out = capsys.readouterr().out
    assert "memory per GPU" in out and "activations" in out and "warning:" not in out
    assert cli_main(["check", str(path), "--gpu-memory", "100MiB"]) == 0
    assert "warning: expected peak" in capsys.readouterr().err
    assert cli_main(["check", str(path), "--gpu-memory", "lots"]) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith("error: ") and "--gpu-memory" in captured.err and captured.err.count("\n") == 1
    assert "memory per GPU" not in captured.out  # refused before any plan is printed


def test_check_reads_a_local_config_and_the_launch_sharding(tmp_path, make_recipe, capsys):
    model = tmp_path / "qwen05"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(QWEN25_05B))
    path = make_recipe(extra={"launch": {"num_processes": 4, "accelerate_config": "zero3"}})
    data = yaml.safe_load(path.read_text())
    data["model"] = {"name": str(model), "dtype": "bfloat16"}
    path.write_text(yaml.safe_dump(data))
    assert cli_main(["check", str(path), "--gpu-memory", "80GiB"]) == 0
    out = capsys.readouterr().out
    assert "494.03M params x 2 B (mixed), ZeRO-3 over 4" in out
    # a Hub name missing from the local cache: one line saying how to fetch the config, no network, exit 0
    data["model"] = {"name": "no-such-org/no-such-model-xyz"}
    path.write_text(yaml.safe_dump(data))
    assert cli_main(["check", str(path)]) == 0
    assert "memory per GPU      unknown: no-such-org/no-such-model-xyz's config.json" in capsys.readouterr().out


def test_check_warns_that_fsdp_on_cpu_would_not_shard(make_recipe, capsys):
    path = make_recipe(extra={"launch": {"num_processes": 2, "accelerate_config": "fsdp"}})
    assert cli_main(["check", str(path)]) == 0
    assert "warning: accelerate applies FSDP only on GPUs" in capsys.readouterr().err
    path = make_recipe(extra={"launch": {"num_processes": 2, "accelerate_config": "zero2"}})
    assert cli_main(["check", str(path)]) == 0
    assert "FSDP only on GPUs" not in capsys.readouterr().err


def test_an_accelerate_config_is_read_through_the_bounded_reader(tmp_path, make_recipe, capsys):
    # nested aliases: a few lines that expand to a million values; yaml.safe_load would build them all
    lines = ["a: &a [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"]
    lines += [f"{b}: &{b} [{', '.join([f'*{a}'] * 10)}]" for a, b in zip("abcde", "bcdef")]
    (tmp_path / "laughs.yaml").write_text("\n".join(lines) + "\n")
    path = make_recipe(extra={"launch": {"accelerate_config": str(tmp_path / "laughs.yaml")}})
    assert cli_main(["check", str(path)]) == 1
    err = capsys.readouterr().err
    assert "launch.accelerate_config:" in err and "expands to more than" in err and "name an accelerate config" in err


def test_gpu_bench_plan_reads_the_saved_config(tmp_path):
    from bench.gpu import QWEN25_05B as SHAPE
    from bench.gpu import VOCAB, planned_items

    (tmp_path / "config.json").write_text(json.dumps({"model_type": "qwen2", "vocab_size": VOCAB, **SHAPE}))

    def planned(*setting):
        items = planned_items(str(tmp_path), *setting, 40)
        assert items and not any(name.startswith("CUDA") for name in items)
        return sum(items.values())

    full = planned("full", False, 512)
    assert full > planned("lora", True, 512) > planned("qlora", True, 512) > 0
    assert planned("full", False, 128) < full


# docs/figures.md, NVIDIA H100 80GB HBM3, bench/gpu.py: (mode, grad ckpt, completion tokens) -> measured peak GiB
# (torch.cuda.max_memory_allocated; the peak's second digit comes from the table's plan / peak ratio). 8 x 8
# completions of the tiny chat template's 18-token prompts, bf16, LoRA r 16 all-linear.
H100_PEAKS = {
    ("full", False, 128): 5.20,
    ("full", False, 512): 9.45,
    ("full", True, 512): 4.06,
    ("lora", False, 512): 7.27,
    ("lora", True, 512): 1.64,
    ("qlora", True, 512): 1.02,
}


@pytest.mark.parametrize(
    ("setting", "peak"), list(H100_PEAKS.items()), ids=["-".join(map(str, k)) for k in H100_PEAKS]
)
def test_plan_within_15_percent_of_measured_h100_peaks(setting, peak):
    mode, ckpt, length = setting
    plan = plan_memory(
        Shape.from_config(QWEN25_05B),
        dtype="bfloat16",
        lora={"r": 16, "target_modules": "all-linear"} if mode != "full" else None,
        quant_bits=4 if mode == "qlora" else None,
        batch=8,
        generation_batch=8,
        prompt_tokens=18,
        completion_tokens=length,
        gradient_checkpointing=ckpt,
    )
    planned = sum(b for name, b, _ in plan.items if not name.startswith("CUDA context")) / GIB
    assert 0.85 <= planned / peak <= 1.15, f"plan {planned:.2f} GiB vs measured {peak} GiB"
