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


@pytest.mark.xfail(
    strict=True,
    reason="secret keys spelled with '-' (x-api-key, access-token), Authorization and "
    "hmac_key are not secret keys: check passes them; train copies them into recipe.yaml, README.md "
    "and training_args.bin in clear (api_key is refused)",
)
@pytest.mark.parametrize("key", SECRET_KEYS)
def test_check_refuses_a_secret_under_any_secret_key_spelling(tmp_path, capsys, key):
    recipe = _recipe(tmp_path, chat_template_kwargs={key: "SEKRIT_VALUE_123"})
    assert cli_main(["check", str(recipe)]) == 1
    err = capsys.readouterr().err
    assert "SEKRIT" not in err and "a secret" in err, err


@pytest.mark.xfail(
    strict=True,
    reason="redact keeps what follows an '@' inside the password: "
    "'https://bob:p@ss-SEKRIT@host' -> 'https://<redacted>@ss-SEKRIT@host' (httpx takes the last '@')",
)
def test_redact_hides_a_password_holding_an_at_sign():
    assert "SEKRIT" not in redact("base_url https://bob:p@ss-SEKRIT@judge.example/v1 failed")


@pytest.mark.xfail(
    strict=True,
    reason="`grpo-trl import` copies hub_token and a user:password@ URL from a TRL "
    "config into the recipe it writes, in clear (it only warns that check will refuse them)",
)
def test_import_writes_no_secret(tmp_path, capsys):
    config = tmp_path / "trl.yaml"
    config.write_text(
        "model_name_or_path: Qwen/Qwen2.5-0.5B\ndataset_name: trl-lib/tldr\nreward_funcs: [accuracy_reward]\n"
        "hub_token: hf_SEKRITsekritSEKRITsekritSEKRIT12\nvllm_server_base_url: http://bob:SEKRITPW@localhost:8000\n"
    )
    out = tmp_path / "recipe.yaml"
    cli_main(["import", str(config), "-o", str(out)])
    written = out.read_text() if out.exists() else ""
    captured = capsys.readouterr()
    assert "SEKRIT" not in written + captured.out + captured.err, written


# ------------------------------------------------------------------------------------------------ (b) an echoed key
@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="a server that quotes the key in its 401 body ('Incorrect API key provided: "
    "KEY', as OpenAI does) gets the key of api_key_env printed in clear on the error line",
)
def test_endpoint_error_never_prints_the_key_the_server_echoes(tmp_path, capsys, monkeypatch):
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Echo(BaseHTTPRequestHandler):
        def _echo(self):
            key = self.headers.get("Authorization", "").removeprefix("Bearer ")
            body = json.dumps({"error": {"message": f"Incorrect API key provided: {key}"}}).encode()
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _echo

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("ADVP_KEY", "mykey-SEKRIT-2f9c81d0")
    url = f"http://127.0.0.1:{server.server_port}/v1"
    args = ["eval", str(_recipe(tmp_path)), "--split", "train", "--backend", "endpoint", "--base-url", url]
    try:
        rc = cli_main([*args, "--model", "m", "--api-key-env", "ADVP_KEY", "--output-dir", str(tmp_path / "ev")])
    finally:
        server.shutdown()
    err = capsys.readouterr().err
    assert rc == 1 and "SEKRIT" not in err, err


# ------------------------------------------------------------------------------------------------ (b) echoed values
@pytest.mark.xfail(
    strict=True,
    reason="import's YAML error quotes the offending source line: 'hub_token: SEKRITVAL: "
    "x ^' reaches the console (check's error names only line and column)",
)
def test_import_yaml_error_does_not_quote_the_secret_line(tmp_path, capsys):
    config = tmp_path / "trl.yaml"
    config.write_text("model_name_or_path: x\nhub_token: SEKRITVAL: x\n")
    assert cli_main(["import", str(config), "-o", str(tmp_path / "out.yaml")]) == 1
    err = capsys.readouterr().err
    assert "SEKRIT" not in err, err


@pytest.mark.xfail(
    strict=True,
    reason="a secret-keyed value that is bad YAML is echoed: --set trainer.hub_token="
    "*SEKRITVAL -> \"found undefined alias 'SEKRITVAL'\"",
)
def test_set_secret_value_that_is_bad_yaml_is_not_echoed(tmp_path, capsys):
    assert cli_main(["check", str(_recipe(tmp_path)), "--set", "trainer.hub_token=*SEKRITVAL"]) == 1
    err = capsys.readouterr().err
    assert "SEKRIT" not in err, err
