"""A table of broken recipes: each fails `grpo-trl check` with exit 1 and exactly one line that names the key and
the fix, before any model is loaded (the model named here does not exist, and no download is attempted)."""

from __future__ import annotations

import copy

import pytest
import yaml

from grpo_trl.cli import main as cli_main

GOOD = {
    "model": {"name": "no-such-org/no-such-model"},
    "data": {"builder": "countdown", "source": "generate", "size": 16},
    "rewards": [{"name": "countdown"}, {"name": "think_format"}],
    "trainer": {"num_generations": 4, "per_device_train_batch_size": 8, "use_cpu": True, "bf16": False},
}


def _set(recipe: dict, dotted: str, value) -> dict:
    node = recipe
    *parents, last = dotted.split(".")
    for p in parents:
        node = node[int(p)] if isinstance(node, list) else node.setdefault(p, {})
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return recipe


CASES = [
    # (name, dotted key to set, value, key named in the error, words of the fix)
    ("typo in a trainer field", "trainer.learnin_rate", 1e-6, "trainer.learnin_rate", "did you mean 'learning_rate'"),
    ("typo in a section", "rewardz", [], "rewardz", "did you mean 'rewards'"),
    (
        "typo in a model key",
        "model.attn_implementaton",
        "sdpa",
        "model.attn_implementaton",
        "did you mean 'attn_implementation'",
    ),
    ("wrong type", "trainer.num_generations", "eight", "trainer.num_generations", "expected int"),
    ("wrong type bool", "trainer.max_steps", [1], "trainer.max_steps", "expected int"),
    (
        "removed max_prompt_length",
        "trainer.max_prompt_length",
        256,
        "trainer.max_prompt_length",
        "data.max_prompt_tokens",
    ),
    ("renamed use_liger_loss", "trainer.use_liger_loss", True, "trainer.use_liger_loss", "use_liger_kernel"),
    ("removed vllm_device", "trainer.vllm_device", "cuda:2", "trainer.vllm_device", "grpo-trl serve"),
    ("moved torch_dtype", "trainer.torch_dtype", "bfloat16", "trainer.torch_dtype", "model.dtype"),
    (
        "renamed wandb_log_unique_prompts",
        "trainer.wandb_log_unique_prompts",
        True,
        "trainer.wandb_log_unique_prompts",
        "log_unique_prompts",
    ),
    (
        "renamed guided decoding",
        "trainer.vllm_guided_decoding_regex",
        ".*",
        "trainer.vllm_guided_decoding_regex",
        "vllm_structured_outputs_regex",
    ),
    ("bad loss_type", "trainer.loss_type", "ppo", "trainer.loss_type", "use one of grpo"),
    ("bad scale_rewards", "trainer.scale_rewards", "std", "trainer.scale_rewards", "use one of group"),
    ("bad vllm_mode", "trainer.vllm_mode", "remote", "trainer.vllm_mode", "use one of server, colocate"),
    (
        "bad importance_sampling_level",
        "trainer.importance_sampling_level",
        "sentence",
        "trainer.importance_sampling_level",
        "did you mean 'sequence'",
    ),
    ("batch not divisible", "trainer.num_generations", 3, "trainer", "must be a multiple of num_generations"),
    ("one generation", "trainer.num_generations", 1, "trainer", "at least 2 generations"),
    ("unknown reward", "rewards.1.name", "think_formt", "rewards.1.name", "did you mean 'think_format'"),
    (
        "unknown reward arg",
        "rewards.1.args",
        {"prefiled_think": True},
        "rewards.1.args",
        "did you mean 'prefilled_think'",
    ),
    ("missing module reward", "rewards.1.name", "no_such_pkg.rewards:fn", "rewards.1.name", "is it on PYTHONPATH"),
    ("duplicate reward name", "rewards.1", {"name": "countdown"}, "rewards.1.alias", "alias"),
    ("reward column missing", "rewards.1", {"name": "accuracy"}, "rewards.1", "reads column(s) solution"),
    ("unknown builder", "data.builder", "gsm8", "data.builder", "did you mean 'gsm8k'"),
    ("unknown builder option", "data.sizee", 8, "data.sizee", "did you mean 'size'"),
    ("bad limit", "data.limit", -5, "data.limit", "positive integer"),
    ("missing plugin file", "plugins", ["missing_rewards.py"], "plugins.0", "does not exist"),
    ("plugin fails to import", "plugins", ["broken_rewards.py"], "plugins.0", "failed to import"),
    ("bad dtype", "model.dtype", "fp16", "model.dtype", "use one of auto, bfloat16"),
    ("bad lora key", "model.lora", {"rank": 8}, "model.lora.rank", "peft.LoraConfig"),
    (
        "unknown generation backend",
        "generation",
        {"backend": "sglang"},
        "generation.backend",
        "use transformers or vllm",
    ),
    ("data file missing", "data", {"builder": "files", "path": "nowhere.jsonl"}, "data", "does not exist"),
    (
        "data file column missing",
        "data",
        {"builder": "files", "path": "problems.jsonl", "question_column": "query"},
        "data",
        "missing column(s) query; the data has: question, solution",
    ),
]


@pytest.mark.parametrize(("name", "key", "value", "named", "fix"), CASES, ids=[c[0] for c in CASES])
def test_broken_recipe_fails_check_with_one_clear_line(tmp_path, capsys, name, key, value, named, fix):
    (tmp_path / "broken_rewards.py").write_text("raise RuntimeError('broken on purpose')\n")
    (tmp_path / "problems.jsonl").write_text('{"question": "1+1?", "solution": "2"}\n')
    recipe = _set(copy.deepcopy(GOOD), key, value)
    if name == "data file column missing":
        recipe["rewards"] = [{"name": "think_format"}]
    path = tmp_path / "broken.yaml"
    path.write_text(yaml.safe_dump(recipe))
    assert cli_main(["check", str(path)]) == 1
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"error: {path}: {named}:"), lines[0]
    assert fix in lines[0], lines[0]
    assert captured.out == ""


def test_table_is_large_enough():
    assert len(CASES) >= 20


def test_good_recipe_passes(tmp_path):
    path = tmp_path / "good.yaml"
    path.write_text(yaml.safe_dump(GOOD))
    assert cli_main(["check", str(path)]) == 0
