"""Every built-in model has the offline config check builds its meta model from, matching what its builder makes."""

import pytest

from grpo_trl.models.builtin import BUILDERS, builtin_config


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_every_builtin_has_an_offline_config(name):
    config = builtin_config(name)
    text = config.get("text_config", config)  # a vision-language model keeps its language model's sizes there
    assert config.get("model_type") and (text.get("vocab_size", 1) > 0)


@pytest.mark.parametrize(
    "name, tokenizer",
    [
        ("builtin:tiny-gsm8k", "grpo_trl.models.tiny_gsm8k:_tokenizer"),
    ],
)
def test_the_offline_vocab_is_the_builders_tokenizer(name, tokenizer):
    import importlib

    module, attr = tokenizer.split(":")
    assert builtin_config(name)["vocab_size"] == len(getattr(importlib.import_module(module), attr)())


# sha256 (first 16 hex digits) of the weights and tokenizer each builder writes: the demo figures depend on them
PINNED = {
    "builtin:tiny": {"model.safetensors": "ebf423b88a13cf5d", "tokenizer.json": "192a11b159810ab7"},
    "builtin:tiny-reward": {"model.safetensors": "ae37501fbb1d9f05", "tokenizer.json": "192a11b159810ab7"},
    "builtin:tiny-vlm": {"model.safetensors": "4ad96d76a278d042", "tokenizer.json": "f46a9cabaf7d60a5"},
}


def _digests(folder) -> dict:
    import hashlib
    from pathlib import Path

    files = ("model.safetensors", "tokenizer.json")
    return {name: hashlib.sha256((Path(folder) / name).read_bytes()).hexdigest()[:16] for name in files}


def test_builtin_tiny_is_bit_identical(tiny_model):
    assert _digests(tiny_model) == PINNED["builtin:tiny"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["builtin:tiny-reward", "builtin:tiny-vlm"])
def test_random_builtins_are_bit_identical(name, tmp_path):
    assert _digests(BUILDERS[name](tmp_path / "m")) == PINNED[name]
