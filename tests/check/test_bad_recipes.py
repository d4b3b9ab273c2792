"""A table of broken recipes: each fails `grpo-trl check` with exit 1 and exactly one line that names the key and
the fix, before any model is loaded (the model named here does not exist, and no download is attempted)."""

from __future__ import annotations

import copy

import pytest
import yaml

from grpo_trl.cli import main as cli_main

pytestmark = pytest.mark.fault  # a fault probe: `make faults` runs it with more examples

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


# ------------------------------------------------------------------------------------------ hostile and odd inputs
# Each used to end in a Python traceback (issue 12) or in an unbounded YAML expansion (issue 11 part 4). Now: exit 1
# and `error:` lines only, each naming the file (or the command line) and the key.
BOMB = "".join(
    f"{c}: &{c} [{', '.join([f'*{p}'] * 9) if p else ', '.join(['lol'] * 9)}]\n"
    for p, c in zip(["", *"abcdefgh"], "abcdefghi")
)
HOSTILE_FILES = [
    ("alias bomb", BOMB.encode(), "", "expands to more than"),
    ("not utf-8", b"model: {name: \xff\xfe}\n", "", "not UTF-8"),
    ("extends a number", b"extends: 5\n", "extends", "must be the path of another recipe"),
    ("deep nesting", ("a: " + "[" * 5000 + "]" * 5000 + "\n").encode(), "", "nested more than"),
    ("duplicate section", b"model: {name: a}\nmodel: {name: b}\n", "model", "duplicate key in one mapping"),
    ("duplicate key", b"model: {name: a, name: b}\n", "name", "duplicate key in one mapping"),
    ("over 1 MB", b"# " + b"x" * 1_000_001 + b"\n", "", "too large for a recipe"),
    ("a list, not a mapping", b"- model\n", "", "must be a YAML mapping"),
    ("tabs and broken YAML", b"model:\n\t- name: [\n", "", "not valid YAML"),
]


@pytest.mark.parametrize(("name", "content", "key", "words"), HOSTILE_FILES, ids=[c[0] for c in HOSTILE_FILES])
def test_hostile_recipe_files_give_one_error_line(tmp_path, capsys, name, content, key, words):
    path = tmp_path / "hostile.yaml"
    path.write_bytes(content)
    assert cli_main(["check", str(path)]) == 1
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 1, lines
    prefix = f"error: {path}: {key}: " if key else f"error: {path}: "
    assert lines[0].startswith(prefix) and words in lines[0], lines[0]
    assert len(err) < 400  # the expansion (or the file) is never printed


HOSTILE_SETS = [
    # (--set arguments, key named, words)
    (["trainer=1"], "trainer", "must be a mapping of trl.GRPOConfig fields"),
    (["rewards.0=5"], "rewards.0", "expected mapping"),
    (["rewards.0={name: 5}"], "rewards.0.name", "expected str"),
    (["rewards.0={name: null}"], "rewards.0.name", "expected str"),
    (['rewards.0={name: ":"}'], "rewards.0.name", "neither a registered name nor module.path:function"),
    (["rewards.0={name: 'os:getcwd', args: {x: 1}}"], "rewards.0.args", "no argument 'x'"),
    (["rewards.0={name: code_tests, args: {max_workers: 0}}"], "rewards.0.args.max_workers", "positive integer"),
    (["launch.num_processes=eight"], "launch.num_processes", "expected int"),
    (["launch.num_processes=0"], "launch.num_processes", "must be >= 1"),
    (["trainer.num_generations=0"], "trainer.num_generations", "GRPO compares at least 2"),
    (["trainer.temperature=0"], "trainer.temperature", "must be a positive number, got 0"),
    (["generation.gpu_memory_utilization=0"], "generation.gpu_memory_utilization", "must be a positive number"),
    (["trainer.num_train_epochs=-1"], "trainer.num_train_epochs", "must be a positive number"),
    (["trainer.top_p=1.5"], "trainer.top_p", "must be <= 1"),
    (["trainer.top_k=-1"], "trainer.top_k", "-1 disables top-k only in vLLM"),
    (["plugins=[/etc/passwd]"], "plugins.0", "is not a Python file"),
    (["data.size=0"], "data.size", "must be a positive integer, got 0"),
    (["data.size=-3"], "data.size", "must be a positive integer, got -3"),
    (["data={mixture: [{builder: countdown, source: generate, size: 0}]}"], "data.mixture.0.size", "positive integer"),
    (["plugins=[/dev/null]"], "plugins.0", "is not a Python file"),
    (["trainer.top_k=-2"], "trainer.top_k", "must be >= -1"),
    (["trainer.top_p=0"], "trainer.top_p", "must be a positive number"),
    (["trainer.min_p=-0.1"], "trainer.min_p", "must be >= 0"),
    (["trainer.repetition_penalty=0"], "trainer.repetition_penalty", "must be a positive number"),
    (["trainer.beta=-0.04"], "trainer.beta", "must be >= 0"),
    (["trainer.epsilon=-0.2"], "trainer.epsilon", "must be >= 0"),
    (["trainer.epsilon_high=-1"], "trainer.epsilon_high", "must be >= 0"),
    (["trainer.vllm_gpu_memory_utilization=1.5"], "trainer.vllm_gpu_memory_utilization", "must be <= 1"),
    (["data.eval_size=16"], "data.eval_size", "holds out 16 rows of a dataset of at most 16"),
    (["data.limit=5", "data.eval_size=9"], "data.eval_size", "at most 5"),
    (["data.max_prompt_tokens=300", "data.eval_size=40"], "data.eval_size", "at most 16"),  # filters only drop
    (
        ["data={mixture: [{builder: countdown, source: generate, size: 16}], size: 6, eval_size: 6}"],
        "data.eval_size",
        "at most 6",
    ),
    (["trainer.learning_rate=.nan"], "trainer.learning_rate", "finite number"),
    (["trainer.max_completion_length=0"], "trainer.max_completion_length", "must be >= 1"),
    (["trainer.per_device_train_batch_size=0"], "trainer.per_device_train_batch_size", "must be >= 1"),
    (["trainer.num_iterations=0"], "trainer.num_iterations", "must be >= 1"),
    (["data.size='8'"], "data.size", "expected int, got str '8'"),
    (["model.tiny={hiden_size: 8}"], "model.tiny.hiden_size", "did you mean 'hidden_size'"),
    (["trainer.num_generations.x=1"], "trainer.num_generations.x", "not a section"),
    (["rewards.9.weight=1"], "rewards.9.weight", "no list item 9"),
    (["trainer.learning_rate"], "trainer.learning_rate", "expected KEY=VALUE"),
    (["trainer.report_to=[unclosed"], "trainer.report_to", "not valid YAML"),
]


def _check_good_with(tmp_path, capsys, sets: list[str]) -> list[str]:
    """``grpo-trl check`` on the GOOD recipe with ``--set`` overrides: must exit 1; its stderr lines."""
    path = tmp_path / "good.yaml"
    path.write_text(yaml.safe_dump(GOOD))
    argv = ["check", str(path)]
    for s in sets:
        argv += ["--set", s]
    assert cli_main(argv) == 1
    lines = capsys.readouterr().err.splitlines()
    for line in lines:  # the key is said once: never "data: data.eval_size: ..."
        parts = line.split(": ")
        assert not any(b.startswith((a + ".", a + ":")) for a, b in zip(parts[1:], parts[2:])), line
    return lines


@pytest.mark.parametrize(("sets", "named", "words"), HOSTILE_SETS, ids=[" ".join(c[0]) for c in HOSTILE_SETS])
def test_hostile_overrides_give_error_lines(tmp_path, capsys, sets, named, words):
    lines = _check_good_with(tmp_path, capsys, sets)
    assert lines and all(line.startswith("error: ") for line in lines), lines
    assert any(f": {named}: " in line and words in line for line in lines), lines


def test_set_text_with_colon_stays_text(tmp_path):
    """`--set data.user_template='Q: {question}'` is a template, not the YAML mapping {Q: {question: null}}."""
    from grpo_trl.check import load_recipe

    (tmp_path / "p.jsonl").write_text('{"question": "1+1?", "solution": "2"}\n' * 8)  # rows for a step
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump({**GOOD, "data": {"builder": "files", "path": "p.jsonl"}}))
    recipe = load_recipe(path, ["data.user_template=Q: {question}", "rewards=[think_format]"])
    assert recipe.dataset["user_template"] == "Q: {question}"


def test_cli_usage_errors_are_error_lines(tmp_path, capsys):
    path = tmp_path / "good.yaml"
    path.write_text(yaml.safe_dump(GOOD))
    for argv in (["eval", str(path), "--n", "0"], ["check", str(path), "--world-size", "x"], ["nope"]):
        assert cli_main(argv) == 1, argv
        lines = capsys.readouterr().err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), lines


def test_unexpected_exception_is_one_line_and_traceback_only_with_debug(tmp_path, capsys, monkeypatch):
    import grpo_trl.check.validate as validate

    path = tmp_path / "good.yaml"
    path.write_text(yaml.safe_dump(GOOD))

    def boom(*args, **kwargs):
        raise KeyError("a bug")

    monkeypatch.setattr(validate, "model_problems", boom)
    assert cli_main(["check", str(path)]) == 70
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.splitlines()) == 1 and "bug in grpo-trl" in err
    assert cli_main(["--debug", "check", str(path)]) == 70
    assert "Traceback" in capsys.readouterr().err


READY = [
    # what passes every type check but would crash (or train nothing) mid-run; check catches it before any model
    (["trainer.report_to=wandbb"], "trainer.report_to", "not a reporting integration"),
    (["trainer.use_liger_kernel=true"], "trainer.use_liger_kernel", "liger-kernel is not installed"),
    (["trainer.eval_strategy=steps", "trainer.eval_steps=5"], "trainer.eval_strategy", "no eval split"),
    (["data.size=1", "trainer.max_steps=-1"], "data", "0 optimizer steps"),
    (["model.chat_template=bad.jinja", "model.name=builtin:tiny"], "model.chat_template", "does not render"),
    (
        ["data={builder: files, path: problems.jsonl, user_template: 'Q: {}'}", "rewards=[think_format]"],
        "data.user_template",
        "positional field",
    ),
    (["data.pass_rate={file: no-rates.json}", "model.name=builtin:tiny"], "data.pass_rate.file", "does not exist"),
]


@pytest.mark.parametrize(("sets", "named", "words"), READY, ids=[c[1] + ":" + c[2] for c in READY])
def test_check_catches_what_training_would_crash_on(tmp_path, capsys, sets, named, words):
    (tmp_path / "bad.jinja").write_text("{% for m in messages %}{{ m.content | no_such_filter }}{% endfor %}")
    (tmp_path / "problems.jsonl").write_text('{"question": "1+1?", "solution": "2"}\n')
    lines = _check_good_with(tmp_path, capsys, sets)
    assert len(lines) == 1 and f": {named}: " in lines[0] and words in lines[0], lines


def test_mixed_type_json_column_keeps_its_text(tmp_path):
    from grpo_trl.data.registry import load_file

    (tmp_path / "m.jsonl").write_text('{"q": "a", "solution": "007"}\n{"q": "b", "solution": 7}\n')
    assert load_file(tmp_path / "m.jsonl")["solution"] == ["007", "7"]


class _BadSignature:
    """A callable whose signature cannot be read: its ``__signature__`` raises something other than TypeError."""

    @property
    def __signature__(self):
        raise RuntimeError("no signature for you")

    def __call__(self, completions, **kwargs):
        return [1.0] * len(completions)


bad_signature = _BadSignature()


@pytest.mark.parametrize(
    ("plugin", "reward", "fix"),
    [
        ("import sys\nsys.exit(3)\n", None, "failed to import: exit(3) called while importing"),
        ("raise BaseException('boom')\n", None, "failed to import: BaseException: boom"),
        ("raise SystemExit\n", None, "failed to import: exit(None)"),
        ("", "tests.check.test_bad_recipes:bad_signature", "cannot be read"),
    ],
)
@pytest.mark.parametrize("command", [["check"], ["data", "-n", "1"]])
def test_plugins_and_rewards_that_exit_or_hide_their_signature_are_one_line(
    tmp_path, capsys, plugin, reward, fix, command
):
    (tmp_path / "exits.py").write_text(plugin)
    recipe = copy.deepcopy(GOOD)
    recipe["plugins"] = ["exits.py"]
    if reward:
        recipe["rewards"] = [{"name": reward}]
    path = tmp_path / "exits.yaml"
    path.write_text(yaml.safe_dump(recipe))
    assert cli_main([*command, str(path)]) == 1
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}: ") and fix in lines[0], lines
