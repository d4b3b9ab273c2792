"""check refuses a recipe exactly when train's own constructors would: each class of mistake is generated
(hypothesis), and the check's answer is compared with what the constructor train calls says on the real thing."""

from __future__ import annotations

import time
import warnings

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from grpo_trl.check.model import model_problems
from grpo_trl.check.validate import validate
from grpo_trl.errors import RecipeError
from grpo_trl.fields import MAX_COUNT, MAX_SECONDS, name_bounds
from grpo_trl.models.builtin import BUILDERS
from grpo_trl.recipe.core import Recipe
from grpo_trl.recipe.trl_schema import generation_model, trainer_model

pytestmark = pytest.mark.filterwarnings("ignore")
FAST = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
DATA = {"builder": "countdown", "source": "generate", "size": 64, "system_prompt": "none"}


def recipe(tmp_path, model=None, **sections) -> Recipe:
    data = {
        "model": model or {"name": "builtin:tiny"},
        "data": dict(DATA),
        "rewards": [{"name": "xml_format"}],
        "trainer": {"output_dir": str(tmp_path / "out"), "max_steps": 1, "use_cpu": True, "report_to": "none"},
    }
    for name, value in sections.items():
        data[name] = {**data.get(name, {}), **value} if isinstance(value, dict) else value
    return Recipe(data=data, path=tmp_path / "r.yaml")


def keys(problems) -> set[str]:
    return {p.key for p in problems}


@pytest.fixture(scope="module")
def tiny_path(tmp_path_factory):
    from grpo_trl.models.load import resolve_model

    return resolve_model({"name": "builtin:tiny"}, str(tmp_path_factory.mktemp("tiny")))


# ------------------------------------------------------------------------------------------------ builtin: names
@FAST
@given(name=st.one_of(st.sampled_from(sorted(BUILDERS)), st.text(min_size=0, max_size=12).map("builtin:".__add__)))
def test_builtin_names_refused_iff_train_cannot_resolve_them(tmp_path_factory, name):
    from grpo_trl.models.builtin import builder

    tmp = tmp_path_factory.mktemp("b")
    found = model_problems(recipe(tmp, {"name": name}))
    try:
        builder(name)  # what train's resolve_model looks the name up with
        train_fails = False
    except RecipeError as exc:
        train_fails = True
        assert exc.problems[0].key == "model.name"  # one error line, never a KeyError (exit 70)
    assert ("model.name" in keys(found)) == train_fails, found
    if train_fails:
        assert "builtin:tiny" in str(found[0])  # names what exists


# ------------------------------------------------------------------------------------------------ LoRA targets
LINEARS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "lm_head"]
targets = st.one_of(
    st.just("all-linear"),
    st.lists(
        st.one_of(st.sampled_from(LINEARS), st.from_regex(r"[a-z_]{1,8}", fullmatch=True)), min_size=1, max_size=3
    ),
)


@FAST
@given(target_modules=targets)
def test_lora_targets_refused_iff_peft_cannot_place_them_on_the_real_model(
    tmp_path_factory, tiny_path, target_modules
):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    tmp = tmp_path_factory.mktemp("l")
    found = model_problems(recipe(tmp, {"name": "builtin:tiny", "lora": {"target_modules": target_modules}}))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = AutoModelForCausalLM.from_pretrained(tiny_path)
            get_peft_model(model, LoraConfig(task_type="CAUSAL_LM", target_modules=target_modules))
        train_fails = False
    except ValueError:
        train_fails = True
    assert ("model.lora.target_modules" in keys(found)) == train_fails, found
    if train_fails:
        assert "q_proj" in found[0].fix and "model.lora.target_modules" in str(found[0])


# ------------------------------------------------------------------------------------------------ LoRA field types
def _lora_fields() -> dict[str, type]:
    import dataclasses
    import typing

    from peft import LoraConfig

    hints = typing.get_type_hints(LoraConfig)
    simple = {}
    for f in dataclasses.fields(LoraConfig):
        if f.init and hints[f.name] in (int, float, bool):
            simple[f.name] = hints[f.name]
    return simple


LORA_FIELDS = _lora_fields()
WRONG = {
    int: st.one_of(st.text(max_size=4), st.lists(st.integers(), max_size=2), st.booleans()),
    float: st.one_of(st.text(alphabet="xyz ", max_size=4), st.lists(st.floats(), max_size=2), st.booleans()),
    bool: st.one_of(st.text(max_size=4), st.integers(), st.floats(allow_nan=False)),
}


@FAST
@given(data=st.data())
def test_lora_fields_of_the_wrong_type_are_refused_naming_the_field(tmp_path_factory, data):
    field = data.draw(st.sampled_from(sorted(LORA_FIELDS)))
    value = data.draw(WRONG[LORA_FIELDS[field]])
    r = recipe(tmp_path_factory.mktemp("t"), {"name": "builtin:tiny", "lora": {field: value}})
    assert f"model.lora.{field}" in keys(r.problems), r.problems


def test_every_lora_config_field_is_a_recipe_key(tmp_path):
    import dataclasses

    from peft import LoraConfig

    from grpo_trl.recipe.schema import lora_model

    assert {f.name for f in dataclasses.fields(LoraConfig) if f.init} == set(lora_model().model_fields)
    r = recipe(tmp_path, {"name": "builtin:tiny", "lora": {"use_rslora": True, "bias": "lora_only", "r": 2}})
    assert not r.problems and r.lora_config().use_rslora and not model_problems(r)
    assert recipe(tmp_path, {"name": "builtin:tiny", "lora": {}}).lora_config() is not None  # peft's defaults


# ------------------------------------------------------------------------------------------------ ranges
def _bounded() -> list[tuple[str, dict]]:
    out = []
    for section, model in (("trainer", trainer_model()), ("generation", generation_model())):
        for name, info in model.model_fields.items():
            bounds = name_bounds(name, info.annotation)
            if "le" in bounds:
                out.append((f"{section}.{name}", bounds))
    return out + [("rewards.0.timeout", {"le": MAX_SECONDS}), ("data.size", {"le": MAX_COUNT})]


BOUNDED = _bounded()


def _with(tmp, key: str, value) -> Recipe:
    section, _, name = key.partition(".")
    if section == "rewards":
        return recipe(tmp, rewards=[{"name": "xml_format", "timeout": value}])
    return recipe(tmp, **{section: {name: value}})


@FAST
@given(field=st.sampled_from(BOUNDED), over=st.integers(1, 10**15))
def test_sizes_ports_and_timeouts_out_of_range_are_refused_at_check(tmp_path_factory, field, over):
    key, bounds = field
    value = bounds["le"] + over
    r = _with(tmp_path_factory.mktemp("n"), key, value)
    found = list(r.problems) or validate(r)  # builder options are typed when the builder is looked up
    assert any(p.key == key and "<=" in p.message for p in found), (key, value, found)


def test_check_of_a_large_generated_dataset_is_quick(tmp_path):
    r = recipe(tmp_path, data={"size": MAX_COUNT})
    start = time.perf_counter()
    assert validate(r) == []
    assert time.perf_counter() - start < 60  # the first prompt is generated, not all 10**8 rows


# ------------------------------------------------------------------------------------------------ one error line each
CLASSES = [
    ("model.name=builtin:tyni", "model.name", "builtin:tiny"),
    ("model.lora={target_modules: [nope]}", "model.lora.target_modules", "q_proj"),
    ("model.lora={r: 0}", "model.lora.r", "positive"),
    ("model.lora={lora_dropout: 2}", "model.lora.lora_dropout", "between 0 and 1"),
    ("model.lora={lora_alph: 8}", "model.lora.lora_alph", "lora_alpha"),
    ("model.tiny={hidden_size: 0}", "model.tiny.hidden_size", "positive"),
    ("model.name=org/bad..name", "model.name", "neither a folder nor a Hub id"),
    ("model.chat_template=missing.jinja", "model.chat_template", "not found"),
    ("model.quantization={load_in_4bit: maybe}", "model.quantization.load_in_4bit", "boolean"),
    ("rewards.0.timeout=1e9", "rewards.0.timeout", "<="),
    ("rewards.0.args={per_tag: x}", "rewards.0.args.per_tag", "number"),
    ("rewards.0={name: accuracy, args: {timeout: soon}}", "rewards.0.args.timeout", "number"),
    ("rewards.2.args={max_completion_len: lots}", "rewards.2.args.max_completion_len", "int"),
    ("data.size=1000000000000", "data.size", "<="),
    ("trainer.vllm_server_port=99999", "trainer.vllm_server_port", "<="),
    ("generation.server_timeout=1e12", "generation.server_timeout", "<="),
    ("launch.num_processes=eight", "launch.num_processes", "int"),
]


@pytest.mark.parametrize(("override", "key", "fix"), CLASSES, ids=[c[1] for c in CLASSES])
def test_each_class_is_one_error_line_and_exit_1(capsys, override, key, fix):
    from grpo_trl.cli import main

    assert main(["check", "recipes/demo/tiny-cpu.yaml", "--set", override]) == 1
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert any(f": {key}: " in line and fix in line for line in lines), lines


# ------------------------------------------------------------------------------------------------ LoRA init values
INITS = [True, False, "gaussian", "eva", "olora", "pissa", "pissa_niter_2", "corda", "loftq", "orthogonal"]


@FAST
@given(init=st.one_of(st.sampled_from(INITS), st.text(alphabet="abcegiloprstv_", max_size=8)))
@example(init="loftq")  # needs scipy: peft raises ImportError making the config
def test_a_lora_init_check_accepts_is_one_train_can_build(tmp_path_factory, tiny_path, init):
    """check never crashes on a LoRA init (loftq without scipy was exit 70), and what it accepts, peft builds around
    the real model as train does."""
    from peft import get_peft_model
    from transformers import AutoModelForCausalLM

    r = recipe(tmp_path_factory.mktemp("i"), {"name": "builtin:tiny", "lora": {"init_lora_weights": init}})
    found = [p for p in [*r.problems, *model_problems(r)] if p.key.startswith("model.lora")]
    if not found:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            get_peft_model(AutoModelForCausalLM.from_pretrained(tiny_path), r.lora_config())


# ------------------------------------------------------------------------------------------------ optimizers
def _optimizers() -> list[str]:
    from transformers.training_args import OptimizerNames

    return sorted(o.value for o in OptimizerNames)


@FAST
@given(optim=st.sampled_from(_optimizers()))
def test_an_optimizer_whose_package_is_missing_is_refused_at_check(tmp_path_factory, tiny_path, optim):
    """``trainer.optim`` needing a package not installed here (adamw_bnb_8bit without bitsandbytes) failed when
    training started (exit 70), after check said OK: check asks transformers for it as the Trainer does."""
    from transformers import AutoModelForCausalLM, Trainer

    from grpo_trl.check.validate import trl_problems

    r = recipe(tmp_path_factory.mktemp("o"), trainer={"optim": optim})
    try:
        Trainer.get_optimizer_cls_and_kwargs(r.to_grpo_config(), AutoModelForCausalLM.from_pretrained(tiny_path))
        missing = False
    except (ImportError, ValueError):  # transformers says "please install" in both
        missing = True
    assert ("trainer.optim" in keys(trl_problems(r, 1))) == missing
