"""``check``, ``data``, ``rewards`` and ``serve --dry-run`` run no user code beyond imports: reward targets and their
``args`` are validated by signature, factories are called only when a trainer (or eval) is built; and dataset
columns that collide with TRL's keywords or a reward's bound argument are check errors."""

from __future__ import annotations

import json

import pytest
import yaml

from grpo_trl.check import load_recipe
from grpo_trl.check.rewards import build_rewards
from grpo_trl.cli import main as cli_main
from grpo_trl.rewards import unregister_reward

DATA = {"builder": "countdown", "source": "generate", "size": 16, "system_prompt": "none"}


def recipe_file(tmp_path, rewards, data=None, plugins=None):
    recipe = {
        "model": {"name": "builtin:tiny"},
        "data": data or DATA,
        "rewards": rewards,
        "trainer": {"output_dir": str(tmp_path / "out"), "max_steps": 1, "use_cpu": True, "report_to": "none"},
        **({"plugins": plugins} if plugins else {}),
    }
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe))
    return path


DRY_COMMANDS = [["check"], ["serve", "--dry-run"], ["data", "-n", "1"]]


@pytest.mark.parametrize("command", DRY_COMMANDS, ids=lambda c: c[0])
def test_popen_recipe_fails_without_running_the_command(tmp_path, capsys, command):
    marker = tmp_path / "PWNED"
    path = recipe_file(tmp_path, [{"name": "subprocess:Popen", "args": {"args": ["touch", str(marker)]}}])
    assert cli_main([command[0], str(path), *command[1:]]) == 1
    err = capsys.readouterr().err
    assert "error:" in err and "names the class Popen, which is not a registered reward" in err
    assert not marker.exists()


FACTORY_PLUGIN = """
from pathlib import Path
from grpo_trl.rewards import register_reward
from grpo_trl.check.rewards import build_rewards

@register_reward("t_side_effect")
class SideEffect:
    '''Writes a file when built: check must not build it.'''
    def __init__(self, marker: str):
        Path(marker).write_text("built")
    def __call__(self, completions, nums, **kwargs):
        return [0.0] * len(completions)

@register_reward("t_side_effect_fn", factory=True)
def side_effect_fn(marker: str):
    Path(marker + ".fn").write_text("built")
    return lambda completions, **kwargs: [0.0] * len(completions)
"""


@pytest.fixture
def side_effect_recipe(tmp_path):
    marker = tmp_path / "BUILT"
    (tmp_path / "plugin.py").write_text(FACTORY_PLUGIN)
    rewards = [{"name": "t_side_effect", "args": {"marker": str(marker)}}]
    rewards.append({"name": "t_side_effect_fn", "args": {"marker": str(marker)}})
    yield recipe_file(tmp_path, rewards, plugins=["plugin.py"]), marker
    unregister_reward("t_side_effect")
    unregister_reward("t_side_effect_fn")


@pytest.mark.parametrize("command", DRY_COMMANDS, ids=lambda c: c[0])
def test_factories_with_side_effects_are_not_called_by_dry_runs(side_effect_recipe, capsys, command):
    path, marker = side_effect_recipe
    assert cli_main([command[0], str(path), *command[1:]]) == 0, capsys.readouterr().err
    assert cli_main(["rewards", "--plugin", str(path.parent / "plugin.py")]) == 0
    assert not marker.exists() and not marker.with_suffix(".fn").exists()
    build_rewards(load_recipe(path))  # building a trainer does call them (the control)
    assert marker.exists() and marker.with_suffix(".fn").exists()


def test_check_still_reads_a_factory_class_columns_without_building_it(tmp_path, side_effect_recipe, capsys):
    path, marker = side_effect_recipe
    recipe = yaml.safe_load(path.read_text())
    recipe["rewards"][0]["name"] = "t_side_effect"
    recipe["data"] = {"builder": "gsm8k", "path": str(write_gsm8k(tmp_path)), "system_prompt": "none"}
    path.write_text(yaml.safe_dump(recipe))
    assert cli_main(["check", str(path)]) == 1
    assert "reads column(s) nums" in capsys.readouterr().err and not marker.exists()


def write_gsm8k(tmp_path):
    path = tmp_path / "gsm8k.jsonl"
    path.write_text(json.dumps({"question": "1+1?", "answer": "2 #### 2"}) + "\n")
    return path


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("time:sleep", "cannot be read"),  # a C function with no signature at all
        ("builtins:print", "cannot be called the way TRL calls rewards"),
        ("builtins:len", "cannot be called the way TRL calls rewards"),
        ("os:system", "cannot be called the way TRL calls rewards"),
        ("tests.check.test_dry_run:no_kwargs", "give it a **kwargs parameter"),
        ("tests.check.test_dry_run:positional_only", "cannot be called the way TRL calls rewards"),
        ("tests.check.test_dry_run:NotARegisteredReward", "not a registered reward"),
    ],
)
def test_targets_trl_could_not_call_are_check_errors(tmp_path, capsys, name, message):
    path = recipe_file(tmp_path, [{"name": name}])
    assert cli_main(["check", str(path)]) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("error:") == 1 and "Traceback" not in err
    assert f"{path}: rewards.0.name: reward {name!r}" in err


def no_kwargs(completions):
    return [0.0] * len(completions)


def positional_only(completions, /, **kwargs):
    return [0.0] * len(completions)


class NotARegisteredReward:
    def __init__(self, completions=None, **kwargs):
        raise AssertionError("check must not build me")


def test_factory_args_are_bound_to_its_signature(tmp_path, capsys):
    path = recipe_file(
        tmp_path, [{"name": "soft_overlong", "args": {"max_completion_len": 8, "soft_punish_cache": 9}}]
    )
    assert cli_main(["check", str(path)]) == 0, capsys.readouterr().err


# ------------------------------------------------------------------------------------------------ columns
RESERVED = ["prompts", "completions", "completion_ids", "trainer_state", "log_extra", "log_metric", "environments"]


@pytest.mark.parametrize("column", RESERVED)
def test_a_column_named_like_a_trl_keyword_is_a_check_error(tmp_path, capsys, column):
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"question": "q", "solution": "1", column: "x"}) + "\n")
    path = recipe_file(tmp_path, [{"name": "gsm8k"}], data={"builder": "files", "path": str(data)})
    assert cli_main(["check", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"error: {path}: data: column {column!r} has the name of a keyword TRL passes" in err
    assert "rename it" in err


def test_a_column_named_like_a_bound_argument_is_a_check_error(tmp_path, capsys):
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"question": "q", "solution": "1", "exact": 5}) + "\n")
    path = recipe_file(
        tmp_path, [{"name": "gsm8k", "args": {"exact": 2.0}}], data={"builder": "files", "path": str(data)}
    )
    assert cli_main(["check", str(path)]) == 1
    err = capsys.readouterr().err
    assert "rewards.0.args.exact: reward 'gsm8k' binds args.exact, and the dataset has a column 'exact'" in err
    clean = recipe_file(tmp_path, [{"name": "gsm8k"}], data={"builder": "files", "path": str(data)})
    assert cli_main(["check", str(clean)]) == 0


def every_trl_keyword_no_kwargs(prompts, completions, completion_ids, trainer_state, log_extra, log_metric, solution):
    return [0.0] * len(completions)


def every_trl_keyword_and_kwargs(prompts, completions, completion_ids, trainer_state, log_extra, log_metric, **kw):
    return [0.0] * len(completions)


@pytest.mark.parametrize(
    ("reward", "columns", "extra"),
    [
        ("every_trl_keyword_no_kwargs", None, "level, some_values"),  # TRL passes every column: a TypeError
        ("every_trl_keyword_no_kwargs", ["solution"], None),  # only the columns it takes
        ("every_trl_keyword_and_kwargs", None, None),
        ("gsm8k", None, None),
    ],
)
def test_a_reward_without_kwargs_must_take_every_column_trl_passes(tmp_path, capsys, reward, columns, extra):
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"prompt": "q", "solution": "1", "level": "L1", "some_values": 3}) + "\n")
    name = reward if reward == "gsm8k" else f"tests.check.test_dry_run:{reward}"
    spec = {"builder": "hub", "path": str(data), **({"columns": columns} if columns else {})}
    path = recipe_file(tmp_path, [{"name": name}], data=spec)
    code = cli_main(["check", str(path)])
    err = capsys.readouterr().err
    if extra is None:
        assert code == 0, err
    else:
        assert code == 1 and err.count("error:") == 1 and "Traceback" not in err
        assert f"error: {path}: rewards.0: reward {reward!r} has no **kwargs parameter" in err
        assert f"column(s) {extra} would make every call fail" in err


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        ("trl.rewards.accuracy_reward", "did you mean 'trl.rewards:accuracy_reward'?"),  # TRL's CLI form
        ("tests.check.test_dry_run.no_kwargs", "did you mean 'tests.check.test_dry_run:no_kwargs'?"),
        ("trl.rewards:get_soft_overlong_punishment", "grpo-trl's built-in 'soft_overlong' is this reward"),
        ("trl.rewards:get_cosine_scaled_reward", "grpo-trl's built-in 'cosine' is this reward"),
        ("trl.rewards:get_repetition_penalty_reward", "grpo-trl's built-in 'repetition_penalty' is this reward"),
        ("reasoning_steps_reward", "did you mean 'reasoning_steps'?"),
        ("org/tiny-Qwen2ForSequenceClassification-2.5", "a reward model? write {model: org/tiny-Qwen2For"),
        ("./my-rm", "a reward model? write {model: ./my-rm}"),
    ],
)
def test_trl_reward_spellings_get_a_hint(tmp_path, capsys, name, hint):
    path = recipe_file(tmp_path, [{"name": name}])
    assert cli_main(["check", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and hint in err, err


def reads_the_completion_column(completions, completion, **kwargs):
    return [0.0] * len(completions)


def reads_the_prompt_column(completions, prompt, **kwargs):
    return [0.0] * len(completions)


@pytest.mark.parametrize(
    ("reward", "error"),
    [
        ("reads_the_completion_column", "reads completion, which TRL never passes to rewards"),
        ("reads_the_prompt_column", "reads prompt, which TRL never passes to rewards"),
        ("every_trl_keyword_no_kwargs", None),  # takes solution only: TRL does not pass the completion column
    ],
)
def test_columns_trl_drops_are_never_a_reward_input(tmp_path, capsys, reward, error):
    """GRPOTrainer._calculate_rewards drops the dataset's prompt, completion and completion_ids columns (a
    prompt-completion dataset keeps its reference `completion`): a reward cannot read them, nor must it take them."""
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"prompt": "q", "completion": "a", "solution": "1"}) + "\n")
    path = recipe_file(
        tmp_path, [{"name": f"tests.check.test_dry_run:{reward}"}], data={"builder": "hub", "path": str(data)}
    )
    code = cli_main(["check", str(path)])
    err = capsys.readouterr().err
    if error is None:
        assert code == 0, err
    else:
        assert code == 1 and err.count("error:") == 1 and error in err and "read prompts=, completions=" in err
