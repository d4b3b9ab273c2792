"""``grpo-trl export`` (and eval's adapter loading) reads ``adapter_config.json`` through the bounded reader and builds
it with peft's own ``from_peft_type``: any JSON peft refuses, a file too large or not regular, is one ``error:`` line,
exit 1. No training: a folder with the config, stand-in weights and a recipe.yaml naming the tiny base is enough."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_trl.cli import main as cli_main
from grpo_trl.io import STATE_BYTES


def _adapter(folder: Path, config: bytes | None, base: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "recipe.yaml").write_text(json.dumps({"model": {"name": base, "dtype": "float32"}}))
    (folder / "adapter_model.safetensors").write_bytes(b"stand-in weights")
    path = folder / "adapter_config.json"
    path.unlink(missing_ok=True)
    if config is None:
        with open(path, "wb") as fh:
            fh.truncate(STATE_BYTES + 1)  # sparse: no disk used
    else:
        path.write_bytes(config)
    return folder


def _export(folder: Path, tmp_path: Path, capsys) -> str:
    rc = cli_main(["export", str(folder), "--to", str(tmp_path / "merged")])
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert rc == 1 and len(errors) == 1 and "internal error" not in err, err
    assert not (tmp_path / "merged").exists()
    return errors[0]


@pytest.mark.parametrize("config", [b"{}", b"[]", b"null", b'"LORA"', b'{"peft_type": "NOSUCH"}', b"{bad json"])
def test_export_refuses_an_adapter_config_peft_cannot_build(tmp_path, capsys, tiny_model, config):
    line = _export(_adapter(tmp_path / "run", config, tiny_model), tmp_path, capsys)
    assert "adapter_config.json" in line and "give a run whose save finished" in line, line


def test_export_refuses_a_huge_adapter_config_unread(tmp_path, capsys, tiny_model):
    before = int(Path("/proc/self/io").read_text().split("rchar:")[1].split()[0])
    line = _export(_adapter(tmp_path / "run", None, tiny_model), tmp_path, capsys)
    read = int(Path("/proc/self/io").read_text().split("rchar:")[1].split()[0]) - before
    assert "too large" in line and read < STATE_BYTES // 4, (line, read)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
KEYS = st.sampled_from(["peft_type", "r", "lora_alpha", "target_modules", "task_type", "runtime_config", "x"])
PEFT_TYPE = st.sampled_from(["LORA", "NOSUCH", "lora", None, 1, ["LORA"]])


@settings(max_examples=20, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=JSON | st.dictionaries(KEYS, JSON, max_size=4), peft_type=PEFT_TYPE)
def test_any_adapter_config_is_one_error_line_never_an_internal_error(tmp_path, capsys, tiny_model, value, peft_type):
    if isinstance(value, dict) and peft_type is not None:
        value["peft_type"] = peft_type  # often LORA: peft's own constructor is reached
    folder = _adapter(tmp_path / f"run{os.urandom(4).hex()}", json.dumps(value).encode(), tiny_model)
    _export(folder, tmp_path, capsys)  # a config peft accepts: the stand-in weights are one error line too
