"""Issue 22 part 4: the run's model card (README.md, Hugging Face format), what a push would upload, `grpo-trl export`
(a LoRA run merged for serving) and `grpo-trl eval --model ADAPTER_DIR`. One real tiny LoRA run (builtin:tiny,
checkpoints saved, so TRL and peft write their own README.md during the run) is shared by the tests that need one.
Nothing here contacts the Hub: the push is tested by what it would upload (``pushed_names``)."""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
from pathlib import Path

import pytest
import torch
import yaml
from huggingface_hub import ModelCard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_trl.check import load_recipe
from grpo_trl.check.plan import format_plan, make_plan
from grpo_trl.cli import main
from grpo_trl.recipe import Recipe
from grpo_trl.report.card import TAGS, card_text, pushed_names, write_card
from grpo_trl.run.directory import Manifest
from grpo_trl.run.export import adapter_base, load_adapter_model
from tests.conftest import tiny_recipe

LORA = {"r": 4, "lora_alpha": 8, "target_modules": ["q_proj", "v_proj"]}


@pytest.fixture(scope="module")
def lora_run(tmp_path_factory):
    from grpo_trl.train import train

    tmp = tmp_path_factory.mktemp("lora")
    model = {"name": "builtin:tiny", "dtype": "float32", "lora": LORA}
    trainer = {"max_steps": 2, "save_strategy": "steps", "save_steps": 1, "learning_rate": 5e-2}
    path = tiny_recipe(tmp, "unused", trainer=trainer, extra={"model": model})
    result = train(path)
    return path, Path(result.output_dir), result


def _block(text: str, lang: str) -> str:
    match = re.search(rf"^(`{{3,}}){lang}\n(.*?)\n\1$", text, re.S | re.M)
    assert match, f"no {lang} block"
    return match.group(2)


@pytest.mark.slow
def test_the_run_ends_with_one_card_ours_with_recipe_plan_and_metrics(lora_run):
    path, out, result = lora_run
    card = ModelCard.load(out / "README.md")
    assert card.data.library_name == "peft" and set(TAGS) <= set(card.data.tags)
    assert "generated_from_trainer" not in card.data.tags  # TRL's checkpoint card was replaced, not kept beside ours
    assert card.data.base_model is None  # builtin:tiny is no Hub id
    recipe = load_recipe(path)
    assert yaml.safe_load(_block(card.text, "yaml")) == recipe.data
    plan = format_plan(recipe, make_plan(recipe, world_size=1), world_size_given=True)
    assert [line.rstrip() for line in _block(card.text, "text").splitlines()] == [line.rstrip() for line in plan]
    last = [h for h in result.log_history if "reward" in h and "loss" in h][-1]
    assert f"| reward | {last['reward']:.6g} |" in card.text
    assert '| xml_format | 1.0 | {"tags": ["think", "answer"], "per_tag": 0.25} |' in card.text
    entry = Manifest.load(out).entries["README.md"]
    assert entry["sha256"] == hashlib.sha256((out / "README.md").read_bytes()).hexdigest()


@pytest.mark.slow
def test_a_push_would_upload_the_final_save_and_the_card_only(lora_run):
    _, out, _ = lora_run
    (out / "notes.txt").write_text("mine")  # a file of the user's: never uploaded
    try:
        names = pushed_names(out, Manifest.load(out))
    finally:
        (out / "notes.txt").unlink()
    assert {"README.md", "adapter_config.json", "adapter_model.safetensors", "tokenizer_config.json"} <= set(names)
    kept = {"notes.txt", "recipe.yaml", "completions.jsonl", "tiny-model", "checkpoint-1", "checkpoint-2", ".grpo-trl"}
    assert not kept & set(names)


@pytest.mark.slow
def test_push_to_hub_sends_the_final_save_and_our_card_through_huggingface_hub(tmp_path):
    """A real run with trainer.push_to_hub, HF_ENDPOINT pointed at a fake Hub on 127.0.0.1 (tests/fake_hub.py, a
    stand-in for huggingface.co): transformers creates the repo, grpo-trl uploads the final save and its card."""
    import os
    import subprocess
    import sys

    from tests.fake_hub import FakeHub

    push = {"push_to_hub": True, "hub_model_id": "me/tiny-grpo", "hub_strategy": "end", "max_steps": 1}
    model = {"name": "builtin:tiny", "dtype": "float32", "lora": LORA}
    path = tiny_recipe(tmp_path, "unused", trainer=push, extra={"model": model})
    with FakeHub() as hub:
        env = {**os.environ, "HF_ENDPOINT": hub.endpoint, "HF_HUB_OFFLINE": "0", "HF_TOKEN": "hf_fake", "CI": "1"}
        run = subprocess.run(
            [sys.executable, "-m", "grpo_trl.train", str(path)], env=env, capture_output=True, text=True, timeout=300
        )
    assert run.returncode == 0, run.stderr[-2000:]
    out = tmp_path / "out"
    assert hub.repos == ["me/tiny-grpo"]
    assert sorted(hub.files) == pushed_names(out, Manifest.load(out))
    assert hub.files["README.md"] == (out / "README.md").read_bytes()
    assert "grpo-trl" in ModelCard(hub.files["README.md"].decode()).data.tags
    assert not {"recipe.yaml", "completions.jsonl"} & set(hub.files) and not any("/" in f for f in hub.files)


@pytest.mark.slow
def test_export_merges_the_adapter_and_keeps_the_chat_template(lora_run, tmp_path, capsys):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    _, out, _ = lora_run
    base, _ = adapter_base(out)
    assert Path(base) == out / "tiny-model"  # builtin:tiny: the copy the run trained on
    target = tmp_path / "merged"
    assert main(["export", str(out), "--to", str(target)]) == 0
    assert f"merged model written to {target}" in capsys.readouterr().out
    ids = torch.tensor([[1, 2, 3, 4, 5]])
    with torch.no_grad():
        merged = AutoModelForCausalLM.from_pretrained(target).eval()(ids).logits
        adapted = load_adapter_model(out)(ids).logits
        plain = AutoModelForCausalLM.from_pretrained(base).eval()(ids).logits
    assert torch.allclose(merged, adapted, atol=1e-5)
    assert not torch.allclose(merged, plain, atol=1e-5)  # the adapter changed the model: it is in the merge
    assert AutoTokenizer.from_pretrained(target).chat_template == AutoTokenizer.from_pretrained(out).chat_template
    assert not (target / "adapter_config.json").exists()
    from grpo_trl.run.export import export_merged

    beside = export_merged(out / "checkpoint-2")  # a checkpoint: merged beside the run, never inside it
    assert beside == out.with_name(f"{out.name}-checkpoint-2-merged") and (beside / "config.json").is_file()


@pytest.mark.slow
def test_eval_takes_the_adapter_folder_and_report_puts_its_results_in_the_card(lora_run, capsys):
    path, out, _ = lora_run
    args = ["eval", str(path), "--model", str(out), "--split", "train", "--limit", "2", "--n", "2"]
    assert main([*args, "--max-new-tokens", "4", "--temperature", "0"]) == 0
    assert (out / "eval.json").is_file()
    capsys.readouterr()
    assert main([*args, "--backend", "vllm"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a LoRA adapter" in err and "grpo-trl export" in err
    assert main(["report", str(out)]) == 0
    assert f"model card updated: {out / 'README.md'}" in capsys.readouterr().out
    text = (out / "README.md").read_text()
    assert "## Evaluation" in text and "| pass@1 |" in text and "(report/report.html)" in text


@pytest.mark.slow
@pytest.mark.parametrize(
    "kind",
    ["missing", "not a LoRA run", "non-empty", "inside", "inside, from a checkpoint", "under a file"]
    + ["no weights", "damaged weights", "no tokenizer"],  # a half-written or hand-copied adapter: exit 1, not 70
)
def test_export_refuses_with_one_error_line_and_writes_nothing(lora_run, tiny_model, tmp_path, capsys, kind):
    _, out, _ = lora_run
    if kind == "missing":
        args, words = [str(tmp_path / "nope")], "is not a folder"
    elif kind == "not a LoRA run":
        args, words = [tiny_model, "--to", str(tmp_path / "m")], "is not a LoRA run"
    elif kind == "non-empty":
        (tmp_path / "full").mkdir()
        (tmp_path / "full" / "mine.txt").write_text("mine")
        args, words = [str(out), "--to", str(tmp_path / "full")], "is not empty"
    elif kind == "inside":
        args, words = [str(out), "--to", str(out / "merged")], "inside the run's output_dir"
    elif kind == "inside, from a checkpoint":
        args, words = [str(out / "checkpoint-1"), "--to", str(out / "m")], "inside the run's output_dir"
    elif kind in ("no weights", "damaged weights", "no tokenizer"):
        copy = tmp_path / "adapter"
        shutil.copytree(out / "checkpoint-1", copy)
        weights = copy / "adapter_model.safetensors"
        if kind == "no weights":
            weights.unlink()
        elif kind == "damaged weights":
            weights.write_bytes(weights.read_bytes()[:100])
        else:
            for name in ("tokenizer.json", "tokenizer_config.json"):
                (copy / name).unlink()
        why = {"no weights": "no adapter weights", "damaged weights": "cannot load the adapter"}
        args, words = [str(copy), "--to", str(tmp_path / "m")], why.get(kind, "has no usable tokenizer")
    else:
        (tmp_path / "afile").write_text("x")  # read-only as far as a folder goes, even for root
        args, words = [str(out), "--to", str(tmp_path / "afile" / "merged")], "afile' is not a folder"
    before = sorted(p.name for p in tmp_path.rglob("*")), sorted(p.name for p in out.iterdir())
    assert main(["export", *args]) == 1
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]  # (transformers' progress bars aside)
    assert len(errors) == 1 and errors[0].startswith("error: grpo-trl export: ") and words in err, err
    assert "Traceback" not in err
    assert (sorted(p.name for p in tmp_path.rglob("*")), sorted(p.name for p in out.iterdir())) == before


# ------------------------------------------------------------------------------------------ no training from here
ODD = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["yes", "no", "null", "~", ": x", "# c", "---", "```", "|", "a\nb", "'\"", "{x}", "é中🙂"]),
    st.tuples(st.text(min_size=1, max_size=4), st.integers(800, 3000)).map(lambda t: t[0] * t[1]),  # huge
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
)
ARGS = st.dictionaries(st.text(min_size=1, max_size=12), ODD | st.lists(ODD, max_size=3), max_size=4)


def _recipe(tmp_path: Path, args: dict, alias: str, secret: str) -> Recipe:
    data = {
        "model": {"name": "builtin:tiny", "dtype": "float32"},
        "data": {"builder": "countdown", "source": "generate", "size": 32},
        "rewards": [{"name": "xml_format", "args": args, "alias": alias}, {"name": "countdown", "weight": 0.5}],
        "trainer": {"output_dir": str(tmp_path / "out"), "max_steps": 1, "hub_token": secret},
    }
    return Recipe(data=data, path=tmp_path / "recipe.yaml")


@pytest.mark.slow
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(args=ARGS, alias=ODD.filter(lambda a: isinstance(a, str) and a.strip()), secret=st.text(min_size=8))
def test_any_recipe_gives_a_card_that_parses_and_holds_the_recipe(tmp_path, args, alias, secret):
    recipe = _recipe(tmp_path, args, alias, "hf_" + secret)
    text = card_text(recipe, tmp_path)
    card = ModelCard(text)  # the front matter is valid YAML with the metadata the Hub reads
    assert set(TAGS) <= set(card.data.tags) and card.data.library_name == "transformers"
    embedded = yaml.safe_load(_block(text, "yaml"))
    assert embedded["trainer"].pop("hub_token") == "<redacted>" and "hf_" + secret not in text
    expected = dict(recipe.data)
    expected["trainer"] = {k: v for k, v in recipe.data["trainer"].items() if k != "hub_token"}
    assert embedded == expected
    rows = [line for line in text.split("## Rewards")[1].split("## Data")[0].splitlines() if line.startswith("| ")]
    assert len(rows) == 1 + len(recipe.rewards)  # the header, then one row per reward, each on one line
    assert all(len(row) < 800 for row in rows)  # huge args are cut, not pasted


README_STATES = ["absent", "user's", "ours, edited", "trainer's", "a folder", "ours"]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(state=st.sampled_from(README_STATES), content=st.text(max_size=200))
def test_a_readme_grpo_trl_did_not_write_or_that_was_edited_is_never_replaced(tmp_path, state, content):
    folder = tmp_path / f"run-{abs(hash((state, content)))}"
    folder.mkdir()
    readme, m = folder / "README.md", Manifest.load(folder)
    recipe = _recipe(folder, {}, "fmt", "x" * 8)
    if state == "a folder":
        readme.mkdir()
    elif state != "absent":
        readme.write_text(content)
    if state in ("ours, edited", "trainer's", "ours"):
        m.record("README.md")
        if state != "trainer's":
            m.entries["README.md"]["sha256"] = hashlib.sha256(content.encode()).hexdigest()
        if state == "ours, edited":
            readme.write_text(content + " edited by hand")
    m.save()
    before = readme.read_text() if readme.is_file() else None
    written = write_card(recipe, folder)
    replaced = state in ("absent", "trainer's", "ours")
    assert (written is not None) == replaced
    if replaced:
        assert "grpo-trl" in ModelCard.load(readme).data.tags
        assert Manifest.load(folder).entries["README.md"]["sha256"] == hashlib.sha256(readme.read_bytes()).hexdigest()
    else:
        assert (readme.read_text() if readme.is_file() else None) == before and readme.exists()


def test_check_warns_about_checkpoint_pushes_but_allows_them_as_trl_does(make_recipe, caplog):
    trainer = {"push_to_hub": True, "save_strategy": "steps", "save_steps": 2}
    with caplog.at_level(logging.WARNING, logger="grpo_trl.recipe"):
        assert main(["check", str(make_recipe(trainer=trainer))]) == 0  # GRPOTrainer accepts it: so does grpo-trl
    assert "trainer.hub_strategy: 'every_save' makes transformers upload the whole output_dir" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="grpo_trl.recipe"):
        assert main(["check", str(make_recipe(trainer={**trainer, "hub_strategy": "end"}))]) == 0
    assert "hub_strategy" not in caplog.text


def test_front_matter_names_the_hub_base_model_and_datasets_only(tmp_path):
    from grpo_trl.report.card import base_model, datasets

    def recipe(model: str, data: dict) -> Recipe:
        return Recipe(
            data={"model": {"name": model}, "data": data, "rewards": ["xml_format"]}, path=tmp_path / "r.yaml"
        )

    hub = recipe("Qwen/Qwen2.5-0.5B-Instruct", {"builder": "gsm8k"})  # gsm8k's default source: openai/gsm8k
    assert (base_model(hub), datasets(hub)) == ("Qwen/Qwen2.5-0.5B-Instruct", ["openai/gsm8k"])
    (tmp_path / "models" / "mine").mkdir(parents=True)
    local = recipe("models/mine", {"builder": "countdown", "source": "generate"})
    assert (base_model(local), datasets(local)) == (None, [])
    card = ModelCard(card_text(hub, tmp_path))
    assert card.data.base_model == "Qwen/Qwen2.5-0.5B-Instruct" and card.data.datasets == ["openai/gsm8k"]


@pytest.mark.parametrize("section", ["model", "data"])
@pytest.mark.parametrize("value", [None, 3, "x", [1], {}])
def test_a_hand_edited_recipe_yaml_still_gives_a_card_not_a_crash(tmp_path, section, value):
    """``grpo-trl report`` writes the card again from the run's recipe.yaml, which a user may have edited."""
    recipe = _recipe(tmp_path, {}, "r", "s" * 8)
    recipe.data[section] = value
    text = card_text(recipe, tmp_path)
    assert "## Plan" in text and "not available" in text


@pytest.mark.parametrize(
    "history",
    [
        [7, "x", None, {"step": 1, "loss": 0.1, "reward": 0.5}, {"step": 2, "loss": 0.1, "reward": 0.7}],
        [{"step": 1, "loss": 0.1, "reward": 10**400}, {"step": 2, "loss": 0.1, "reward": 0.7}],
        [{"step": 10**400, "loss": 0.1, "reward": 0.5}, {"step": 2, "loss": -(10**400), "reward": 0.7}],
    ],
)
def test_a_trainer_state_with_odd_entries_still_gives_a_card_and_a_report(tmp_path, capsys, history):
    """Entries that are not objects, and integers beyond a float (JSON allows them): left out, not exit 70."""
    import json

    (tmp_path / "trainer_state.json").write_text(json.dumps({"global_step": 2, "log_history": history}))
    text = card_text(_recipe(tmp_path, {}, "r", "s" * 8), tmp_path)
    assert "Training reward mean, first vs last logged step: " in text, text
    assert main(["report", str(tmp_path)]) == 0, capsys.readouterr().err


@settings(max_examples=20, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.sampled_from(["<script>x", "a|b", "x`y", "<img src=x onerror=alert(1)>"])
    | st.text(
        st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="/\\"), min_size=1, max_size=30
    ).filter(lambda n: n.strip(" .") != "")
)
def test_the_cards_heading_is_the_run_folder_name_escaped(tmp_path_factory, name):
    folder = tmp_path_factory.mktemp("run") / name
    folder.mkdir()
    heading = next(
        line for line in card_text(_recipe(folder, {}, "r", "s" * 8), folder).splitlines() if line[:2] == "# "
    )
    assert "<" not in heading and "`" not in heading and "|" not in heading.replace("\\|", "")
