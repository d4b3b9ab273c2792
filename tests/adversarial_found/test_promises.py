"""Promises (no overwrite, no secret written, bounded reads, one error line) an adversarial pass found broken.
Each test is xfail(strict=True): it fails today and turns the branch red once the defect is fixed (then drop the mark).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from grpo_trl.cli import main as cli_main
from grpo_trl.errors import redact

BASE = {
    "model": {"name": "builtin:tiny", "dtype": "float32"},
    "data": {"builder": "countdown", "source": "generate", "size": 64, "system_prompt": "r1"},
    "rewards": [{"name": "countdown"}],
    "trainer": {
        "max_steps": 1,
        "num_generations": 2,
        "per_device_train_batch_size": 2,
        "max_completion_length": 8,
        "report_to": "none",
        "use_cpu": True,
        "bf16": False,
    },
}


def _recipe(tmp_path: Path, **trainer) -> Path:
    data = yaml.safe_load(yaml.safe_dump(BASE))
    data["trainer"].update(output_dir=str(tmp_path / "run"), **trainer)
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


# ------------------------------------------------------------------------------------------------ (b) secrets
SECRET_KEYS = ["x-api-key", "access-token", "Authorization", "hmac_key"]


@pytest.mark.xfail(strict=True, reason="secret keys spelled with '-' (x-api-key, access-token), Authorization and "
                   "hmac_key are not secret keys: check passes them; train copies them into recipe.yaml, README.md "
                   "and training_args.bin in clear (api_key is refused)")
@pytest.mark.parametrize("key", SECRET_KEYS)
def test_check_refuses_a_secret_under_any_secret_key_spelling(tmp_path, capsys, key):
    recipe = _recipe(tmp_path, chat_template_kwargs={key: "SEKRIT_VALUE_123"})
    assert cli_main(["check", str(recipe)]) == 1
    err = capsys.readouterr().err
    assert "SEKRIT" not in err and "a secret" in err, err


@pytest.mark.xfail(strict=True, reason="redact keeps what follows an '@' inside the password: "
                   "'https://bob:p@ss-SEKRIT@host' -> 'https://<redacted>@ss-SEKRIT@host' (httpx takes the last '@')")
def test_redact_hides_a_password_holding_an_at_sign():
    assert "SEKRIT" not in redact("base_url https://bob:p@ss-SEKRIT@judge.example/v1 failed")
