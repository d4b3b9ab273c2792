"""TRL's own GRPOTrainer test cases (huggingface/trl ``tests/test_grpo_trainer.py``, snapshot f2cd57710ae3), each
trained twice on the tiny offline model with the same data and seed: plain ``GRPOConfig`` + ``GRPOTrainer``, and the
recipe a user would write for it through ``grpo_trl.load_recipe`` + ``grpo_trl.train``. Every metric TRL logs must
match (relative 1e-5) at every step. ``CASES`` is the table; ``SKIPPED`` names the TRL tests left out, and why."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

BASE = {  # what every TRL case sets to stay small, plus the steps, the log and the seed both sides share
    "learning_rate": 0.1,
    "per_device_train_batch_size": 3,
    "num_generations": 3,
    "max_completion_length": 8,
    "max_steps": 2,
    "logging_steps": 1,
    "seed": 42,
    "use_cpu": True,
    "bf16": False,
    "report_to": "none",
    "save_strategy": "no",
}
TIMING = ("runtime", "per_second", "step_time", "timing/")  # wall-clock figures differ between any two runs
R = "tests.trl_cases.rewards:"


@dataclass(frozen=True)
class Case:
    """One TRL test: its ``GRPOConfig`` values (beside ``BASE``), data, rewards (``rm``: the tiny reward model, else a
    function of ``tests/trl_cases/rewards.py``), ``lora`` (LoraConfig fields, None: no adapter)."""

    trl_test: str
    config: dict = field(default_factory=dict)
    data: str = "standard"  # standard | conversational | eval (train + test splits) | streaming
    rewards: tuple[str, ...] = ("rm",)
    lora: dict | None = None
    reward_tokenizer: bool = False  # the reward model's tokenizer given apart (reward_processing_classes)
    logged: tuple[str, ...] = ()  # keys TRL's own test asserts are logged


def _loss(loss: str) -> dict:
    return {"loss_type": loss, "gradient_accumulation_steps": 2, "importance_sampling_level": _level(loss)}


def _level(loss: str) -> str:
    return "sequence" if loss == "luspo" else "token"


EVAL = {"eval_strategy": "steps", "eval_steps": 2, "per_device_eval_batch_size": 3}
LEN2 = (R + "length", R + "unique_letters")
CASES = [
    Case("test_train"),
    Case("test_train_dataset_format[standard_prompt_only]"),
    Case("test_train_dataset_format[conversational_prompt_only]", data="conversational"),
    *[Case(f"test_train_loss_types[{loss}-False]", _loss(loss)) for loss in ("bnpo", "dr_grpo", "dapo", "cispo")],
    *[Case(f"test_train_loss_types[{loss}-False]", _loss(loss)) for loss in ("sapo", "luspo", "vespo")],
    Case("test_train_with_eval", EVAL, data="eval", logged=("eval_loss",)),
    Case("test_train_with_num_generations_eval", {**EVAL, "num_generations_eval": 1}, data="eval"),
    Case("test_train_with_iterable_dataset", data="streaming"),
    Case("test_train_eval_on_start", {**EVAL, "loss_type": "grpo", "eval_on_start": True}, data="eval"),
    Case("test_train_multiple_iterations", {"num_iterations": 2}),
    Case("test_train_peft_config", lora={}),
    Case("test_train_peft_model", lora={}),
    Case("test_train_peft_with_gradient_checkpointing", {"gradient_checkpointing": True}, lora={}),
    Case("test_train_peft_config[r=8, spelled out]", lora={"r": 8}),
    Case("test_train_different_reward_model", data="conversational", reward_tokenizer=True),
    Case("test_train_reward_func_standard", rewards=(R + "length",)),
    Case("test_train_reward_func_conversational", data="conversational", rewards=(R + "length",)),
    Case("test_train_multiple_reward_funcs", rewards=LEN2),
    Case("test_train_sync_and_async_reward_funcs", rewards=(R + "length", R + "one", R + "async_unique_letters")),
    Case("test_train_multiple_reward_funcs_with_None_output", rewards=(R + "length", R + "never")),
    Case("test_train_multiple_reward_funcs_with_weights", {"reward_weights": [0.7, 0.3]}, rewards=LEN2),
    *[
        Case(
            f"test_reward_metric_reflects_reward_weights[{agg}]",
            {"reward_weights": [0.7, 0.3], "multi_objective_aggregation": agg},
            rewards=(R + "one", R + "zero"),
        )
        for agg in ("sum_then_normalize", "normalize_then_sum")
    ],
    Case("test_train_multiple_mixed_reward_funcs", rewards=(R + "length", "rm")),
    Case("test_train_reward_func_additional_column", rewards=(R + "near_value",)),
    Case("test_train_with_sync_ref_model", {"beta": 0.1, "sync_ref_model": True, "ref_model_sync_steps": 2}),
    Case("test_train_beta_non_zero", {"beta": 0.1}),
    Case("test_train_with_pad_to_multiple_of", {"pad_to_multiple_of": 8}),
    Case("test_train_with_off_policy_mask", {"off_policy_mask_threshold": 0.5}),
    Case("test_train_with_bias_correction_kl[False]", {"beta": 0.1, "use_bias_correction_kl": True}),
    Case("test_train_with_cast_lm_head_to_fp32", {"cast_lm_head_to_fp32": True}),
    Case("test_train_with_static_entropy", {"entropy_coef": 0.1}),
    Case(
        "test_train_with_adaptive_entropy", {"entropy_coef": 0.01, "use_adaptive_entropy": True, "entropy_target": 15}
    ),
    *[
        Case(
            f"test_entropy_bonus_scale[{loss}]",
            {"loss_type": loss, "importance_sampling_level": _level(loss), "entropy_coef": 0.5},
        )
        for loss in ("grpo", "dr_grpo", "dapo", "luspo")
    ],
    Case(
        "test_train_with_adaptive_entropy_gradient_accumulation",
        {
            "gradient_accumulation_steps": 2,
            "entropy_coef": 0.01,
            "use_adaptive_entropy": True,
            "entropy_target": 15,
            "entropy_coef_delta": 0.005,
        },
    ),
    Case("test_train_with_entropy_filter", {"top_entropy_quantile": 0.2}),
    Case(
        "test_train_with_additional_generation_kwargs",
        {"top_p": 0.9, "top_k": 10, "min_p": 0.01, "repetition_penalty": 1.1},
    ),
    Case(
        "test_train_normalize_then_sum_aggregation",
        {"multi_objective_aggregation": "normalize_then_sum"},
        rewards=LEN2,
    ),
    *[Case(f"test_train_scale_rewards[{s}]", {"scale_rewards": s}) for s in (False, "group", "batch", True, "none")],
    Case(
        "test_train_with_mask_truncated_completions_all_masked",
        {"mask_truncated_completions": True, "loss_type": "dapo"},
    ),
    Case(
        "test_train_num_generations_larger_than_batch_size", {"num_generations": 6, "gradient_accumulation_steps": 2}
    ),
    Case("test_train_delta_clipping[False]", {"delta": 2.0}),
    Case("test_train_multiple_dataloader_workers", {"dataloader_num_workers": 2}),
    Case(
        "test_train_with_generation_kwargs",
        {"generation_kwargs": {"do_sample": True, "top_k": 50, "num_beams": 2, "length_penalty": -0.1}},
    ),
    Case("test_train_with_reward_func_accessing_trainer_state", rewards=(R + "reads_trainer_state",)),
    Case("test_train_reward_func_with_log_extra", {"log_completions": True}, rewards=(R + "logs_extra",)),
    Case("test_train_reward_func_with_log_metric", rewards=(R + "logs_metric",), logged=("custom_accuracy",)),
    Case(
        "test_prepare_input_called_with_correct_data",
        {
            "gradient_accumulation_steps": 3,
            "steps_per_generation": 4,
            "num_generations": 4,
            "per_device_train_batch_size": 6,
            "num_iterations": 2,
            "shuffle_dataset": False,
        },
    ),
    Case("test_train_sequence_importance_sampling", {"num_iterations": 2, "importance_sampling_level": "sequence"}),
    Case(
        "test_train_with_chat_template_kwargs",
        {"chat_template_kwargs": {"enable_thinking": False}},
        data="conversational",
    ),
    Case("test_warning_raised_all_rewards_none", rewards=(R + "never",)),
]

SKIPPED = {  # TRL test (or family) -> why it is not in CASES
    "test_train_loss_types[*-True], test_train_with_bias_correction_kl[True], test_train_delta_clipping[True], "
    "test_train_with_off_policy_mask_with_liger, test_compute_liger_loss_passes_vllm_is_ratio, "
    "test_liger_kernel_with_peft_*": "liger kernel (GPU)",
    "test_train_vllm_and_peft, test_train_vllm_structured_outputs, test_train_vllm_importance_sampling_correction, "
    "test_train_vllm_with_additional_generation_kwargs, TestGRPOTrainerVLM::test_train_vlm_and_vllm": "vLLM",
    "test_train_moe_peft_model, test_train[tiny-Qwen3MoeForCausalLM], test_train[tiny-Glm4MoeForCausalLM]": "MoE",
    "TestGRPOTrainerSlow::*, TestGRPOTrainerVLM::test_train_vlm_and_liger": "GPU (torch accelerator) / liger",
    "test_train[other architectures], test_trust_remote_code": "Hub-only architectures or remote code: the tiny "
    "offline model is one Qwen2",
    "test_train_with_mask_truncated_completions": "patches GRPOTrainer's generation with a mock (no recipe form)",
    "TestGRPOTrainerVLM::test_train_vlm*": "not skipped: tests/data/test_vlm.py VLM_CASES, on builtin:tiny-vlm",
    "test_train_with_tools, test_train_with_*environment*, test_environment_owned_*, "
    "test_train_with_malformed_tool_calls, test_train_with_tools_multimodal_response": "not in this table: tool and "
    "environment training is compared with TRL in tests/tools/ (TRL's documented agents, tool model warmed first)",
    "test_init_*, test_*_raises, test_iterable_dataset_*, test_evaluate_with_eval_dataset, test_get_off_policy_mask*, "
    "test_warning_raised_sequence_level_*, test_*_reward_processing_classes*, "
    "TestGetHighEntropyMask, TestGRPORolloutDispatch, TestTransformersContinuousBatchingContract": "not training "
    "cases: construction, argument errors and helper units of GRPOTrainer itself",
}


def _dataset_rows(n: int, conversational: bool) -> list[dict]:
    rows = []
    for i in range(n):
        text = f"The number {i} is followed by"
        prompt = [{"role": "user", "content": text}] if conversational else text
        rows.append({"prompt": prompt, "some_values": i})
    return rows


def _write(path: Path, rows: list[dict]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


@pytest.fixture(scope="module")
def world(tmp_path_factory, tiny_model) -> dict:
    """The tiny policy, the tiny reward model and the data files, made once for the whole table."""
    from grpo_trl.models.tiny import build_tiny_reward_model

    root = tmp_path_factory.mktemp("trl-cases")
    files = {
        "standard": _write(root / "standard.jsonl", _dataset_rows(24, False)),
        "conversational": _write(root / "conversational.jsonl", _dataset_rows(24, True)),
    }
    _write(root / "split" / "train.jsonl", _dataset_rows(24, False))
    _write(root / "split" / "test.jsonl", _dataset_rows(6, False))
    files["eval"] = str(root / "split")
    files["streaming"] = files["standard"]
    return {"model": tiny_model, "rm": build_tiny_reward_model(root / "rm"), "files": files}


def _trl_side(case: Case, world: dict, out: Path) -> list[dict]:
    """The case as TRL's test writes it: GRPOConfig + GRPOTrainer on the same model, data and rewards."""
    from datasets import load_dataset
    from trl import GRPOConfig, GRPOTrainer

    from grpo_trl.registry import import_target

    path = world["files"][case.data]
    if case.data == "eval":
        splits = {s: f"{path}/{s}.jsonl" for s in ("train", "test")}
        data = load_dataset("json", data_files=splits)
        train, evaluation = data["train"], data["test"]
    else:
        train = load_dataset("json", data_files=path, split="train", streaming=case.data == "streaming")
        evaluation = None
    rewards = [world["rm"] if r == "rm" else import_target(r, "reward", ValueError) for r in case.rewards]
    kwargs = {}
    if case.reward_tokenizer:
        from transformers import AutoTokenizer

        kwargs["reward_processing_classes"] = [AutoTokenizer.from_pretrained(world["rm"])]
    if case.lora is not None:
        from peft import LoraConfig

        kwargs["peft_config"] = LoraConfig(**case.lora)
    args = GRPOConfig(output_dir=str(out), **{**BASE, **case.config})
    trainer = GRPOTrainer(
        model=world["model"],
        reward_funcs=rewards if len(rewards) > 1 else rewards[0],
        args=args,
        train_dataset=train,
        eval_dataset=evaluation,
        **kwargs,
    )
    trainer.train()
    return trainer.state.log_history


def recipe_for(case: Case, world: dict, out: Path) -> dict:
    """The recipe a user writes for the case: rewards (and their weights) as a list, the rest under trainer."""
    trainer = {**BASE, **case.config, "output_dir": str(out)}
    weights = trainer.pop("reward_weights", [1.0] * len(case.rewards))
    rewards = []
    for name, weight in zip(case.rewards, weights, strict=True):
        if name == "rm":
            entry = {"model": world["rm"], **({"tokenizer": world["rm"]} if case.reward_tokenizer else {})}
        else:
            entry = {"name": name}
        rewards.append({**entry, "weight": weight})
    data: dict = {"builder": "hub"}
    if case.data == "eval":
        data.update(name=world["files"]["eval"], eval_split="test")
    else:
        data["path"] = world["files"][case.data]
    if case.data == "streaming":
        data["streaming"] = True
    model = {"name": world["model"], **({"lora": case.lora} if case.lora is not None else {})}
    return {"model": model, "data": data, "rewards": rewards, "trainer": trainer}


def _recipe_side(case: Case, world: dict, out: Path) -> list[dict]:
    import grpo_trl

    path = out.with_suffix(".yaml")
    path.write_text(yaml.safe_dump(recipe_for(case, world, out)))
    return grpo_trl.train(grpo_trl.load_recipe(str(path))).log_history


def _same(expected: list[dict], got: list[dict]) -> None:
    assert len(got) == len(expected), (len(got), len(expected))
    for step, (want, have) in enumerate(zip(expected, got, strict=True)):
        for key, value in want.items():
            if any(t in key for t in TIMING) or not isinstance(value, int | float):
                continue
            assert key in have, f"log entry {step}: {key} missing"
            if math.isnan(value):
                assert math.isnan(have[key]), f"log entry {step}: {key} {have[key]} != nan"
            else:
                assert have[key] == pytest.approx(value, rel=1e-5, abs=1e-8), f"log entry {step}: {key}"


@pytest.mark.slow  # two real trainings per case
@pytest.mark.parametrize(
    "case",
    [pytest.param(c, id=c.trl_test) for c in CASES],
)
def test_trl_case_trains_as_trl_trains_it(case: Case, world: dict, tmp_path: Path) -> None:
    expected = _trl_side(case, world, tmp_path / "trl")
    assert expected[-1].get("train_loss") is not None  # TRL's own test asserts this
    got = _recipe_side(case, world, tmp_path / "recipe")
    _same(expected, got)
    for key in case.logged:
        assert any(key in entry for entry in got), f"{key} is not logged"


def test_the_table_names_real_trl_tests_once() -> None:
    names = [c.trl_test.split("[")[0] for c in CASES]
    assert len({c.trl_test for c in CASES}) == len(CASES)
    assert all(n.startswith("test_") for n in names) and SKIPPED
