"""Adversarial finds: recipes `grpo-trl check` accepts (exit 0) that `grpo-trl train` cannot run (exit 70, an
internal error) or runs as something else. Each test asks check to refuse the input with one `error:` line naming
the key, which is what would keep train from crashing; xfail(strict) until fixed."""

from __future__ import annotations

import pytest

from grpo_trl.cli import main as cli_main
from tests.conftest import tiny_recipe


def _check(tmp_path, capsys, trainer: dict) -> tuple[int, str]:
    path = tiny_recipe(tmp_path, "no-such-org/no-such-model", trainer=trainer)
    rc = cli_main(["check", str(path)])
    return rc, capsys.readouterr().err


# Each of these passes check and ends train with "grpo-trl: internal error (...)", exit 70, at step 0 or 1.
CRASH_AT_TRAIN = [
    # ZeroDivisionError: integer modulo by zero (TRL's SyncRefModelCallback: step % ref_model_sync_steps)
    ("ref_model_sync_steps_0", {"sync_ref_model": True, "ref_model_sync_steps": 0}, "trainer.ref_model_sync_steps"),
    # ValueError: batch_size should be a positive integer value, but got batch_size=0
    ("steps_per_generation_0", {"steps_per_generation": 0}, "trainer.steps_per_generation"),
    # ValueError: Invalid beta parameter at index 0: 5 (torch.optim.AdamW)
    ("adam_beta1_5", {"adam_beta1": 5}, "trainer.adam_beta1"),
    # ValueError: Invalid `cache_implementation` (bogus). Choose one of: ('static', ...)
    ("cache_implementation_bogus", {"cache_implementation": "bogus"}, "trainer.cache_implementation"),
    # ValueError: `max_new_tokens` must be greater than 0, but is 0. (transformers' GenerationConfig)
    ("generation_kwargs_max_new_tokens_0", {"generation_kwargs": {"max_new_tokens": 0}}, "trainer.generation_kwargs"),
]


@pytest.mark.xfail(strict=True, reason="check accepts it; train exits 70 with an internal error")
@pytest.mark.parametrize("name,trainer,key", CRASH_AT_TRAIN, ids=[c[0] for c in CRASH_AT_TRAIN])
def test_check_refuses_what_train_crashes_on(tmp_path, capsys, name, trainer, key):
    rc, err = _check(tmp_path, capsys, trainer)
    assert rc == 1 and key in err, err


@pytest.mark.xfail(strict=True, reason="check accepts delta<0; TRL clamps the ratio to it: the loss changes sign")
def test_check_refuses_negative_delta(tmp_path, capsys):
    rc, err = _check(tmp_path, capsys, {"delta": -1.0})
    assert rc == 1 and "trainer.delta" in err, err


@pytest.mark.xfail(strict=True, reason="check accepts flash_attention_2 without flash_attn/CUDA; train exits 70")
def test_check_refuses_flash_attention_without_flash_attn(tmp_path, capsys, tiny_model):
    pytest.importorskip("torch")
    import importlib.util

    if importlib.util.find_spec("flash_attn") is not None:
        pytest.skip("flash_attn is installed here")
    path = tiny_recipe(tmp_path, tiny_model)
    text = path.read_text().replace("dtype: float32", "dtype: float32\n  attn_implementation: flash_attention_2")
    path.write_text(text)
    rc = cli_main(["check", str(path)])
    err = capsys.readouterr().err
    assert rc == 1 and "model.attn_implementation" in err, err
