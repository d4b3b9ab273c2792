"""``model.init_kwargs``: from_pretrained keywords a recipe could not reach before (use_kernels, device_map,
output_router_logits...) pass through to ``GRPOConfig.model_init_kwargs``; ``check`` refuses unknown keys (with a
did-you-mean) and keys another ``model:`` field owns."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_trl.check import load_recipe
from grpo_trl.cli import main
from grpo_trl.models.init_kwargs import OWNED, init_kwargs_problems, known_keys


def _with(make_recipe, init_kwargs, **model):
    path = make_recipe()
    data = yaml.safe_load(path.read_text())
    data["model"].update(model, init_kwargs=init_kwargs)
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return path


def test_known_keys_are_read_from_transformers():
    keys = known_keys()
    assert {"use_kernels", "device_map", "output_router_logits", "max_memory", "rope_scaling"} <= keys
    assert not {"pretrained_model_name_or_path", "kwargs", "_from_auto"} & keys


def test_pass_through_reaches_grpo_config_beside_the_model_fields(make_recipe):
    path = _with(make_recipe, {"device_map": None, "use_kernels": False, "output_router_logits": True})
    cfg = load_recipe(path).to_grpo_config()
    assert cfg.model_init_kwargs == {
        "device_map": None,
        "use_kernels": False,
        "output_router_logits": True,
        "dtype": "float32",
    }


def test_a_config_field_reaches_the_loaded_model(make_recipe):
    """Not just the config: TRL hands the keywords to from_pretrained, which sets a config field from them."""
    from grpo_trl.train import build_trainer

    trainer = build_trainer(_with(make_recipe, {"attention_dropout": 0.25}))
    assert trainer.model.config.attention_dropout == 0.25


def test_unknown_key_is_one_error_line_with_did_you_mean(make_recipe, capsys):
    path = _with(make_recipe, {"use_kernel": True})
    assert main(["check", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "model.init_kwargs.use_kernel" in err and "did you mean 'use_kernels'?" in err


@pytest.mark.parametrize("key", sorted(OWNED))
def test_keys_another_field_owns_are_refused_naming_it(make_recipe, capsys, key):
    path = _with(make_recipe, {key: "x"})
    assert main(["check", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"model.init_kwargs.{key}: is set by {OWNED[key]}" in err
    assert ("model.dtype is set too" in err) == (OWNED[key] == "model.dtype")  # make_recipe sets dtype: float32


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=30), st.none() | st.booleans() | st.text(max_size=5), max_size=4))
def test_every_key_is_accepted_or_refused_with_one_problem(init):
    problems = init_kwargs_problems({"init_kwargs": init}, "r.yaml")
    refused = {p.key.removeprefix("model.init_kwargs.") for p in problems}
    assert len(problems) == len(refused)
    for key in init:
        assert (key in refused) == (key in OWNED or key not in known_keys() or key in ("config", "state_dict"))


def test_import_carries_a_peer_configs_model_init_kwargs_over(tmp_path):
    from grpo_trl.importer import import_config

    peer = tmp_path / "trl.yaml"
    peer.write_text(
        "model_name_or_path: Qwen/Qwen2.5-0.5B\n"
        "model_init_kwargs: {use_kernels: true, device_map: auto, torch_dtype: bfloat16}\n"
        "dataset_name: openai/gsm8k\nreward_funcs: [accuracy]\n"
    )
    model = import_config(str(peer), out_dir=tmp_path).recipe["model"]
    assert model["init_kwargs"] == {"use_kernels": True, "device_map": "auto"} and model["dtype"] == "bfloat16"
    assert init_kwargs_problems(model, "r.yaml") == []


@pytest.mark.parametrize(
    ("init_kwargs", "words"),
    [
        ({"tie_word_embeddings": "banana"}, "tie_word_embeddings failed (StrictDataclassFieldValidationError"),
        ({"device_map": "banana"}, "device_map failed (ValueError"),
        ({"key_mapping": 5}, "key_mapping failed"),
    ],
)
def test_values_check_accepts_but_from_pretrained_refuses_are_one_error_line_at_train(
    make_recipe, capsys, init_kwargs, words
):
    """check reads keys, not values; the values reach from_pretrained inside GRPOTrainer, which refuses them: one
    error line naming model.init_kwargs, exit 1 (was an internal error, exit 70)."""
    path = _with(make_recipe, init_kwargs)
    assert main(["check", str(path)]) == 0
    capsys.readouterr()
    assert main(["train", str(path)]) == 1
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "model.init_kwargs: loading the model with " + words in errors[0], err
    assert "internal error" not in err and "Traceback" not in err
