"""The command line: --help is instant, rewards and data listings, the tiny model builder."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from grpo_trl.cli import main as cli_main

ROOT = Path(__file__).resolve().parents[1]


def test_help_is_fast_and_imports_nothing_heavy():
    heavy = "('torch', 'trl', 'transformers', 'datasets')"
    code = f"import sys, grpo_trl.cli as c; c.build_parser(); print(sorted(m for m in {heavy} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "grpo_trl.cli", "--help"], capture_output=True, check=True)
    assert time.perf_counter() - start < 1.5


def test_rewards_command_lists_builtins_and_plugins(tmp_path, capsys):
    plugin = tmp_path / "p.py"
    plugin.write_text(
        "from grpo_trl.rewards import register_reward\n"
        "@register_reward('t_cli_reward')\n"
        "def r(completions, scale: float = 2.0, **kw):\n"
        "    'A plugin reward.'\n"
        "    return [scale] * len(completions)\n"
    )
    from grpo_trl.rewards import unregister_reward

    try:
        assert cli_main(["rewards", "--plugin", str(plugin)]) == 0
    finally:
        unregister_reward("t_cli_reward")
    out = capsys.readouterr().out
    for name in ("countdown", "accuracy", "gsm8k", "think_format", "cosine", "soft_overlong", "t_cli_reward"):
        assert name in out
    assert "exact=2.0" in out and "scale=2.0" in out and "A plugin reward." in out


def test_data_command_prints_rendered_prompts(make_recipe, capsys):
    path = make_recipe(
        data={
            "builder": "countdown",
            "source": "generate",
            "size": 10,
            "system_prompt": "r1",
            "max_prompt_tokens": 4000,
        }
    )
    assert cli_main(["data", str(path), "-n", "1"]) == 0
    out = capsys.readouterr().out
    assert "10 rows loaded, dropped: none; train 10" in out
    assert "<|im_start|>system\nA conversation between User and Assistant" in out  # after the chat template
    assert out.rstrip().count("<|im_start|>assistant") == 1 and "reward columns" in out


def test_tiny_model_builds_fast_and_is_deterministic(tmp_path):
    from grpo_trl.models.tiny import build_tiny_model

    build_tiny_model(tmp_path / "warm")  # imports paid once
    start = time.perf_counter()
    a = build_tiny_model(tmp_path / "a", seed=1)
    assert time.perf_counter() - start < 3
    b = build_tiny_model(tmp_path / "b", seed=1)
    assert (Path(a) / "model.safetensors").read_bytes() == (Path(b) / "model.safetensors").read_bytes()
