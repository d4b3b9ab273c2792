"""`grpo-trl import` on configs shaped like open-r1's GRPO recipes and `trl grpo --config` files (written here, not
copied), and `check` on what it writes."""

from __future__ import annotations

import textwrap

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_trl.check import load_recipe
from grpo_trl.check.validate import validate
from grpo_trl.cli import main as cli_main
from grpo_trl.importer import import_config, import_text
from grpo_trl.recipe import Recipe, RecipeError

# The shape of open-r1's math demo recipe: ModelConfig, ScriptArguments and GRPOConfig keys side by side.
OPEN_R1_MATH = """\
model_name_or_path: Qwen/Qwen2.5-0.5B-Instruct
model_revision: main
torch_dtype: bfloat16
attn_implementation: sdpa
dataset_name: some-org/math-problems
dataset_prompt_column: problem
system_prompt: "Think first.\\nThen answer in <think>\\n...\\n</think>\\n<answer>\\n...\\n</answer>"
bf16: true
use_vllm: true
gradient_accumulation_steps: 2
gradient_checkpointing: true
gradient_checkpointing_kwargs:
  use_reentrant: false
learning_rate: 1.0e-06
log_completions: true
lr_scheduler_type: cosine_with_min_lr
lr_scheduler_kwargs:
  min_lr_rate: 0.1
max_prompt_length: 256
max_completion_length: 1024
num_generations: 8
num_train_epochs: 1
output_dir: out/math
overwrite_output_dir: true
per_device_train_batch_size: 8
report_to: [none]
reward_funcs: [accuracy, format, tag_count, cosine, repetition_penalty, soft_overlong_punishment]
reward_weights: [1.0, 1.0, 1.0, 0.5, 0.5, 0.5]
cosine_max_len: 800
repetition_n_grams: 4
max_completion_len: 1024
save_strategy: "no"
seed: 42
use_liger_kernel: true
use_liger_loss: false
warmup_ratio: 0.1
"""

# The shape of a `trl grpo --config` file (TRL's CLI docs): reward names from TRL's script, a dotted path.
TRL_FLAT = """\
model_name_or_path: Qwen/Qwen2.5-0.5B
dataset_name: some-org/prompts
dataset_config: default
dataset_train_split: train
reward_funcs:
  - accuracy_reward
  - think_format_reward
  - get_soft_overlong_punishment
  - my_lib.rewards.brevity
num_processes: 4
accelerate_config: zero3
use_peft: true
lora_target_modules: all-linear
"""


def load(text: str, tmp_path, **kw):
    src = tmp_path / "config.yaml"
    src.write_text(text)
    return import_config(src, out_dir=tmp_path, **kw)


def test_open_r1_math_config_maps_every_key(tmp_path):
    result = load(OPEN_R1_MATH, tmp_path)
    r = result.recipe
    assert r["model"] == {
        "name": "Qwen/Qwen2.5-0.5B-Instruct",
        "dtype": "bfloat16",
        "revision": "main",
        "attn_implementation": "sdpa",
    }
    data = r["data"]
    assert data["builder"] == "hub" and data["name"] == "some-org/math-problems" and data["prompt_column"] == "problem"
    assert data["prompt_format"] == "conversational" and data["system_prompt"].startswith("Think first.\n")
    assert data["max_prompt_tokens"] == 256
    names = [(e["name"], e.get("weight")) for e in r["rewards"]]
    assert names == [
        ("accuracy", 1.0),
        ("think_format", 1.0),
        ("tag_count", 1.0),
        ("cosine", 0.5),
        ("repetition_penalty", 0.5),
        ("soft_overlong", 0.5),
    ]
    args = {e["name"]: e.get("args", {}) for e in r["rewards"]}
    assert args["accuracy"] == {"require_answer_tag": False}  # the peer's semantics: no <answer> requirement
    # top-level settings become args; the ones left out take open-r1's defaults (min_value_wrong 0.0, not -1.0)
    assert args["cosine"]["max_len"] == 800 and args["cosine"]["min_value_wrong"] == 0.0
    assert args["cosine"]["max_value_correct"] == 1.0
    assert args["repetition_penalty"] == {"ngram_size": 4, "max_penalty": -1.0}
    assert args["soft_overlong"] == {"max_completion_len": 1024, "soft_punish_cache": 4096}
    t = r["trainer"]
    # TRL 0.18 (open-r1's pin) defaults that changed since, written so the run does not change
    assert t["beta"] == 0.04 and t["loss_type"] == "bnpo" and t["vllm_mode"] == "server"
    assert t["warmup_steps"] == 0.1 and "warmup_ratio" not in t
    assert t["use_liger_kernel"] is True and "use_liger_loss" not in t  # not flipped by use_liger_loss: false
    assert "overwrite_output_dir" in dict(result.unmapped)
    assert "--overwrite" in dict(result.unmapped)["overwrite_output_dir"]


def test_written_recipe_has_comments_reads_back_and_passes_check(tmp_path, capsys):
    # check refuses use_liger_kernel where liger-kernel is not installed (GPU only)
    (tmp_path / "config.yaml").write_text(OPEN_R1_MATH.replace("use_liger_kernel: true", "use_liger_kernel: false"))
    out = tmp_path / "recipe.yaml"
    assert cli_main(["import", str(tmp_path / "config.yaml"), "-o", str(out)]) == 0
    text = out.read_text()
    assert "# model_name_or_path" in text and "# torch_dtype (renamed dtype)" in text
    assert "beta: 0.04  # TRL 0.18 default (today 0.0)" in text
    assert "cosine_max_len" in text or "max_len" in text
    assert "Not mapped:" in text and "overwrite_output_dir" in text
    assert yaml.safe_load(text) == import_config(tmp_path / "config.yaml", out_dir=tmp_path).recipe
    assert "next: grpo-trl check" in capsys.readouterr().out
    assert cli_main(["check", str(out)]) == 0
    # the output file is never replaced silently
    assert cli_main(["import", str(tmp_path / "config.yaml"), "-o", str(out)]) == 1
    assert "exists" in capsys.readouterr().err


def test_trl_flat_config(tmp_path):
    result = load(TRL_FLAT, tmp_path)
    r = result.recipe
    assert result.flavour == "trl" and result.baseline == "1.0"
    assert r["model"]["dtype"] == "float32"  # trl grpo's ModelConfig default, written explicitly
    assert r["model"]["lora"]["target_modules"] == "all-linear"
    assert r["model"]["lora"]["r"] == 16 and r["model"]["lora"]["lora_alpha"] == 32  # ModelConfig's, not peft's
    assert "prompt_format" not in r["data"] and r["data"]["config"] == "default"
    rewards = r["rewards"]
    assert [e["name"] for e in rewards] == ["accuracy", "think_format", "soft_overlong", "my_lib.rewards:brevity"]
    assert rewards[2]["args"] == {"max_completion_len": 1280, "soft_punish_cache": 256}  # TRL's script fixes these
    assert r["launch"] == {"num_processes": 4, "accelerate_config": "zero3"}
    assert "beta" not in r.get("trainer", {})  # TRL 1.0 defaults: nothing to pin
    assert any("also requires the <answer>" in line for line in result.text.splitlines())


def test_trl_version_option_sets_the_baseline(tmp_path):
    cfg = "model_name_or_path: m\ndataset_name: d\nreward_funcs: [accuracy_reward]\nuse_vllm: true\n"
    old = load(cfg, tmp_path, trl_version="0.16").recipe["trainer"]
    assert old["beta"] == 0.04 and old["loss_type"] == "grpo" and old["temperature"] == 0.9
    assert old["gradient_checkpointing"] is False and old["vllm_mode"] == "server"
    mid = load(cfg, tmp_path, trl_version="0.21").recipe["trainer"]
    assert "beta" not in mid and mid["loss_type"] == "bnpo"
    late = load(cfg.replace("use_vllm: true\n", ""), tmp_path, trl_version="1.9").recipe["trainer"]
    assert late == {"max_completion_length": 256}  # beta 0: the KL estimator default does not matter


def test_repeated_keys_last_wins_with_a_warning(tmp_path):
    result = load(TRL_FLAT + "beta: 0.1\nbeta: 0.2\n", tmp_path)
    assert result.recipe["trainer"]["beta"] == 0.2
    assert any(w.startswith("repeated key beta (lines") for w in result.warnings)
    assert "Warnings:" in result.text


@settings(max_examples=30)
@given(keys=st.lists(st.sampled_from(["beta", "temperature", "seed", "num_generations"]), min_size=2, max_size=6))
def test_repeated_keys_are_found_alike_by_import_and_by_the_recipe_loader(keys):
    """One detector: ``grpo-trl import`` warns of each repeat (the last value kept); a recipe refuses the first."""
    from grpo_trl.recipe.load import parse_yaml

    head = "model_name_or_path: m\ndataset_name: d\nreward_funcs: [accuracy_reward]\n"
    text = head + "".join(f"{k}: {i + 4}\n" for i, k in enumerate(keys))
    lines = {}
    repeats = []
    for i, k in enumerate(keys, 4):
        if k in lines:
            repeats.append(f"repeated key {k} (lines {lines[k]} and {i}): the last value, {i}, is kept")
        lines[k] = i
    assert [w for w in import_text(text).warnings if w.startswith("repeated key")] == repeats
    if repeats:
        with pytest.raises(RecipeError, match=r"duplicate key in one mapping \(line (\d+); the first is on line"):
            parse_yaml(text, "r.yaml")
    else:
        assert parse_yaml(text, "r.yaml") == yaml.safe_load(text)


def test_a_value_yaml_cannot_read_is_one_error_in_import_too(capsys, tmp_path):
    (tmp_path / "c.yaml").write_text("beta: " + "1" * 5000 + "\n")
    assert cli_main(["import", str(tmp_path / "c.yaml")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "a value cannot be read (line 1)" in err


def test_both_liger_settings_keep_their_meanings(tmp_path):
    on = load(TRL_FLAT + "use_liger_loss: true\nuse_liger_kernel: false\n", tmp_path)
    assert on.recipe["trainer"]["use_liger_kernel"] is False
    assert "use_liger_loss" in dict(on.unmapped)
    off = load(TRL_FLAT + "use_liger_loss: false\nuse_liger_kernel: true\n", tmp_path)
    assert off.recipe["trainer"]["use_liger_kernel"] is True and "use_liger_loss" not in dict(off.unmapped)


@pytest.mark.parametrize(
    "extra, key",
    [
        ("reward_funcs: [ioi_code, format]\n", "ioi_code"),
        ("reward_funcs: [my_own_reward]\n", "my_own_reward"),
    ],
)
def test_rewards_without_equivalent_are_written_with_a_warning(tmp_path, extra, key):
    result = load("model_name_or_path: m\ndataset_name: d\n" + extra, tmp_path)
    assert result.recipe["rewards"][0]["name"] == key
    assert any(key in w for w in result.warnings)


def test_unused_reward_settings_and_code_provider_keys_are_listed(tmp_path):
    text = "model_name_or_path: m\ndataset_name: d\nreward_funcs: [accuracy]\ncosine_max_len: 10\ncode_provider: e2b\n"
    unmapped = dict(load(text, tmp_path).unmapped)
    assert "cosine_max_len" in unmapped and "code_provider" in unmapped


def test_open_r1_default_rewards_when_none_named(tmp_path):
    result = load("model_name_or_path: m\ndataset_name: d\ndataset_prompt_column: q\n", tmp_path)
    assert [e["name"] for e in result.recipe["rewards"]] == ["accuracy", "think_format", "tag_count"]


@pytest.mark.parametrize("name", ["rows.jsonl", "rows.ndjson", "rows.jsonlines", "rows.JSON", "rows.csv"])
def test_local_data_file_becomes_a_path(tmp_path, name):
    (tmp_path / name).write_text('{"prompt": "1+1=", "solution": "2"}\n')
    text = f"model_name_or_path: m\ndataset_name: {tmp_path / name}\nreward_funcs: [accuracy_reward]\n"
    data = load(text, tmp_path).recipe["data"]
    assert data["builder"] == "hub" and "path" in data and "name" not in data


def test_dataset_mixture(tmp_path):
    text = textwrap.dedent(
        """\
        model_name_or_path: m
        reward_funcs: [accuracy]
        dataset_prompt_column: problem
        dataset_mixture:
          datasets:
            - {id: a/one, config: default, split: train, columns: [problem, solution], weight: 0.7}
            - {id: b/two, weight: 0.3}
          seed: 3
          test_split_size: 0.1
        """
    )
    result = load(text.replace("weight: 0.3}", "weight: 0.3, data_files: x.json}"), tmp_path)
    parts = result.recipe["data"]["mixture"]
    assert "dataset_mixture.1.data_files" in dict(result.unmapped)
    assert [p["name"] for p in parts] == ["a/one", "b/two"] and [p["weight"] for p in parts] == [0.7, 0.3]
    assert result.recipe["data"]["seed"] == 3 and "dataset_mixture.test_split_size" in dict(result.unmapped)


@pytest.mark.parametrize(
    "text, key",
    [
        ("dataset_name: d\nreward_funcs: [accuracy_reward]\n", "model_name_or_path"),
        ("model_name_or_path: m\nreward_funcs: [accuracy_reward]\n", "dataset_name"),
        ("model_name_or_path: m\ndataset_name: d\n", "reward_funcs"),
        ("model_name_or_path: m\ndataset_name: d\nreward_funcs: [a, b]\nreward_weights: [1]\n", "reward_weights"),
        ("model_name_or_path: m\ndataset_name: d\nreward_funcs: 3\n", "reward_funcs"),
        ("model_name_or_path: [m]\ndataset_name: d\nreward_funcs: [x]\n", "model_name_or_path"),
        ("model_name_or_path: m\ndataset_name: d\nreward_funcs: [x]\ntorch_dtype: bf16\n", "torch_dtype"),
        ("model_name_or_path: m\ndataset_name: d\nreward_funcs: [x]\nuse_peft: maybe\n", "use_peft"),
        ("model_name_or_path: m\ndataset_name: d\nreward_funcs: [x]\nmax_prompt_length: -1\n", "max_prompt_length"),
        ("- just\n- a list\n", "-"),
        ("a: [unclosed\n", "-"),
        (
            "model_name_or_path: m\ndataset_name: d\nreward_funcs: [x]\ndataset_mixture: {datasets: 3}\n",
            "dataset_mixture",
        ),
    ],
)
def test_bad_configs_are_one_clear_error_each(tmp_path, capsys, text, key):
    src = tmp_path / "bad.yaml"
    src.write_text(text)
    with pytest.raises(RecipeError) as err:
        import_config(src)
    assert any(p.key == key for p in err.value.problems), err.value.problems
    assert cli_main(["import", str(src)]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines and all(line.startswith(f"error: {src}: ") for line in lines if line.startswith("error"))


@pytest.mark.parametrize("value, written", [("0", "0"), ("0.0", "0.0"), ("'0'", "0"), ("3", "3"), ("main", "main")])
def test_dataset_config_is_written_as_the_string_it_names(value, written):
    """A numeric config name (YAML reads ``0`` as an int) is the config '0', not a falsy value to skip."""
    text = f"model_name_or_path: m\ndataset_name: d\nreward_funcs: [accuracy_reward]\ndataset_config: {value}\n"
    result = import_text(text)
    assert result.recipe["data"]["config"] == written
    assert not [key for key, _ in result.unmapped if key == "dataset_config"]


def test_bad_options_are_error_lines(tmp_path, capsys):
    (tmp_path / "c.yaml").write_text(TRL_FLAT)
    assert cli_main(["import", str(tmp_path / "c.yaml"), "--trl-version", "latest"]) == 1
    assert capsys.readouterr().err.startswith(f"error: {tmp_path / 'c.yaml'}: --trl-version: 'latest' is not")
    assert cli_main(["import", str(tmp_path / "c.yaml"), "-o", str(tmp_path / "c.yaml"), "--force"]) == 1
    assert "is the config being imported" in capsys.readouterr().err
    assert (tmp_path / "c.yaml").read_text() == TRL_FLAT  # nothing of the user's is replaced


def test_missing_file_is_an_error_line(tmp_path, capsys):
    assert cli_main(["import", str(tmp_path / "nope.yaml")]) == 1
    assert capsys.readouterr().err.startswith(f"error: {tmp_path / 'nope.yaml'}: -: cannot read the config")


def test_stdout_mode_prints_the_recipe(tmp_path, capsys):
    (tmp_path / "c.yaml").write_text(TRL_FLAT)
    assert cli_main(["import", str(tmp_path / "c.yaml")]) == 0
    out = capsys.readouterr()
    assert yaml.safe_load(out.out)["model"]["name"] == "Qwen/Qwen2.5-0.5B"


# ------------------------------------------------------------------------------------ check / train on peer files
def test_check_and_train_point_a_peer_config_at_import(tmp_path, capsys):
    src = tmp_path / "config.yaml"
    src.write_text(OPEN_R1_MATH)
    for command in (["check", str(src)], ["train", str(src)]):
        assert cli_main(command) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert err == [
            f"error: {src}: model_name_or_path: this looks like a TRL/open-r1 config: run `grpo-trl import {src} "
            "-o recipe.yaml` and use the recipe it writes"
        ]


@pytest.mark.parametrize(
    "section, value, expected",
    [
        ("beta", 0.04, "a trl.GRPOConfig field: it belongs under trainer:"),
        ("overwrite_output_dir", True, "did you mean '--overwrite'?"),
        ("model_name_or_path", "x", "did you mean 'model.name'?"),
    ],
)
def test_top_level_keys_say_where_they_belong(make_recipe, section, value, expected):
    path = make_recipe(extra={section: value})
    problems = validate(load_recipe(path, validate=False))
    assert len(problems) == 1 and problems[0].key == section and expected in problems[0].message


def test_peer_reward_names_get_the_rename(make_recipe):
    path = make_recipe(rewards=[{"name": "format"}])
    problems = validate(load_recipe(path, validate=False))
    assert "did you mean 'think_format'?" in problems[0].message


def test_trainer_overwrite_output_dir_names_the_flag(make_recipe):
    path = make_recipe(trainer={"overwrite_output_dir": True})
    problems = validate(load_recipe(path, validate=False))
    assert any("--overwrite" in p.message for p in problems)


def test_import_text_doctest_shape():
    result = import_text("model_name_or_path: m\ndataset_name: d\nreward_funcs: accuracy_reward\n")
    assert result.recipe["rewards"] == [{"name": "accuracy", "args": {"require_answer_tag": False}}]
    assert validate(Recipe(data=result.recipe)) == []


def test_shipped_readme_example_imports_and_checks(tmp_path, monkeypatch, capsys):
    """The README's runnable example: examples/import/open-r1-style.yaml -> a recipe `check` accepts."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(root)
    out = tmp_path / "imported.yaml"
    assert cli_main(["import", "examples/import/open-r1-style.yaml", "-o", str(out)]) == 0
    data = yaml.safe_load(out.read_text())["data"]
    assert (tmp_path / data["path"]).resolve() == (root / "examples/import/problems.jsonl").resolve()
    assert cli_main(["check", str(out)]) == 0
    assert "data                hub: 24 at most" in capsys.readouterr().out


# `trl grpo`'s script passes [reward_model_name_or_path, *reward_funcs] to GRPOTrainer: the model is the first reward
# and reward_weights[0] is its weight.
@pytest.mark.parametrize(
    "extra, expected",
    [
        (
            "reward_funcs: [accuracy_reward, think_format_reward]\nreward_weights: [0.5, 1.0, 0.2]\n",
            [("org/rm", 0.5), ("accuracy", 1.0), ("think_format", 0.2)],
        ),
        ("reward_funcs: [accuracy_reward]\n", [("org/rm", None), ("accuracy", None)]),
        ("", [("org/rm", None)]),
        ("reward_weights: [2.0]\n", [("org/rm", 2.0)]),
    ],
)
def test_trl_reward_model_becomes_the_first_reward(tmp_path, extra, expected):
    result = load(f"model_name_or_path: m\ndataset_name: d\nreward_model_name_or_path: org/rm\n{extra}", tmp_path)
    rewards = result.recipe["rewards"]
    assert [(e.get("model") or e["name"], e.get("weight")) for e in rewards] == expected
    assert "reward_model_name_or_path" not in dict(result.unmapped)
    assert "# reward_model_name_or_path" in result.text.splitlines()[result.text.splitlines().index("rewards:") + 1]


def test_trl_reward_model_weights_count_the_model(tmp_path):
    text = "model_name_or_path: m\ndataset_name: d\nreward_model_name_or_path: org/rm\nreward_funcs: [a, b]\n"
    with pytest.raises(RecipeError) as err:
        load(text + "reward_weights: [1.0, 1.0]\n", tmp_path)
    assert [p.key for p in err.value.problems] == ["reward_weights"]
    assert "reward model's first" in err.value.problems[0].message


def test_trl_local_reward_model_imports_and_checks(tmp_path, monkeypatch, capsys):
    from grpo_trl.models.tiny import build_tiny_reward_model

    work = tmp_path / "work"
    build_tiny_reward_model(work / "rm")
    (work / "rows.jsonl").write_text("".join(f'{{"prompt": "say {i}", "solution": "{i}"}}\n' for i in range(16)))
    (work / "config.yaml").write_text(
        "model_name_or_path: builtin:tiny\ndataset_name: rows.jsonl\nreward_model_name_or_path: rm\n"
        "reward_funcs: [think_format_reward]\nreward_weights: [0.5, 1.0]\nnum_generations: 4\n"
        "per_device_train_batch_size: 4\nuse_cpu: true\noutput_dir: out\nreport_to: none\n"
    )
    monkeypatch.chdir(work)  # TRL's script resolves local paths from where it runs
    out = tmp_path / "recipes" / "imported.yaml"
    out.parent.mkdir()
    assert cli_main(["import", "config.yaml", "-o", str(out)]) == 0
    rewards = yaml.safe_load(out.read_text())["rewards"]
    assert rewards[0] == {"model": "../work/rm", "weight": 0.5}  # relative to the recipe, like data paths
    capsys.readouterr()
    assert cli_main(["check", str(out)]) == 0, capsys.readouterr().err
    assert "tiny-reward" not in capsys.readouterr().err


def test_every_peer_reward_imports_with_args_its_grpo_trl_reward_takes(tmp_path):
    """Each reward name open-r1 or TRL's script knows maps to a grpo-trl reward that takes every arg the table gives
    it (an arg name that drifted would be dropped with a warning, changing what the reward scores)."""
    from grpo_trl import tables as T

    names = list(T.REWARDS)
    result = load(
        f"model_name_or_path: m\ndataset_name: d\ndataset_prompt_column: q\nreward_funcs: [{', '.join(names)}]\n",
        tmp_path,
    )
    dropped = [w for w in result.warnings if "does not take" in w and "language='python'" not in w]
    assert dropped == []
    by_peer = dict(zip(names, result.recipe["rewards"]))
    assert by_peer["binary_code"]["args"] == {"binary": True}  # open-r1: 1 only if all tests pass


@pytest.mark.parametrize("peer", ["cosine", "repetition_penalty", "length"])
def test_open_r1_length_rewards_say_what_they_measure_differently(tmp_path, peer):
    result = load(
        f"model_name_or_path: m\ndataset_name: d\ndataset_prompt_column: q\nreward_funcs: [{peer}]\n", tmp_path
    )
    assert any(w.startswith(f"reward {peer!r}: open-r1 ") for w in result.warnings), result.warnings


def test_local_accelerate_config_is_written_relative_to_the_recipe(tmp_path, monkeypatch):
    work = tmp_path / "work"
    (work / "acc").mkdir(parents=True)
    (work / "acc" / "mine.yaml").write_text("distributed_type: MULTI_GPU\n")
    (work / "config.yaml").write_text(
        "model_name_or_path: m\ndataset_name: d\nreward_funcs: [accuracy_reward]\naccelerate_config: acc/mine.yaml\n"
    )
    monkeypatch.chdir(work)  # the TRL CLI resolves it from where it runs; a recipe's paths are from the recipe
    out = tmp_path / "recipes"
    out.mkdir()
    launch = import_config(work / "config.yaml", out_dir=out).recipe["launch"]
    assert launch == {"accelerate_config": "../work/acc/mine.yaml"}
    assert (out / launch["accelerate_config"]).is_file()
    (work / "config.yaml").write_text((work / "config.yaml").read_text().replace("acc/mine.yaml", "zero2"))
    assert import_config(work / "config.yaml", out_dir=out).recipe["launch"] == {"accelerate_config": "zero2"}


@pytest.mark.parametrize(
    "extra, expected",
    [  # what trl.trainer.utils.get_quantization_config builds from the same ModelConfig keys
        (
            "load_in_4bit: true\ndtype: bfloat16\nuse_bnb_nested_quant: true\n",
            {
                "load_in_4bit": True,
                "bnb_4bit_quant_type": "nf4",
                "bnb_4bit_compute_dtype": "bfloat16",
                "bnb_4bit_use_double_quant": True,
            },
        ),
        (
            "load_in_4bit: true\nbnb_4bit_quant_type: fp4\n",
            {"load_in_4bit": True, "bnb_4bit_quant_type": "fp4", "bnb_4bit_compute_dtype": "float32"},
        ),
        ("load_in_8bit: true\n", {"load_in_8bit": True}),
        ("load_in_4bit: false\nload_in_8bit: false\nbnb_4bit_quant_type: nf4\nuse_bnb_nested_quant: false\n", None),
    ],
)
def test_trl_quantization_keys_become_model_quantization(tmp_path, extra, expected):
    text = "model_name_or_path: m\ndataset_name: d\nreward_funcs: [accuracy_reward]\nuse_peft: true\n" + extra
    result = load(text, tmp_path)
    assert result.recipe["model"].get("quantization") == expected
    assert not any(k.startswith(("load_in", "bnb_", "use_bnb")) for k, _ in result.unmapped), result.unmapped
    if expected:
        from transformers import BitsAndBytesConfig

        from grpo_trl.models.quantization import quantization_problems

        assert quantization_problems(expected, has_lora=True) == []
        BitsAndBytesConfig(**expected)  # what the recipe builds, as TRL built it


def test_a_config_with_every_trl_script_default_written_out_imports_cleanly(tmp_path):
    """`trl grpo` configs often carry every ScriptArguments / ModelConfig / DatasetMixtureConfig field at its default
    (`datasets: []`, `load_in_4bit: false`...): each is a field TRL knows, so none is an error or 'not a field'."""
    import dataclasses

    from trl import ModelConfig
    from trl.scripts.grpo import GRPOScriptArguments
    from trl.scripts.utils import DatasetMixtureConfig

    cfg = {}
    for cls in (GRPOScriptArguments, ModelConfig, DatasetMixtureConfig):
        for f in dataclasses.fields(cls):
            if f.default is not dataclasses.MISSING:
                cfg[f.name] = f.default
            elif f.default_factory is not dataclasses.MISSING:
                cfg[f.name] = f.default_factory()
    cfg.update(model_name_or_path="m", dataset_name="d", reward_funcs=["accuracy_reward"])
    result = load(yaml.safe_dump({k: v for k, v in cfg.items() if v is not None}), tmp_path)
    assert result.recipe["data"] == {"builder": "hub", "name": "d"}  # `datasets: []` is no mixture
    assert "quantization" not in result.recipe["model"] and "lora" not in result.recipe["model"]
    assert not [k for k, why in result.unmapped if "not a field" in why], result.unmapped


def test_an_older_trl_config_is_read_as_trl_with_its_vllm_fields_explained(tmp_path):
    """A TRL 0.1x GRPO config: num_completions_to_print is (was) a GRPOConfig field, so the config is TRL's (no
    open-r1 user-turn wrapping of its standard prompts); vLLM fields TRL renamed or moved to the server are mapped or
    explained, never 'not a field'."""
    text = (
        "model_name_or_path: m\ndataset_name: trl-lib/tldr\nreward_funcs: [think_format_reward]\nuse_vllm: true\n"
        "num_completions_to_print: 2\nvllm_max_model_len: 2048\nvllm_dtype: auto\nvllm_enable_prefix_caching: true\n"
    )
    result = load(text, tmp_path)
    assert result.flavour == "trl"
    assert "prompt_format" not in result.recipe["data"] and "system_prompt" not in result.recipe["data"]
    trainer = result.recipe["trainer"]
    assert trainer["vllm_max_model_length"] == 2048 and trainer["num_completions_to_print"] == 2
    unmapped = dict(result.unmapped)
    assert set(unmapped) == {"vllm_dtype", "vllm_enable_prefix_caching"}
    assert all("grpo-trl serve" in why for why in unmapped.values())


# ------------------------------------------------------------------------------------------------ secrets
def test_import_writes_no_secret_and_says_where_it_goes(tmp_path, capsys):
    config = tmp_path / "trl.yaml"
    config.write_text(
        "model_name_or_path: Qwen/Qwen2.5-0.5B\ndataset_name: trl-lib/tldr\nreward_funcs: [accuracy_reward]\n"
        "hub_token: hf_SEKRITsekritSEKRITsekritSEKRIT12\nvllm_server_base_url: http://bob:SEKRITPW@localhost:8000\n"
        "model_init_kwargs: {token: SEKRIT_MODEL}\nhub_token: SEKRIT_AGAIN\n"  # a repeated key's warning: no value
    )
    out = tmp_path / "recipe.yaml"
    assert cli_main(["import", str(config), "-o", str(out)]) == 0
    written, captured = out.read_text(), capsys.readouterr()
    assert "SEKRIT" not in written + captured.out + captured.err, written + captured.err
    for key in ("hub_token", "vllm_server_base_url"):
        assert f"{key}: not mapped: a secret, not written: put it in the environment: HF_TOKEN" in captured.err


@pytest.mark.parametrize(
    "text", ["hub_token: SEKRITVAL: x\n", "hub_token: *SEKRITVAL\n", "x: 1\n  hub_token: 'SEKRIT"]
)
def test_import_yaml_error_names_line_and_column_only(tmp_path, capsys, text):
    config = tmp_path / "trl.yaml"
    config.write_text("model_name_or_path: x\n" + text)
    assert cli_main(["import", str(config), "-o", str(tmp_path / "out.yaml")]) == 1
    err = capsys.readouterr().err
    assert "SEKRIT" not in err and "not a readable YAML config: not valid YAML at line" in err, err
