"""``eval``, ``filter`` and ``eval --benchmark`` resolve ``--model FOLDER`` as check and train do
(``check.model.meta_model``: its config.json through the bounded reader, built on the meta device), so every folder
train refuses is one ``error:`` line naming ``--model``, exit 1, before anything loads. No training: a copy of the
tiny model with its config.json replaced."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from grpo_trl.cli import main as cli_main
from grpo_trl.io import STATE_BYTES
from tests.conftest import tiny_recipe
from tests.eval.test_benchmarks import GSM8K, _write

CONFIGS = {
    "empty object": b"{}",
    "unknown model_type": b'{"model_type": "nosuch"}',
    "a list": b"[]",
    "not JSON": b"{not json",
    "sizes transformers refuses": b'{"model_type": "llama", "hidden_size": 7, "num_attention_heads": 2}',
    "too large": None,
}


def _folder(tiny_model: str, tmp_path: Path, config: bytes | None) -> Path:
    folder = tmp_path / "model"
    shutil.copytree(tiny_model, folder)
    (folder / "config.json").unlink()
    if config is None:
        with open(folder / "config.json", "wb") as fh:
            fh.truncate(STATE_BYTES + 1)  # sparse: no disk used
    else:
        (folder / "config.json").write_bytes(config)
    return folder


def _rchar() -> int:  # this process's read() total
    return int(Path("/proc/self/io").read_text().split("rchar:")[1].split()[0])


@pytest.mark.parametrize("command", ["eval", "filter", "benchmark"])
@pytest.mark.parametrize("kind", list(CONFIGS))
def test_a_model_folder_train_refuses_is_one_error_line_naming_model(tiny_model, tmp_path, capsys, command, kind):
    folder = _folder(tiny_model, tmp_path, CONFIGS[kind])
    recipe = tiny_recipe(tmp_path, tiny_model)
    args = [command, str(recipe), "--split", "train", "--limit", "1", "--n", "1", "--model", str(folder)]
    if command == "benchmark":
        args = ["eval", "--benchmark", "gsm8k", "--data", _write(tmp_path, "gsm8k", GSM8K), "--model", str(folder)]
    before = _rchar()
    rc = cli_main(args + (["--output-dir", str(tmp_path / "ev")] if command != "filter" else []))
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert rc == 1 and len(errors) == 1 and "internal error" not in err, err
    assert "--model: " in errors[0], errors[0]
    assert _rchar() - before < STATE_BYTES // 4  # the huge config.json is refused unread
    if kind == "too large":
        assert "too large" in errors[0]


def test_check_refuses_the_same_folders(tiny_model, tmp_path, capsys):
    """The same resolver: what eval refuses, check refuses (under model.name)."""
    for i, config in enumerate(CONFIGS.values()):
        folder = _folder(tiny_model, tmp_path / str(i), config)
        assert cli_main(["check", str(tiny_recipe(tmp_path / str(i), str(folder)))]) == 1
        assert "model.name: " in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "ev")


@pytest.mark.parametrize("command", ["eval", "filter"])
@pytest.mark.parametrize("config", [b"{}", b"[]", b'{"peft_type": "NOSUCH"}', None])
def test_a_lora_folder_peft_refuses_is_one_error_line(tiny_model, tmp_path, capsys, command, config):
    """A LoRA run's folder (adapter_config.json): built by peft before anything loads, as export builds it."""
    from tests.run.test_export_adapter_config import _adapter

    folder = _adapter(tmp_path / "lora", config, tiny_model)
    args = [command, str(tiny_recipe(tmp_path, tiny_model)), "--split", "train", "--limit", "1", "--n", "1"]
    rc = cli_main(
        [*args, "--model", str(folder)] + (["--output-dir", str(tmp_path / "ev")] if command == "eval" else [])
    )
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert rc == 1 and len(errors) == 1 and "adapter_config.json" in errors[0] and "internal error" not in err, err
