"""Check runs what train constructs, minus the weights: the optimizer and LR scheduler (on a dummy parameter), the
GenerationConfig TRL builds, the model with its attention implementation, and TRL's unenforced bounds. Inputs
check once accepted and train then crashed on (exit 70) or trained as something else (adversarial finds)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_trl.cli import main as cli_main
from tests.conftest import tiny_recipe


def _check(tmp_path, capsys, trainer: dict) -> tuple[int, str]:
    path = tiny_recipe(tmp_path, "no-such-org/no-such-model", trainer=trainer)
    rc = cli_main(["check", str(path)])
    return rc, capsys.readouterr().err


# Each of these passed check and ended train with "grpo-trl: internal error (...)", exit 70, at step 0 or 1.
CRASH_AT_TRAIN = [
    # ZeroDivisionError: integer modulo by zero (TRL's SyncRefModelCallback: step % ref_model_sync_steps)
    ("ref_model_sync_steps_0", {"sync_ref_model": True, "ref_model_sync_steps": 0}, "trainer.ref_model_sync_steps"),
    # ValueError: batch_size should be a positive integer value, but got batch_size=0
    ("steps_per_generation_0", {"steps_per_generation": 0}, "trainer.steps_per_generation"),
    # ValueError: Invalid beta parameter at index 0: 5 (torch.optim.AdamW)
    ("adam_beta1_5", {"adam_beta1": 5}, "trainer.adam_beta1"),
    ("adam_epsilon_negative", {"adam_epsilon": -1.0}, "trainer.adam_epsilon"),
    ("lr_scheduler_kwargs_unknown", {"lr_scheduler_kwargs": {"bogus": 1}}, "trainer.lr_scheduler_kwargs"),
    ("two_bad_optimizer_keys", {"adam_beta2": 2.0, "adam_epsilon": -1.0}, "trainer.adam_beta2"),
    # ValueError: Invalid `cache_implementation` (bogus). Choose one of: ('static', ...)
    ("cache_implementation_bogus", {"cache_implementation": "bogus"}, "trainer.cache_implementation"),
    # ValueError: `max_new_tokens` must be greater than 0, but is 0. (transformers' GenerationConfig)
    ("generation_kwargs_max_new_tokens_0", {"generation_kwargs": {"max_new_tokens": 0}}, "trainer.generation_kwargs"),
    # silently set as an attribute by GenerationConfig, read by nothing
    ("generation_kwargs_unknown", {"generation_kwargs": {"num_beam": 2}}, "trainer.generation_kwargs.num_beam"),
    # TRL clamps the ratio at delta: <= 0 flips the loss's sign (trains as something else)
    ("delta_negative", {"delta": -1.0}, "trainer.delta"),
    ("top_entropy_quantile_2", {"top_entropy_quantile": 2.0}, "trainer.top_entropy_quantile"),
    ("vllm_importance_sampling_cap_negative", {"vllm_importance_sampling_cap": -1.0}, "trainer.vllm_importance"),
]


@pytest.mark.parametrize("name,trainer,key", CRASH_AT_TRAIN, ids=[c[0] for c in CRASH_AT_TRAIN])
def test_check_refuses_what_train_crashes_on(tmp_path, capsys, name, trainer, key):
    rc, err = _check(tmp_path, capsys, trainer)
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert rc == 1 and len(lines) == 1 and key in lines[0], err


@pytest.mark.parametrize(
    "trainer",
    [
        {"adam_beta1": 0.8, "weight_decay": 0.1, "lr_scheduler_type": "cosine", "warmup_steps": 0.1},
        {"generation_kwargs": {"num_beams": 1, "suppress_tokens": [0]}, "cache_implementation": "static"},
        {"delta": 1.5, "top_entropy_quantile": 0.2, "sync_ref_model": True, "ref_model_sync_steps": 1},
    ],
)
def test_check_accepts_what_train_runs(tmp_path, capsys, trainer):
    rc, err = _check(tmp_path, capsys, trainer)
    assert rc == 0, err


def test_generation_kwargs_go_to_vllm_unchecked_by_transformers(tmp_path, capsys):
    """With vLLM, generation_kwargs are vLLM's SamplingParams: GenerationConfig's keywords do not apply."""
    rc, err = _check(tmp_path, capsys, {"use_vllm": True, "generation_kwargs": {"logprobs": 1}})
    assert rc == 0 and "trainer.generation_kwargs" not in err, err


_NUMBER = st.one_of(st.floats(-2, 2, allow_nan=False), st.sampled_from([0.0, 1.0, 0.999, -1e-9]))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(beta1=_NUMBER, beta2=_NUMBER, eps=_NUMBER, decay=_NUMBER)
def test_check_accepts_exactly_what_adamw_accepts(tmp_path, beta1, beta2, eps, decay):
    import torch

    from grpo_trl.check.validate import trl_problems
    from grpo_trl.recipe.core import open_recipe

    values = {"adam_beta1": beta1, "adam_beta2": beta2, "adam_epsilon": eps, "weight_decay": decay}
    try:
        torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], betas=(beta1, beta2), eps=eps, weight_decay=decay)
        torch_ok = True
    except ValueError:
        torch_ok = False
    recipe = open_recipe(tiny_recipe(tmp_path, "no-such-org/no-such-model", trainer=values))
    problems = list(recipe.problems) or trl_problems(recipe, 1)  # the schema's bounds, then the built optimizer
    assert (not problems) == torch_ok, problems
    assert all(p.key.removeprefix("trainer.") in values for p in problems), problems


def test_check_refuses_flash_attention_without_flash_attn(tmp_path, capsys, tiny_model):
    import importlib.util

    if importlib.util.find_spec("flash_attn") is not None:
        pytest.skip("flash_attn is installed here")
    path = tiny_recipe(tmp_path, tiny_model)
    text = path.read_text().replace("dtype: float32", "dtype: float32\n  attn_implementation: flash_attention_2")
    path.write_text(text)
    rc = cli_main(["check", str(path)])
    err = capsys.readouterr().err
    assert rc == 1 and "model.attn_implementation" in err and "sdpa" in err, err


@pytest.mark.parametrize("args", [{"max_completion_len": -5}, {"max_completion_len": 0}])
def test_check_refuses_a_length_that_is_not_positive(tmp_path, capsys, args):
    """Lengths are positive wherever they are typed (fields.name_bounds): reward args as trainer fields."""
    path = tiny_recipe(tmp_path, "no-such-org/no-such-model", rewards=[{"name": "soft_overlong", "args": args}])
    rc = cli_main(["check", str(path)])
    err = capsys.readouterr().err
    assert rc == 1 and "rewards.0.args.max_completion_len: must be a positive integer" in err, err


@pytest.mark.parametrize("cache", [-1, 11, 20])
def test_soft_overlong_refuses_a_cache_outside_its_length(cache):
    """TRL's ramp starts at max_completion_len - soft_punish_cache: outside [0, max] it punishes every completion."""
    from grpo_trl.errors import RewardError
    from grpo_trl.rewards.registry import get_reward

    with pytest.raises(RewardError, match="soft_punish_cache"):
        get_reward("soft_overlong", max_completion_len=10, soft_punish_cache=cache)
    get_reward("soft_overlong", max_completion_len=10, soft_punish_cache=10)  # a ramp from length 0 (the demo)
