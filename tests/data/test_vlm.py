"""Vision-language GRPO from a recipe, offline: ``builtin:tiny-vlm`` (a tiny random LLaVA-style model) on generated
squares. The processor is what TRL loads, the length filter counts what TRL's own ``_tokenize_prompts`` counts,
``check`` refuses a text model or a template without the image token, and check, train, resume and eval all run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from grpo_trl.check import load_recipe
from grpo_trl.cli import main as cli_main
from grpo_trl.data import build_dataset
from grpo_trl.models.load import load_processing_class, load_tokenizer

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tiny_vlm(tmp_path_factory) -> str:
    from grpo_trl.models.tiny_vlm import build_tiny_vlm_model

    return build_tiny_vlm_model(tmp_path_factory.mktemp("vlm") / "model")


def test_the_processor_is_loaded_as_trl_loads_it_and_a_text_model_keeps_its_tokenizer(tiny_vlm, tiny_model):
    from transformers import ProcessorMixin

    from grpo_trl.models.tiny_vlm import TOKENS

    processor = load_processing_class({"name": tiny_vlm}, tiny_vlm)
    assert isinstance(processor, ProcessorMixin)
    assert processor.tokenizer.padding_side == "left" and processor.tokenizer.truncation_side == "left"
    assert len(processor.tokenizer) == TOKENS  # what check's memory plan assumes without building it
    from grpo_trl.models.shape import load_shape

    built = json.loads((Path(tiny_vlm) / "grpo_trl_tiny.json").read_text())["params"]
    assert load_shape("builtin:tiny-vlm").params()[0] == built  # the vision tower counted too
    text = load_processing_class({"name": tiny_model}, tiny_model)
    same = load_tokenizer({"name": tiny_model}, tiny_model)
    assert type(text) is type(same) and text.chat_template == same.chat_template and text.padding_side == "right"


def test_tiny_vlm_is_a_builtin_whose_folder_is_a_cache_of_the_run():
    from grpo_trl.models.builtin import BUILDERS, VISION_BUILTINS, folder_name
    from grpo_trl.run.names import kind_of

    assert set(VISION_BUILTINS) <= set(BUILDERS) and kind_of(folder_name("builtin:tiny-vlm")) == "cache"


@pytest.mark.parametrize("files", [["config.json"], ["config.json", "tokenizer.json", "tokenizer_config.json"]])
def test_a_vision_model_without_its_processor_is_one_problem_naming_model(tiny_vlm, tmp_path, files):
    import shutil

    from grpo_trl.errors import GrpoTrlError

    for name in files:
        shutil.copy(Path(tiny_vlm) / name, tmp_path / name)
    with pytest.raises(GrpoTrlError) as err:
        load_processing_class({"name": str(tmp_path)}, str(tmp_path), "r.yaml")
    (problem,) = err.value.problems
    assert problem.key == "model" and "cannot load the processor of vision-language model" in problem.message


def test_qwen2_vl_without_torchvision_is_one_problem_that_names_it(tmp_path):
    """transformers 5's Qwen2-VL processor needs torchvision (its video processor), which the lock does not have."""
    import importlib.util

    if importlib.util.find_spec("torchvision") is not None:
        pytest.skip("torchvision is installed here: the processor loads")
    from transformers import Qwen2VLConfig

    from grpo_trl.errors import GrpoTrlError
    from grpo_trl.models.tiny import TAG_TOKENS, _tokenizer

    _tokenizer(["How many squares?"], 300, TAG_TOKENS).save_pretrained(tmp_path)
    rope = {"rope_type": "default", "mrope_section": [2, 3, 3], "rope_theta": 1e4}
    text = {"vocab_size": 400, "hidden_size": 64, "num_hidden_layers": 1, "num_attention_heads": 4}
    Qwen2VLConfig(text_config={**text, "rope_parameters": rope}, vision_config={"depth": 1}).save_pretrained(tmp_path)
    processor = {"processor_class": "Qwen2VLProcessor", "image_processor_type": "Qwen2VLImageProcessor"}
    (tmp_path / "preprocessor_config.json").write_text(json.dumps(processor))
    with pytest.raises(GrpoTrlError) as err:
        load_processing_class({"name": str(tmp_path)}, str(tmp_path), "r.yaml")
    (problem,) = err.value.problems
    assert problem.key == "model" and "Torchvision" in problem.message


def test_model_chat_template_goes_onto_the_processor(tiny_vlm, tmp_path):
    template = "{% for m in messages %}[{{ m['role'] }}]{% endfor %}"
    assert load_processing_class({"name": tiny_vlm, "chat_template": template}, tiny_vlm).chat_template == template


def _trl_lengths(model: str, processor, rows: list[dict]) -> list[int]:
    """Prompt lengths as GRPOTrainer tokenizes a VLM's prompts (its own methods, on a real trainer)."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer
    from trl.data_utils import prepare_multimodal_messages

    args = GRPOConfig(output_dir="/tmp/unused-grpo-trl-vlm", use_cpu=True, bf16=False, report_to=[])
    args.per_device_train_batch_size = args.num_generations = 2
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=lambda completions, **kw: [0.0] * len(completions),
        args=args,
        train_dataset=Dataset.from_list(rows[:2]),
        processing_class=processor,
    )
    prompts = [prepare_multimodal_messages(r["prompt"], images=r["images"]) for r in rows]  # as _generate_and_score
    return [len(ids) for ids in trainer._tokenize_prompts(prompts)[0]]


def test_the_length_filter_keeps_the_rows_trl_counts_within_the_bound_images_included(tiny_vlm, tmp_path):
    processor = load_processing_class({"name": tiny_vlm}, tiny_vlm)
    cfg = {"builder": "squares", "size": 12, "image_size": 20}
    rows = list(build_dataset(cfg).train)
    for i, row in enumerate(rows):  # prompts of several lengths
        row["prompt"][-1]["content"] += " please" * (i % 4) * 3
    lengths = _trl_lengths(tiny_vlm, processor, rows)
    text_only = [len(processor.tokenizer.apply_chat_template(r["prompt"], add_generation_prompt=True)) for r in rows]
    assert all(n > t for n, t in zip(lengths, text_only))  # the image's tokens are counted
    from datasets import Dataset

    from grpo_trl.data.filters import filter_by_tokens

    ds = Dataset.from_list(rows)
    for bound in sorted(set(lengths)) + [min(lengths) - 1]:
        kept, dropped = filter_by_tokens(ds, {"max_prompt_tokens": bound}, processor)
        assert [r["prompt"] for r in kept] == [r["prompt"] for r, n in zip(rows, lengths) if n <= bound]
        assert dropped["max_prompt_tokens"] == sum(n > bound for n in lengths)


def _recipe(tmp_path: Path, **changes) -> Path:
    recipe = yaml.safe_load((ROOT / "recipes/demo/tiny-vlm.yaml").read_text())
    recipe["trainer"].update(output_dir=str(tmp_path / "out"), max_steps=2, save_steps=2, logging_steps=1)
    recipe["data"].update(size=32)
    for key, value in changes.items():
        section, name = key.split("__")
        recipe[section][name] = value
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe))
    return path


def test_check_refuses_a_text_model_and_a_template_without_the_image_token(tmp_path, capsys):
    assert cli_main(["check", str(_recipe(tmp_path))]) == 0, capsys.readouterr().err
    assert "memory per GPU      unknown" not in capsys.readouterr().out  # planned offline
    assert cli_main(["check", str(_recipe(tmp_path, model__name="builtin:tiny"))]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "model.name: 'builtin:tiny' is a text-only model" in err[0]
    no_image = "{% for m in messages %}{{ m['role'] }}{% endfor %}"
    assert cli_main(["check", str(_recipe(tmp_path, model__chat_template=no_image))]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "model.chat_template:" in err[0] and "without the image token '<image>'" in err[0]


def test_check_says_which_image_of_a_local_file_does_not_open(tmp_path, capsys):
    (tmp_path / "ok.png").write_bytes(b"")  # an empty file named like an image
    rows = [{"image": "ok.png", "question": "How many?", "answer": "1"}]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    data = {"builder": "images", "path": "rows.jsonl", "eval_size": None}
    path = _recipe(tmp_path)
    recipe = yaml.safe_load(path.read_text())
    recipe["data"] = {k: v for k, v in data.items() if v is not None}
    path.write_text(yaml.safe_dump(recipe))
    assert cli_main(["check", str(path)]) == 1
    err = capsys.readouterr().err
    assert "data.image_column:" in err and "row 0" in err and "cannot be opened as an image" in err


REWARD = """
import json, os
from grpo_trl import register_reward


@register_reward("saw_completions")
def saw_completions(completions, images, solution, **kwargs):
    with open(os.environ["VLM_SEEN"], "a") as fh:
        for c, ims, s in zip(completions, images, solution):
            row = {"text": c[0]["content"], "images": [list(i.size) for i in ims], "solution": s}
            fh.write(json.dumps(row) + "\\n")
    return [float("<answer>" in c[0]["content"]) for c in completions]
"""


def test_check_train_resume_and_eval_run_and_the_reward_sees_completions_and_images(tmp_path, monkeypatch, capsys):
    seen = tmp_path / "seen.jsonl"
    monkeypatch.setenv("VLM_SEEN", str(seen))
    (tmp_path / "reward.py").write_text(REWARD)
    path = _recipe(tmp_path)
    recipe = yaml.safe_load(path.read_text())
    recipe["plugins"] = ["reward.py"]
    recipe["rewards"].append({"name": "saw_completions"})
    path.write_text(yaml.safe_dump(recipe))
    assert cli_main(["check", str(path)]) == 0, capsys.readouterr().err
    assert cli_main(["train", str(path)]) == 0, capsys.readouterr().err
    first = [json.loads(line) for line in seen.read_text().splitlines()]
    assert len(first) == 2 * 8  # 2 steps x 8 completions, each with its text, its row's image and solution
    assert all(r["images"] == [[28, 28]] and r["solution"].isdigit() and isinstance(r["text"], str) for r in first)
    assert len({r["text"] for r in first}) > 1  # sampled completions, not one text
    assert cli_main(["train", str(path), "--resume", "--set", "trainer.max_steps=3"]) == 0, capsys.readouterr().err
    state = json.loads((tmp_path / "out" / "trainer_state.json").read_text())
    assert state["global_step"] == 3 and len(seen.read_text().splitlines()) == 3 * 8  # one more step, not three
    assert cli_main(["eval", str(path), "--n", "2", "--limit", "3", "--set", "trainer.max_steps=3"]) == 0
    report = json.loads((tmp_path / "out" / "eval.json").read_text())
    assert report["prompts"] == 3 and set(report["rewards"]) >= {"gsm8k", "xml_format", "saw_completions"}
    load_recipe(path)  # the recipe as written still loads


def test_the_memory_plan_of_a_qwen2_5_vl_config_counts_the_parameters_transformers_builds(tmp_path):
    """The real recipe's family (Qwen2.5-VL), at a small size: the plan reads config.json alone (no processor, no
    torchvision) and counts the vision tower with the language model."""
    import torch
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    from grpo_trl.models.shape import load_shape

    text = {"vocab_size": 300, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2}
    text |= {"num_attention_heads": 4, "num_key_value_heads": 2, "rope_parameters": {"rope_type": "default"}}
    text["rope_parameters"] |= {"mrope_section": [2, 3, 3], "rope_theta": 10000.0}
    vision = {"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "out_hidden_size": 64}
    config = Qwen2_5_VLConfig(text_config=text, vision_config=vision, tie_word_embeddings=True)
    (tmp_path / "config.json").write_text(config.to_json_string())
    with torch.device("meta"):
        want = Qwen2_5_VLForConditionalGeneration(config).num_parameters()
    shape = load_shape(str(tmp_path))
    assert shape.params()[0] == want and shape.hidden == 64 and shape.layers == 2  # sizes: the language model's


ONE, MULTI = ["image", "text"], ["text", "image", "text", "image"]
VLM_CASES = {  # TestGRPOTrainerVLM's CPU cases (liger and vLLM ones need a GPU): (layout, GRPOConfig values, lora)
    "test_train_vlm": (ONE, {}, None),
    "test_train_vlm_multi_image": (MULTI, {"max_steps": 4}, None),  # the images' places mattered from step 4
    "test_train_vlm_with_pad_to_multiple_of": (ONE, {"pad_to_multiple_of": 7}, None),
    "test_train_vlm_beta_non_zero": (ONE, {"beta": 0.1}, None),
    "test_train_vlm_peft": (ONE, {}, {"target_modules": ["q_proj", "v_proj"]}),
    "test_train_vlm_and_importance_sampling": (ONE, {"steps_per_generation": 2}, None),
    "test_train_vlm_log_multimodal_false": (ONE, {"log_completions": True, "log_multimodal": False}, None),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(VLM_CASES))
def test_trl_vlm_cases_train_as_trl_trains_them(tiny_vlm, tmp_path, case):
    """TRL's VLM cases: images interleaved with the text (TRL's multi-image format) or one image first train
    identically from the ``images`` builder, every logged metric, step by step."""
    layout, config, lora = VLM_CASES[case]
    from datasets import Dataset, Image, List
    from PIL import Image as PILImage
    from trl import GRPOConfig, GRPOTrainer

    import grpo_trl
    from tests.trl_cases.rewards import length
    from tests.trl_cases.test_grpo_trainer_cases import _same

    rows, trl_rows = [], []
    for i in range(8):
        parts, files = [], []
        for j, kind in enumerate(layout):
            if kind == "text":
                parts.append({"type": "text", "text": f"Count the squares {i} {j}."})
                continue
            name = tmp_path / f"{i}-{j}.png"
            PILImage.new("RGB", (12 + 4 * j, 12), ((40 * i) % 256, 90 * j % 256, 7)).save(name)
            parts.append({"type": "image"})
            files.append(str(name))
        prompt = [{"role": "user", "content": parts}]
        rows.append({"image": files, "question": prompt, "answer": str(i)})
        trl_rows.append({"prompt": prompt, "images": files})
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    trainer = {"learning_rate": 0.1, "per_device_train_batch_size": 2, "num_generations": 2}
    trainer |= {"max_completion_length": 8, "max_steps": 2, "logging_steps": 1, "seed": 42, "use_cpu": True}
    trainer |= {"bf16": False, "report_to": "none", "save_strategy": "no", **config}
    data = Dataset.from_list(trl_rows).cast_column("images", List(Image()))
    peft = {}
    if lora is not None:
        from peft import LoraConfig

        peft["peft_config"] = LoraConfig(**lora)
    theirs = GRPOTrainer(
        model=tiny_vlm,
        reward_funcs=length,
        args=GRPOConfig(output_dir=str(tmp_path / "trl"), **trainer),
        train_dataset=data,
        **peft,
    )
    theirs.train()
    recipe = {
        "model": {"name": tiny_vlm, **({"lora": lora} if lora is not None else {})},
        "data": {"builder": "images", "path": str(tmp_path / "rows.jsonl")},
        "rewards": [{"name": "tests.trl_cases.rewards:length"}],
        "trainer": {**trainer, "output_dir": str(tmp_path / "ours")},
    }
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(recipe))
    ours = grpo_trl.train(grpo_trl.load_recipe(str(tmp_path / "r.yaml")))
    _same(theirs.state.log_history, ours.log_history)
