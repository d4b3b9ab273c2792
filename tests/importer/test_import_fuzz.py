"""Property tests: any combination of TRL / open-r1 keys, with good and bad values, gives a recipe that reads back
exactly (and passes `check` when every value is good), or clear `error:` lines; never an exception."""

from __future__ import annotations

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_trl.check.validate import validate
from grpo_trl.importer import import_text
from grpo_trl.recipe import Recipe, RecipeError

GOOD = {
    "model_revision": st.just("main"),
    "torch_dtype": st.sampled_from(["bfloat16", "float32", "auto"]),
    "dtype": st.sampled_from(["bfloat16", "float16"]),
    "attn_implementation": st.just("sdpa"),
    "dataset_config": st.just("default"),
    "dataset_train_split": st.sampled_from(["train", "train[:100]"]),
    "dataset_prompt_column": st.sampled_from(["problem", "prompt"]),
    "system_prompt": st.sampled_from(["Think step by step.", "Answer in <answer> tags.\nBe brief."]),
    "use_peft": st.booleans(),
    "lora_r": st.sampled_from([8, 32]),
    "lora_target_modules": st.sampled_from(["all-linear", ["q_proj", "v_proj"]]),
    "beta": st.sampled_from([0.0, 0.04]),
    "loss_type": st.sampled_from(["grpo", "bnpo", "dr_grpo"]),
    "learning_rate": st.sampled_from([1e-6, 3e-6]),
    "max_completion_length": st.sampled_from([64, 1024]),
    "max_prompt_length": st.sampled_from([128, 512]),
    "warmup_ratio": st.sampled_from([0.0, 0.1]),
    "use_vllm": st.booleans(),
    "vllm_mode": st.sampled_from(["server", "colocate"]),
    "use_liger_loss": st.booleans(),
    "use_liger_kernel": st.just(False),  # True needs liger-kernel installed (check says so)
    "overwrite_output_dir": st.booleans(),
    "gradient_checkpointing": st.booleans(),
    "cosine_max_len": st.sampled_from([500, 1000]),
    "repetition_n_grams": st.sampled_from([2, 3]),
    "max_completion_len": st.just(1024),
    "soft_punish_cache": st.just(128),
    "vllm_device": st.just("auto"),
    "wandb_project": st.just("p"),
    "num_processes": st.sampled_from([1, 2]),
    "save_strategy": st.sampled_from(["no", "steps"]),
    "report_to": st.just(["none"]),
}
REWARDS = [
    "accuracy",
    "format",
    "tag_count",
    "reasoning_steps",
    "cosine",
    "repetition_penalty",
    "length",
    "soft_overlong_punishment",
    "accuracy_reward",
    "think_format_reward",
    "get_soft_overlong_punishment",
]
BAD = st.one_of(
    st.none(),
    st.integers(-3, 3),
    st.text(max_size=8),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.booleans(),
)


@st.composite
def good_configs(draw) -> dict:
    # batch 4 with G 4 (TRL's batch arithmetic holds); other sizes are covered by any_configs
    cfg = {"model_name_or_path": "builtin:tiny", "dataset_name": "some-org/data"}
    cfg.update(num_generations=4, per_device_train_batch_size=4)
    keys = draw(st.lists(st.sampled_from(sorted(GOOD)), unique=True, max_size=12))
    for k in keys:
        cfg[k] = draw(GOOD[k])
    funcs = draw(st.lists(st.sampled_from(REWARDS), min_size=1, max_size=4))
    cfg["reward_funcs"] = funcs
    if draw(st.booleans()):
        cfg["reward_weights"] = [draw(st.sampled_from([0.5, 1.0])) for _ in funcs]
    return cfg


@st.composite
def any_configs(draw) -> dict:
    cfg = draw(good_configs())
    for key in draw(
        st.lists(
            st.sampled_from(
                [
                    *GOOD,
                    "model_name_or_path",
                    "dataset_name",
                    "reward_funcs",
                    "reward_weights",
                    "dataset_mixture",
                    "num_generations",
                    "accelerate_config",
                    "use_peft",
                    "model_init_kwargs",
                    "env",
                    "not_a_key",
                ]
            ),
            max_size=4,
        )
    ):
        cfg[key] = draw(BAD)
    return cfg


def dump(cfg: dict) -> str:
    return yaml.safe_dump(cfg, sort_keys=False)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(good_configs())
def test_good_configs_give_recipes_that_pass_check(cfg):
    result = import_text(dump(cfg), "c.yaml")
    assert yaml.safe_load(result.text) == result.recipe
    recipe = Recipe(data=result.recipe)
    problems = validate(recipe)
    assert problems == [], problems
    assert recipe.model["name"] == "builtin:tiny"
    assert len(recipe.rewards) == len(cfg["reward_funcs"])
    if "reward_weights" in cfg:
        assert [r["weight"] for r in recipe.rewards] == cfg["reward_weights"]
    for key in ("beta", "loss_type", "learning_rate", "max_completion_length"):
        if key in cfg:
            assert recipe.trainer[key] == cfg[key]
    if "use_liger_kernel" in cfg:
        assert recipe.trainer["use_liger_kernel"] == cfg["use_liger_kernel"]
    elif "use_liger_kernel" in recipe.trainer:
        raise AssertionError("use_liger_kernel invented from use_liger_loss")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(any_configs())
def test_any_config_gives_a_recipe_or_clear_errors(cfg):
    try:
        result = import_text(dump(cfg), "c.yaml")
    except RecipeError as exc:
        assert exc.problems
        for problem in exc.problems:
            line = str(problem)
            assert line.startswith("c.yaml: ") and "\n" not in line
        return
    assert yaml.safe_load(result.text) == result.recipe
    assert all("\n" not in w for w in result.warnings)
    validate(Recipe(data=result.recipe))  # problems are fine here; exceptions are not


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=200))
def test_arbitrary_text_never_raises_anything_else(text):
    try:
        import_text(text, "c.yaml")
    except RecipeError as exc:
        assert exc.problems
