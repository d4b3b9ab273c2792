"""Merged-adapter generation: same tokens as unmerged generation, and the frozen base restored bit for bit."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from peft import LoraConfig, get_peft_model
from transformers import Qwen2Config, Qwen2ForCausalLM

from grpo_trl.models.lora_generation import merge_for_generation, merged_weights


def _model(seed: int, dtype=torch.float32, targets="all-linear"):
    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=97,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        pad_token_id=0,
        eos_token_id=1,
    )
    base = Qwen2ForCausalLM(config).to(dtype)
    # init_lora_weights=False: random B, so the adapters change the output (peft's default B=0 would not)
    return get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules=targets, init_lora_weights=False))


@settings(max_examples=8, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    dtype=st.sampled_from([torch.float32, torch.bfloat16]),
    targets=st.sampled_from(["all-linear", ["q_proj", "v_proj"], ["down_proj"]]),
    rounds=st.integers(1, 30),
)
def test_the_base_is_restored_bit_for_bit(seed, dtype, targets, rounds):
    model = _model(seed, dtype, targets)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    for _ in range(rounds):
        with merged_weights(model):
            pass
    after = model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_merged_forward_and_greedy_generation_match_the_adapters(seed):
    model = _model(seed)
    ids = torch.randint(2, 97, (3, 7))
    with torch.no_grad():
        plain = model(input_ids=ids).logits
        with merged_weights(model):
            merged = model(input_ids=ids).logits
    assert torch.allclose(plain, merged, atol=1e-5)
    with model.disable_adapter(), torch.no_grad():
        assert not torch.allclose(model(input_ids=ids).logits, plain, atol=1e-3)  # the adapters matter here
    expected = model.generate(input_ids=ids, max_new_tokens=8, do_sample=False)
    merge_for_generation(model)
    assert torch.equal(model.generate(input_ids=ids, max_new_tokens=8, do_sample=False), expected)
    with torch.no_grad():
        assert torch.equal(model(input_ids=ids).logits, plain)  # adapters active again, base untouched


def test_gradients_still_flow_to_the_adapters_after_merged_generation():
    model = _model(3)
    merge_for_generation(model)
    ids = torch.randint(2, 97, (2, 5))
    model.generate(input_ids=ids, max_new_tokens=4, do_sample=False)
    model(input_ids=ids).logits.sum().backward()
    grads = [p.grad for n, p in model.named_parameters() if "lora_" in n]
    assert grads and all(g is not None and g.abs().sum() > 0 for g in grads)
    assert all(p.grad is None for n, p in model.named_parameters() if "lora_" not in n)


RECIPE = "recipes/demo/tiny-cpu.yaml"


def _sets(tmp_path, *extra):
    return [
        f"trainer.output_dir={tmp_path}/out",
        "trainer.max_steps=2",
        "trainer.save_strategy=no",
        "trainer.per_device_train_batch_size=8",
        "trainer.num_generations=4",
        "data.size=16",
        *extra,
    ]


def test_a_recipe_trains_with_merged_generation_and_leaves_the_base_untouched(tmp_path):
    import grpo_trl

    sets = _sets(tmp_path, "model.lora={r: 4, target_modules: all-linear}", "model.lora_merged_generation=true")
    trainer = grpo_trl.build_trainer(RECIPE, sets)
    assert trainer.model.generate.__name__ == "generate"  # wrapped (functools.wraps keeps the name)
    assert trainer.model.generate.__wrapped__ is not None
    base = {k: v.clone() for k, v in trainer.model.state_dict().items() if "lora_" not in k}
    trainer.train()
    after = trainer.model.state_dict()
    assert all(torch.equal(base[k], after[k]) for k in base)  # frozen base: not one bit moved
    assert any(not torch.equal(v, 0 * v) for k, v in after.items() if "lora_B" in k)  # the adapters trained


@pytest.mark.parametrize(
    "extra, why",
    [
        ([], "no LoRA adapters"),
        (["model.lora={}", "trainer.use_vllm=true"], "TRL merges the adapters for it itself"),
    ],
)
def test_check_names_a_merged_generation_that_cannot_apply(tmp_path, extra, why):
    from grpo_trl.check import load_recipe
    from grpo_trl.errors import GrpoTrlError

    with pytest.raises(GrpoTrlError) as err:
        load_recipe(RECIPE, _sets(tmp_path, "model.lora_merged_generation=true", *extra))
    assert any(p.key == "model.lora_merged_generation" and why in p.message for p in err.value.problems)
