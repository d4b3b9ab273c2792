"""``grpo-trl import`` carries or names every key of a real config: the recipe holds it, or the text it writes says
why not (open-r1's code_ioi and codeforces configs dropped ``code_language`` and ``dataset_test_split`` silently).
The fixtures are small configs written here with the keys those open-r1 recipes use, not copies of them."""

from __future__ import annotations

import re

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_trl.importer import import_config, import_text

SYSTEM = "You are helpful. Think first, then answer in <answer> tags."
COMMON = {  # the keys the open-r1 code recipes share (values of our own)
    "model_name_or_path": "Qwen/Qwen2.5-0.5B-Instruct",
    "model_revision": "main",
    "torch_dtype": "bfloat16",
    "attn_implementation": "sdpa",
    "system_prompt": SYSTEM,
    "beta": 0.02,
    "bf16": True,
    "use_vllm": True,
    "do_eval": False,
    "gradient_accumulation_steps": 2,
    "gradient_checkpointing": True,
    "gradient_checkpointing_kwargs": {"use_reentrant": False},
    "hub_model_id": "me/code-grpo",
    "hub_strategy": "every_save",
    "learning_rate": 2.0e-06,
    "log_completions": True,
    "log_level": "info",
    "logging_first_step": True,
    "logging_steps": 1,
    "logging_strategy": "steps",
    "max_prompt_length": 512,
    "max_completion_length": 1024,
    "max_steps": 100,
    "num_generations": 8,
    "num_train_epochs": 1,
    "output_dir": "data/code-grpo",
    "overwrite_output_dir": True,
    "per_device_train_batch_size": 8,
    "push_to_hub": False,
    "report_to": ["none"],
    "save_strategy": "steps",
    "save_steps": 25,
    "save_total_limit": 1,
    "seed": 7,
    "temperature": 0.8,
    "warmup_ratio": 0.05,
}
IOI_LIKE = {
    **COMMON,
    "dataset_name": "some-org/olympiad",
    "dataset_prompt_column": "problem",
    "lr_scheduler_type": "cosine_with_min_lr",
    "lr_scheduler_kwargs": {"min_lr_rate": 0.2},
    "code_language": "cpp",
    "reward_funcs": ["ioi_code", "code_format", "format"],
    "reward_weights": [1.0, 0.2, 0.2],
    "code_eval_test_batch_size": 2,
}
CODEFORCES_LIKE = {
    **COMMON,
    "dataset_name": "some-org/contests",
    "dataset_prompt_column": "prompt",
    "dataset_config": "verifiable",
    "dataset_test_split": "test",
    "dataset_train_split": "train",
    "callbacks": ["push_to_hub_revision"],
    "benchmarks": ["lcb_v4"],
    "loss_type": "dr_grpo",
    "scale_rewards": False,
    "eval_strategy": "no",
    "vllm_device": "auto",
    "vllm_gpu_memory_utilization": 0.5,
    "hub_model_revision": "v00.01",
    "lr_scheduler_type": "constant_with_warmup",
    "max_grad_norm": 0.3,
    "mask_truncated_completions": True,
    "reward_funcs": ["cf_code", "code_format"],
    "reward_weights": [1.0, 0.1],
    "wandb_entity": "me",
    "wandb_project": "p",
    "code_eval_test_batch_size": -1,
    "code_eval_scoring_mode": "weighted_sum",
}


WRITTEN_AS = {"reward_funcs": "rewards", "reward_weights": "weight"}  # one entry each, under rewards:


def _named(text: str, key: str) -> bool:
    """The imported recipe's text mentions ``key`` (as a recipe key, in a comment, or in its header)."""
    return re.search(rf"(?<![\w]){re.escape(WRITTEN_AS.get(key, key))}(?![\w])", text) is not None


def _write(tmp_path, name: str, config: dict) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return str(path)


def test_code_language_is_named_with_why_it_is_not_carried(tmp_path):
    result = import_config(_write(tmp_path, "ioi.yaml", IOI_LIKE))
    why = dict(result.unmapped)
    assert "code_language" in why and "'cpp'" in why["code_language"] and "Python" in why["code_language"]
    assert all(_named(result.text, key) for key in IOI_LIKE)


def test_the_test_split_is_named_when_evaluation_is_off_and_carried_when_on(tmp_path):
    result = import_config(_write(tmp_path, "cf.yaml", CODEFORCES_LIKE))
    assert "evaluation is off" in dict(result.unmapped)["dataset_test_split"]
    assert "dataset_train_split" in result.text and "split" not in result.recipe["data"]  # train: the default
    assert all(_named(result.text, key) for key in CODEFORCES_LIKE)
    on = import_config(_write(tmp_path, "cf-eval.yaml", {**CODEFORCES_LIKE, "eval_strategy": "steps"}))
    assert on.recipe["data"]["eval_split"] == "test" and "dataset_test_split" not in dict(on.unmapped)


KEYS = sorted(set(IOI_LIKE) | set(CODEFORCES_LIKE) - {"model_name_or_path", "dataset_name"})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    keys=st.lists(st.sampled_from(KEYS), unique=True, max_size=20),
    unknown=st.lists(st.from_regex(r"zz[a-z]{3,8}_[a-z]{3,8}", fullmatch=True), unique=True, max_size=3),
    source=st.sampled_from([IOI_LIKE, CODEFORCES_LIKE]),
)
def test_every_key_of_any_such_config_is_carried_or_named(keys, unknown, source):
    config = {"model_name_or_path": "m/m", "dataset_name": "o/d", "reward_funcs": ["code_format"]}
    for key in keys:
        config[key] = source.get(key, IOI_LIKE.get(key, CODEFORCES_LIKE.get(key)))
    if "reward_weights" in config:
        config["reward_funcs"] = source["reward_funcs"]
        config["reward_weights"] = source["reward_weights"]
    config.update(dict.fromkeys(unknown, 1))
    result = import_text(yaml.safe_dump(config))
    missing = [key for key in config if not _named(result.text, key)]
    assert not missing, missing


def test_trl_dataset_streaming_becomes_data_streaming():
    for value in (True, False):
        config = {"model_name_or_path": "m/m", "dataset_name": "o/d", "reward_funcs": ["accuracy_reward"]}
        result = import_text(yaml.safe_dump({**config, "dataset_streaming": value, "max_steps": 5}))
        assert result.recipe["data"].get("streaming", False) is value and "dataset_streaming" in result.text
