"""Reward-model entries (config-only checks), QLoRA mapping and its errors, chat templates for tool calling."""

from __future__ import annotations

import time

import pytest
import torch

from grpo_trl.check import load_recipe
from grpo_trl.check.rewards import build_rewards
from grpo_trl.models.chat_templates import resolve_template, template_problems
from grpo_trl.models.quantization import bnb_config, hardware_problems, quantization_problems
from grpo_trl.models.tiny import CHAT_TEMPLATE, build_tiny_reward_model
from tests.recipe.test_recipe import BASE, errors_for, write


@pytest.fixture(scope="module")
def tiny_reward(tmp_path_factory) -> str:
    return build_tiny_reward_model(tmp_path_factory.mktemp("rm") / "tiny-reward")


def test_reward_model_entries_are_checked_from_their_config(tmp_path, tiny_model, tiny_reward):
    import json
    from pathlib import Path

    ok = errors_for(tmp_path, {"rewards": [{"name": "countdown"}, {"model": tiny_reward, "weight": 0.5}]})
    assert ok == []
    # a causal LM is not a reward model
    causal = errors_for(tmp_path, {"rewards": [{"model": tiny_model}]})
    assert any("rewards.0.model" in e and "Qwen2ForCausalLM" in e and "not a reward model" in e for e in causal)
    # two labels is a classifier, not a scorer
    two = tmp_path / "two-labels"
    two.mkdir()
    config = json.loads((Path(tiny_reward) / "config.json").read_text())
    config["id2label"] = {"0": "a", "1": "b"}
    config["label2id"] = {"a": 0, "b": 1}
    (two / "config.json").write_text(json.dumps(config))
    labels = errors_for(tmp_path, {"rewards": [{"model": str(two)}]})
    assert any("2 labels" in e for e in labels), labels
    missing = errors_for(tmp_path, {"rewards": [{"model": str(tmp_path / "nowhere")}]})
    assert any("cannot read the config" in e for e in missing), missing
    bad_key = errors_for(tmp_path, {"rewards": [{"model": tiny_reward, "tokeniser": "x"}]})
    assert any("rewards.0.tokeniser" in e for e in bad_key)
    assert errors_for(tmp_path, {"rewards": [{"model": "builtin:tiny-reward"}]}) == []


def test_reward_model_weights_line_up_with_trl(tmp_path, tiny_reward):
    data = {**BASE, "rewards": [{"name": "countdown", "weight": 2.0}, {"model": tiny_reward, "weight": 0.5}]}
    recipe = load_recipe(write(tmp_path, data))
    funcs, weights = build_rewards(recipe)
    assert funcs[1] == tiny_reward and weights == [2.0, 0.5]
    assert recipe.to_grpo_config().reward_weights == [2.0, 0.5]


QLORA = {"load_in_4bit": True, "bnb_4bit_quant_type": "nf4", "bnb_4bit_compute_dtype": "bfloat16"}


def test_quantization_maps_to_bitsandbytes_config():
    config = bnb_config({**QLORA, "bnb_4bit_use_double_quant": True})
    assert config.load_in_4bit and config.bnb_4bit_quant_type == "nf4"
    assert config.bnb_4bit_compute_dtype == torch.bfloat16 and config.bnb_4bit_use_double_quant


@pytest.mark.parametrize(
    ("section", "lora", "key", "fix"),
    [
        (QLORA, False, "model.lora", "needs LoRA adapters"),
        ({"load_in_4bit": "yes"}, True, "model.quantization.load_in_4bit", "must be a boolean"),
        ({"bnb_4bit_quant_type": "nf4"}, True, "model.quantization", "load_in_4bit: true"),
        ({**QLORA, "load_in_8bit": True}, True, "model.quantization", "only one can be used"),
        ({**QLORA, "bnb_4bit_quant_type": "nf5"}, True, "model.quantization.bnb_4bit_quant_type", "nf4"),
        ({**QLORA, "bnb_4bit_compute_dtype": "bf16"}, True, "model.quantization.bnb_4bit_compute_dtype", "bfloat16"),
        ({**QLORA, "load_in_4bits": True}, True, "model.quantization.load_in_4bits", "did you mean 'load_in_4bit'"),
    ],
)
def test_quantization_errors(section, lora, key, fix):
    problems = quantization_problems(section, has_lora=lora)
    assert any(p.key == key and fix in p.message for p in problems), problems


def test_quantization_in_a_recipe(tmp_path):
    model = {"name": "x", "quantization": QLORA, "lora": {"r": 8}}
    assert errors_for(tmp_path, {"model": model}) == []
    assert any("needs LoRA" in e for e in errors_for(tmp_path, {"model": {"name": "x", "quantization": QLORA}}))
    mapping = errors_for(tmp_path, {"model": {"name": "x", "quantization": "nf4"}})  # the schema: one line
    assert any("model.quantization: expected mapping" in e for e in mapping), mapping


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks what a machine without CUDA is told")
def test_missing_cuda_is_said_before_anything_loads(tmp_path, capsys):
    assert any("no CUDA GPU" in p.message for p in hardware_problems(QLORA))
    from grpo_trl.cli import train_main as main

    data = {**BASE, "model": {"name": "builtin:tiny", "quantization": QLORA, "lora": {"r": 8}}}
    data["trainer"] = {**BASE["trainer"], "output_dir": str(tmp_path / "out")}
    assert main([str(write(tmp_path, data))]) == 1
    err = capsys.readouterr().err
    assert "error: " in err and "no CUDA GPU" in err and "Traceback" not in err
    assert not (tmp_path / "out" / "tiny-model").exists()  # nothing was loaded


def test_trl_templates_resolve_and_unknown_names_are_refused(tmp_path):
    assert "<tool_call>" in resolve_template("trl:qwen2_5")
    errs = errors_for(tmp_path, {"model": {"name": "x", "chat_template": "trl:qwen2.5"}})
    assert any("model.chat_template" in e and "did you mean 'qwen2_5'" in e for e in errs), errs


def test_template_that_drops_tool_calls_fails_with_the_fix(tiny_model):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model)
    assert tok.chat_template == CHAT_TEMPLATE
    problems = template_problems(tok)
    assert problems and "model.chat_template: trl:qwen2_5" in problems[0]
    tok.chat_template = resolve_template("trl:qwen2_5")
    assert template_problems(tok) == []
    assert getattr(tok, "response_template", None) is None  # the check leaves the tokenizer as it found it
    # a template that renders tools but that TRL cannot parse responses from
    tok.chat_template = resolve_template("trl:qwen2_5").replace("<tool_call>", "<call>")
    assert any("cannot parse tool calls" in p for p in template_problems(tok))


@pytest.mark.parametrize(
    ("model", "ok"),
    [
        ({"name": "builtin:tiny"}, False),
        ({"name": "builtin:tiny", "chat_template": "trl:qwen2_5"}, True),
        ({"name": "builtin:tiny-tools"}, True),
    ],
)
def test_check_asks_trl_about_the_template_when_tools_are_used(tmp_path, model, ok):
    errs = errors_for(tmp_path, {"model": model, "tools": ["calculator"]})
    assert (errs == []) is ok, errs
    if not ok:
        assert any(e.startswith("model.chat_template") and "trl:qwen2_5" in e for e in errs)


def test_reward_model_check_never_goes_online(tmp_path, monkeypatch):
    """`check` reads a reward model's config from a local folder or the local cache only, as it does the policy's:
    a Hub id not downloaded yet is TRL's to fetch at training time, not a reason to hang on the network."""
    import socket

    import huggingface_hub.constants
    import huggingface_hub.file_download

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)  # as on a machine with network
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    requested = []

    def no_network(*args, **kwargs):
        requested.append(args[:1] or kwargs.get("url"))
        raise OSError("no network in this test")

    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: no_network(*a, **k))
    monkeypatch.setattr(huggingface_hub.file_download, "get_hf_file_metadata", no_network)  # the HEAD request
    start = time.perf_counter()
    assert errors_for(tmp_path, {"rewards": [{"model": "some-org/not-downloaded-rm"}]}) == []
    assert not any("not-downloaded-rm" in str(r) for r in requested), requested
    assert time.perf_counter() - start < 10
    missing = errors_for(tmp_path, {"rewards": [{"model": "./no-such-folder"}]})  # a path, not a Hub id
    assert any("cannot read the config" in e for e in missing), missing


@pytest.mark.parametrize(
    "make, says",
    [
        (lambda p: __import__("os").mkfifo(p), "named pipe"),
        (lambda p: p.mkdir(), "folder"),
        (lambda p: open(p, "wb").truncate(2**40), "too large"),  # sparse: no disk used
        (lambda p: p.symlink_to(p.name), "symbolic links"),
        (lambda p: None, "not found"),
    ],
    ids=["fifo", "folder", "1-TiB", "symlink-loop", "missing"],
)
def test_a_chat_template_file_is_read_bounded_and_says_what_else_is_there(tmp_path, make, says):
    make(tmp_path / "t.jinja")
    started = time.monotonic()
    with pytest.raises(ValueError, match=says):
        resolve_template("t.jinja", tmp_path)
    assert time.monotonic() - started < 5
