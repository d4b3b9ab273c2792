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
