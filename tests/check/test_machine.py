"""check tells the truth about this machine: what it lacks (GPU, Hub, vLLM) is a warning naming it, a Hub dataset's
rows are not shown as counted, an existing run is named with its flags, and no advice that cannot work."""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_trl.check.plan import describe_extras, format_plan, make_plan
from grpo_trl.models.builtin import BUILDERS
from grpo_trl.models.shape import model_config
from grpo_trl.recipe.core import Recipe

pytestmark = pytest.mark.filterwarnings("ignore")


def recipe(tmp_path, model="builtin:tiny", data=None, **trainer) -> Recipe:
    return Recipe(
        data={
            "model": {"name": model},
            "data": data or {"builder": "countdown", "source": "generate", "size": 64},
            "rewards": ["xml_format"],
            "trainer": {"output_dir": str(tmp_path / "out"), "report_to": "none", **trainer},
        },
        path=tmp_path / "r.yaml",
    )


def warnings_of(r: Recipe) -> list[str]:
    return describe_extras(r, r.to_grpo_config(planning=True))


@pytest.fixture
def offline_empty_cache(tmp_path, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    org=st.from_regex(r"[A-Za-z][A-Za-z0-9]{0,8}", fullmatch=True),
    name=st.from_regex(r"[a-z0-9][a-z0-9.]{0,8}[a-z0-9]", fullmatch=True).filter(lambda n: ".." not in n),
)
def test_a_hub_model_offline_and_not_cached_is_a_warning_naming_it(tmp_path_factory, monkeypatch, org, name):
    from huggingface_hub import constants

    tmp = tmp_path_factory.mktemp("h")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp / "hub"))
    found = [w for w in warnings_of(recipe(tmp, model=f"{org}/{name}")) if "model.name" in w]
    assert len(found) == 1 and f"{org}/{name}" in found[0] and "HF_HUB_OFFLINE" in found[0]
    (tmp / "hub" / f"models--{org}--{name}").mkdir(parents=True)  # in the local cache: nothing to say
    assert not [w for w in warnings_of(recipe(tmp, model=f"{org}/{name}")) if "model.name" in w]


def test_a_hub_dataset_offline_is_a_warning_and_its_rows_are_not_shown_as_known(tmp_path, offline_empty_cache):
    r = recipe(tmp_path, data={"builder": "gsm8k"})
    assert any(w.startswith("warning:") and "openai/gsm8k" in w and "dataset" in w for w in warnings_of(r))
    line = next(x for x in format_plan(r, make_plan(r), False) if x.strip().startswith("data"))
    assert "unknown here" in line and "7473 rows" not in line


@pytest.mark.skipif(torch.cuda.is_available(), reason="a machine without a CUDA GPU")
@pytest.mark.parametrize("key", ["bf16", "fp16"])
def test_half_precision_on_a_cpu_machine_is_a_warning(tmp_path, key):
    assert any(f"trainer.{key}" in w and "GPU" in w for w in warnings_of(recipe(tmp_path, **{key: True})))
    assert not warnings_of(recipe(tmp_path, use_cpu=True))


@pytest.mark.skipif(torch.cuda.is_available(), reason="a machine without a CUDA GPU")
def test_quantization_and_vllm_say_what_this_machine_lacks(tmp_path):
    r = Recipe(
        data={
            "model": {"name": "builtin:tiny", "quantization": {"load_in_4bit": True}, "lora": {}},
            "data": {"builder": "countdown", "source": "generate", "size": 64},
            "rewards": ["xml_format"],
            "generation": {"backend": "vllm", "vllm_mode": "server", "server_port": 1},
            "trainer": {"output_dir": str(tmp_path / "out"), "report_to": "none"},
        },
        path=tmp_path / "r.yaml",
    )
    found = warnings_of(r)
    assert any("model.quantization" in w and "GPU" in w for w in found)
    assert any("no vLLM server at" in w and "grpo-trl serve" in w for w in found)


def test_every_builtin_model_has_its_config_offline_never_hf_download_advice():
    for name in BUILDERS:
        assert model_config(name)["model_type"]  # no OSError advising `hf download builtin:...`


def test_an_existing_run_is_named_with_resume_and_overwrite(tmp_path):
    r = recipe(tmp_path)
    assert not [w for w in warnings_of(r) if "holds a run" in w]
    (tmp_path / "out" / "checkpoint-3").mkdir(parents=True)
    (tmp_path / "out" / "checkpoint-3" / "trainer_state.json").write_text("{}")
    (line,) = [w for w in warnings_of(r) if "holds a run" in w]
    assert "checkpoint-3" in line and "--resume" in line and "--overwrite" in line


def test_a_wrong_builder_hides_no_other_typo(tmp_path):
    from grpo_trl.check.validate import validate

    r = Recipe(
        data={
            "model": {"name": "builtin:tyni"},
            "data": {"builder": "countdwn", "sistem_prompt": "r1", "size": 8},
            "rewards": ["xml_formt"],
            "trainer": {"output_dir": str(tmp_path / "out"), "learnin_rate": 1.0},
        },
        path=tmp_path / "r.yaml",
    )
    keys = {p.key for p in validate(r)}
    assert {"model.name", "data.builder", "data.sistem_prompt", "rewards.0.name", "trainer.learnin_rate"} <= keys


@pytest.mark.parametrize("offline", [True, False])
def test_push_to_hub_without_a_token_or_offline_is_a_warning_naming_the_key(tmp_path, monkeypatch, offline):
    """transformers creates the Hub repo when the trainer is made: without the Hub, train stopped there (exit 70)."""
    import huggingface_hub
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", offline)
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: None)
    found = [w for w in warnings_of(recipe(tmp_path, push_to_hub=True, hub_model_id="me/x")) if "push_to_hub" in w]
    assert len(found) == 1 and ("HF_HUB_OFFLINE" if offline else "no Hub token") in found[0]
    assert not [w for w in warnings_of(recipe(tmp_path)) if "push_to_hub" in w]
