"""Recipes: extends, --set, validation errors (each names the key and the fix), the plan, shipped recipes."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from grpo_trl.check import load_recipe
from grpo_trl.check.plan import make_plan
from grpo_trl.check.rewards import reward_args
from grpo_trl.check.validate import validate
from grpo_trl.cli import main as cli_main
from grpo_trl.recipe import Recipe, RecipeError

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted(p for p in (ROOT / "recipes").rglob("*.yaml") if "accelerate" not in p.parts)


def write(tmp_path: Path, data: dict, name: str = "r.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


BASE = {
    "model": {"name": "builtin:tiny"},
    "data": {"builder": "countdown", "source": "generate", "size": 32},
    "rewards": [{"name": "countdown"}],
    "trainer": {"num_generations": 4, "per_device_train_batch_size": 8, "use_cpu": True, "bf16": False},
}


def errors_for(tmp_path: Path, patch: dict | None = None, overrides=(), world_size=None) -> list[str]:
    data = yaml.safe_load(yaml.safe_dump(BASE))
    for section, value in (patch or {}).items():
        if isinstance(value, dict) and isinstance(data.get(section), dict):
            data[section].update(value)
        else:
            data[section] = value
    recipe = load_recipe(write(tmp_path, data), overrides, validate=False)
    return [f"{p.key}: {p.text}" for p in validate(recipe, world_size=world_size)]


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_every_shipped_recipe_passes_check(path, capsys):
    assert cli_main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "OK" in out and "optimizer steps" in out


def test_base_is_valid(tmp_path):
    assert errors_for(tmp_path) == []


@pytest.mark.parametrize(
    ("patch", "key", "fix"),
    [
        ({"trainer": {"learning_rat": 1e-6}}, "trainer.learning_rat", "did you mean 'learning_rate'"),
        ({"traine": {}}, "traine", "did you mean 'trainer'"),
        ({"model": {"name": "x", "dtyp": "bfloat16"}}, "model.dtyp", "did you mean 'dtype'"),
        ({"model": {"name": "x", "dtype": "bf16"}}, "model.dtype", "bfloat16"),
        ({"model": {"name": "x", "lora": {"rank": 8}}}, "model.lora.rank", "peft.LoraConfig"),
        ({"trainer": {"max_prompt_length": 512}}, "trainer.max_prompt_length", "data.max_prompt_tokens"),
        ({"trainer": {"use_liger_loss": True}}, "trainer.use_liger_loss", "use_liger_kernel"),
        ({"trainer": {"vllm_device": "cuda:1"}}, "trainer.vllm_device", "vllm_mode: server"),
        ({"trainer": {"torch_dtype": "bfloat16"}}, "trainer.torch_dtype", "model.dtype"),
        ({"trainer": {"wandb_log_unique_prompts": True}}, "trainer.wandb_log_unique_prompts", "log_unique_prompts"),
        (
            {"trainer": {"vllm_guided_decoding_regex": "x"}},
            "trainer.vllm_guided_decoding_regex",
            "vllm_structured_outputs_regex",
        ),
        ({"trainer": {"warmup_ratio": 0.1}}, "trainer.warmup_ratio", "warmup_steps"),
        ({"trainer": {"loss_type": "grpoo"}}, "trainer.loss_type", "did you mean 'grpo'"),
        ({"trainer": {"scale_rewards": "groups"}}, "trainer.scale_rewards", "group, batch, none"),
        ({"trainer": {"vllm_mode": "colo"}}, "trainer.vllm_mode", "server, colocate"),
        ({"trainer": {"importance_sampling_level": "seq"}}, "trainer.importance_sampling_level", "token, sequence"),
        (
            {"trainer": {"multi_objective_aggregation": "sum"}},
            "trainer.multi_objective_aggregation",
            "sum_then_normalize",
        ),
        ({"trainer": {"learning_rate": "fast"}}, "trainer.learning_rate", "expected float"),
        ({"trainer": {"num_generations": 1, "per_device_train_batch_size": 4}}, "trainer", "at least 2 generations"),
        ({"trainer": {"num_generations": 3}}, "trainer", "divisible by num_generations"),
        ({"rewards": [{"name": "countdwn"}]}, "rewards.0.name", "did you mean 'countdown'"),
        ({"rewards": [{"name": "gsm8k", "args": {"exakt": 2}}]}, "rewards.0.args", "did you mean 'exact'"),
        ({"rewards": [{"name": "countdown"}, {"name": "countdown"}]}, "rewards.1.alias", "give one of them an alias"),
        ({"rewards": [{"name": "countdown", "weight": "high"}]}, "rewards.0.weight", "must be a number"),
        ({"rewards": []}, "rewards", "missing"),
        ({"data": {"builder": "gsm9k"}}, "data.builder", "did you mean 'gsm8k'"),
        ({"data": {"builder": "countdown", "sise": 3}}, "data.sise", "did you mean 'size'"),
        ({"data": {"builder": "countdown", "system_prompt": "r2"}}, "data.system_prompt", "did you mean 'r1'"),
        ({"data": {"builder": "files"}}, "data.path", "required by builder 'files'"),
        ({"plugins": ["nope.py"]}, "plugins.0", "does not exist"),
        ({"generation": {"backend": "vlm"}}, "generation.backend", "did you mean 'vllm'"),
        ({"trainer": {"reward_weights": [1.0]}}, "trainer.reward_weights", "`weight:` on each entry of rewards"),
        ({"trainer": {"model_init_kwargs": {"dtype": "bfloat16"}}}, "trainer.model_init_kwargs", "model: section"),
        (
            {"generation": {"backend": "transformers"}, "trainer": {"use_vllm": True}},
            "generation.backend",
            "conflicts",
        ),
    ],
)
def test_validation_errors_name_key_and_fix(tmp_path, patch, key, fix):
    errors = errors_for(tmp_path, patch)
    assert any(e.startswith(key + ":") and fix in e for e in errors), errors


def test_batch_arithmetic_uses_world_size(tmp_path):
    patch = {"trainer": {"num_generations": 8, "per_device_train_batch_size": 4}}
    assert any("divisible" in e and "world size 1" in e for e in errors_for(tmp_path, patch, world_size=1))
    assert errors_for(tmp_path, patch, world_size=2) == []


def test_yaml_float_without_dot_is_accepted(tmp_path):
    recipe = load_recipe(write(tmp_path, {**BASE, "trainer": {**BASE["trainer"], "learning_rate": "1e-6"}}))
    assert recipe.to_grpo_config().learning_rate == 1e-6


def test_extends_and_overrides(tmp_path):
    write(tmp_path, BASE, "base.yaml")
    child = write(tmp_path, {"extends": "base.yaml", "trainer": {"learning_rate": 2e-5}}, "child.yaml")
    recipe = load_recipe(child, ["trainer.max_steps=7", "rewards.0.weight=2", "data.size=16", "trainer.report_to=[]"])
    cfg = recipe.to_grpo_config()
    assert cfg.learning_rate == 2e-5 and cfg.max_steps == 7
    assert cfg.num_generations == 4  # from the base
    assert cfg.reward_weights == [2.0]
    assert recipe.dataset["size"] == 16


def test_extends_cycle_and_missing(tmp_path):
    write(tmp_path, {"extends": "b.yaml"}, "a.yaml")
    write(tmp_path, {"extends": "a.yaml"}, "b.yaml")
    with pytest.raises(RecipeError, match="circular extends"):
        load_recipe(tmp_path / "a.yaml")
    with pytest.raises(RecipeError, match="not found"):
        load_recipe(write(tmp_path, {"extends": "zzz.yaml"}, "c.yaml"))


def test_bad_override_syntax(tmp_path):
    with pytest.raises(RecipeError, match="KEY=VALUE"):
        load_recipe(write(tmp_path, BASE), ["trainer.learning_rate"])


def test_to_grpo_config_maps_model_generation_and_lora(tmp_path):
    data = {
        **BASE,
        "model": {"name": "m", "dtype": "bfloat16", "attn_implementation": "sdpa", "lora": {"r": 4, "lora_alpha": 8}},
        "generation": {
            "backend": "vllm",
            "vllm_mode": "server",
            "server_host": "10.0.0.5",
            "server_port": 8123,
            "gpu_memory_utilization": 0.5,
            "tensor_parallel_size": 2,
            "enable_sleep_mode": True,
        },
    }
    recipe = load_recipe(write(tmp_path, data))
    cfg = recipe.to_grpo_config()
    assert cfg.model_init_kwargs == {"dtype": "bfloat16", "attn_implementation": "sdpa"}
    assert (cfg.use_vllm, cfg.vllm_mode, cfg.vllm_server_host, cfg.vllm_server_port) == (
        True,
        "server",
        "10.0.0.5",
        8123,
    )
    assert (cfg.vllm_gpu_memory_utilization, cfg.vllm_tensor_parallel_size, cfg.vllm_enable_sleep_mode) == (
        0.5,
        2,
        True,
    )
    lora = recipe.lora_config()
    assert (lora.r, lora.lora_alpha, lora.task_type) == (4, 8, "CAUSAL_LM")


def test_colocate_mapping_and_transformers_default(tmp_path):
    recipe = load_recipe(write(tmp_path, {**BASE, "generation": {"backend": "vllm", "vllm_mode": "colocate"}}))
    cfg = recipe.to_grpo_config()
    assert cfg.use_vllm and cfg.vllm_mode == "colocate"
    assert load_recipe(write(tmp_path, BASE, "plain.yaml")).to_grpo_config().use_vllm is False


def test_generation_conflict(tmp_path):
    data = {
        **BASE,
        "generation": {"backend": "vllm", "vllm_mode": "server"},
        "trainer": {**BASE["trainer"], "vllm_mode": "colocate"},
    }
    recipe = load_recipe(write(tmp_path, data), validate=False)
    assert any("conflicts with trainer.vllm_mode" in p.message for p in validate(recipe))


def test_check_prints_plan_and_gpu_split(capsys):
    assert cli_main(["check", str(ROOT / "recipes/countdown/qwen2.5-3b-instruct.yaml")]) == 0
    out = capsys.readouterr().out
    assert "16 prompts x 8 generations = 128 completions" in out
    assert "3125" in out  # 1 epoch x 50,000 rows x 8 generations / 128, the write-up's formula
    assert "1 GPU(s) for vLLM" in out and "num_processes=2" in out


def test_check_broken_recipe_one_line_per_problem(tmp_path, capsys):
    path = write(tmp_path, {**BASE, "trainer": {"learning_rat": 1, "max_prompt_length": 5, "loss_type": "x"}})
    assert cli_main(["check", str(path)]) == 1
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(lines) == 3
    assert all(str(path) in line for line in lines)


def test_yaml_no_means_no_for_string_fields(tmp_path):
    recipe = load_recipe(write(tmp_path, BASE), ["trainer.save_strategy=no"])
    assert recipe.to_grpo_config().save_strategy == "no"


def test_set_null_removes_a_key_and_the_default_applies(tmp_path):
    recipe = load_recipe(write(tmp_path, BASE), ["trainer.bf16=null", "trainer.use_cpu=null", "data.size=null"])
    assert "bf16" not in recipe.trainer and "use_cpu" not in recipe.trainer and "size" not in recipe.dataset
    assert recipe.to_grpo_config().num_generations == 4  # the rest is kept


def test_loaded_recipe_is_immutable_and_coerced_once(tmp_path):
    import dataclasses

    recipe = load_recipe(write(tmp_path, BASE), ["trainer.learning_rate=1e-6", "trainer.save_strategy=no"])
    assert recipe.trainer["learning_rate"] == 1e-6 and recipe.trainer["save_strategy"] == "no"
    with pytest.raises(dataclasses.FrozenInstanceError):
        recipe.path = None
    before = recipe.to_yaml()
    validate(recipe)
    make_plan(recipe)
    recipe.to_grpo_config()
    assert recipe.to_yaml() == before


def test_every_problem_at_once(tmp_path):
    patch = {
        "model": {"name": "x", "dtype": "bf16"},
        "trainer": {"learning_rat": 1, "temperature": 0},
        "rewards": [{"name": "countdwn"}],
        "data": {"builder": "countdown", "sise": 3},
        "logging": {"completions_every": 0},
    }
    errors = errors_for(tmp_path, patch)
    keys = {e.split(":")[0] for e in errors}
    expected = {"model.dtype", "trainer.learning_rat", "trainer.temperature", "rewards.0.name", "data.sise"}
    assert expected | {"logging.completions_every"} <= keys, errors


def test_trainer_types_and_defaults_come_from_trl():
    import dataclasses

    from trl import GRPOConfig

    from grpo_trl.recipe.schema import trainer_model

    fields = trainer_model().model_fields
    for f in dataclasses.fields(GRPOConfig):
        if f.init and f.name not in ("reward_weights", "model_init_kwargs"):
            assert f.name in fields, f.name
    assert fields["max_completion_length"].default == GRPOConfig.max_completion_length
    assert fields["loss_type"].default == GRPOConfig.loss_type


def test_length_rewards_follow_trl_default_when_recipe_leaves_it_out(tmp_path):
    from trl import GRPOConfig

    data = {**BASE, "rewards": [{"name": "soft_overlong"}]}
    recipe = load_recipe(write(tmp_path, data))
    assert reward_args(recipe, recipe.rewards[0])["max_completion_len"] == GRPOConfig.max_completion_length
    recipe = load_recipe(write(tmp_path, data), ["trainer.max_completion_length=64"])
    assert reward_args(recipe, recipe.rewards[0])["max_completion_len"] == 64


@pytest.mark.parametrize("value", [False, True, "none", "batch", "group"])
def test_scale_rewards_takes_the_bools_trl_takes(tmp_path, value):
    """TRL documents scale_rewards as `str` or `bool` (True -> 'group', False -> 'none'; open-r1's codeforces recipe
    writes false): check accepts it, and the GRPOConfig gets what TRL itself makes of it."""
    from trl import GRPOConfig

    assert errors_for(tmp_path, {"trainer": {"scale_rewards": value}}) == []
    recipe = load_recipe(write(tmp_path, {**BASE, "trainer": {**BASE["trainer"], "scale_rewards": value}}))
    trl_value = GRPOConfig(output_dir=str(tmp_path), scale_rewards=value, **BASE["trainer"]).scale_rewards
    assert recipe.to_grpo_config().scale_rewards == trl_value


@pytest.mark.parametrize(
    "make, says",
    [
        (lambda p: __import__("os").mkfifo(p), "named pipe"),
        (lambda p: p.mkdir(), "folder"),
        (lambda p: p.symlink_to(p.name), "symbolic links"),
        (lambda p: None, "not found"),
    ],
    ids=["fifo", "folder", "symlink-loop", "missing"],
)
def test_extends_naming_what_is_not_a_recipe_says_what_it_is(tmp_path, capsys, make, says):
    make(tmp_path / "parent.yaml")
    (tmp_path / "r.yaml").write_text("extends: parent.yaml\n")
    assert cli_main(["check", str(tmp_path / "r.yaml")]) == 1
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1, err


# ------------------------------------------------------------------------------------------------ secrets
@pytest.mark.parametrize("key", ["x-api-key", "access-token", "Authorization", "hmac_key", "api_key"])
def test_check_refuses_a_secret_under_any_secret_key_spelling(tmp_path, capsys, key):
    trainer = {**BASE["trainer"], "chat_template_kwargs": {key: "SEKRIT_VALUE_123"}}
    assert cli_main(["check", str(write(tmp_path, {**BASE, "trainer": trainer}))]) == 1
    err = capsys.readouterr().err
    assert "SEKRIT" not in err and "a secret" in err and f"trainer.chat_template_kwargs.{key}" in err, err


@pytest.mark.parametrize(
    "source",
    [
        ["--set", "trainer.hub_token=*SEKRITVAL"],  # a --set value under a secret key
        ["--set", "trainer.seed=!SEKRITTAG x"],  # under any key: PyYAML's quoted text is left out
        ["file", "model:\n  name: builtin:tiny\ntrainer:\n  hub_token:\n    *SEKRITVAL\n"],  # the alias a line below
    ],
)
def test_a_yaml_error_never_echoes_the_value(tmp_path, capsys, source):
    path = write(tmp_path, BASE)
    if source[0] == "file":
        path.write_text(source[1])
    args = ["check", str(path)] + ([] if source[0] == "file" else source)
    assert cli_main(args) == 1
    err = capsys.readouterr().err
    assert "SEKRIT" not in err and "not valid YAML at line" in err, err


@pytest.mark.parametrize("value", [["SEKRIT1234"], {"a": "SEKRIT1234"}])
def test_a_python_recipe_error_never_shows_a_secret_keyed_value(value):
    recipe = Recipe(data={**BASE, "trainer": {**BASE["trainer"], "hub_token": value}})
    shown = str(RecipeError(validate(recipe)))
    assert "trainer.hub_token" in shown and "SEKRIT" not in shown, shown


@pytest.mark.parametrize("key", ["prompt_key", "image_key", "answer_key", "reward_fn_key", "pad_token", "think_token"])
def test_a_field_of_the_data_or_a_tokenizer_token_is_not_taken_for_a_secret(tmp_path, capsys, key):
    trainer = {**BASE["trainer"], "chat_template_kwargs": {key: "visible_value"}}
    assert cli_main(["check", str(write(tmp_path, {**BASE, "trainer": trainer}))]) == 0, capsys.readouterr().err
