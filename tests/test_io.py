"""The one writer, the one bounded reader and the one redaction (grpo_trl/io.py, grpo_trl/errors.py), each tested
on classes of inputs: every name x every thing found there, every special file, YAML bombs of many shapes, every
secret form x every place a secret could leak to."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from grpo_trl import io
from grpo_trl.cli import main as cli_main
from grpo_trl.errors import GrpoTrlError, Problem, format_error_lines, redact
from grpo_trl.recipe.load import read_recipe

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
NAMES = st.text(st.characters(categories=["L", "N"], include_characters="._- "), min_size=1, max_size=40).filter(
    lambda n: n.strip(" ") == n and n not in (".", "..") and not n.startswith(".grpo-trl")
)
THINGS = ("user file", "symlink to a user file", "folder", "fifo", "dangling symlink")


def _plant(path: Path, thing: str, elsewhere: Path) -> Path | None:
    """Put ``thing`` at ``path``; returns the user's file that must stay as it is (None when there is none)."""
    victim = elsewhere / f"victim-{time.monotonic_ns()}"
    victim.write_text("the user's own")
    if thing == "user file":
        path.write_text("the user's own")
        return path
    if thing == "symlink to a user file":
        path.symlink_to(victim)
        return victim
    if thing == "dangling symlink":
        path.symlink_to(elsewhere / "not-yet")
        return None
    if thing == "folder":
        path.mkdir()
    else:
        os.mkfifo(path)
    return victim


def _clear(folder: Path) -> None:
    for p in folder.iterdir():
        if p.name != io.STATE:
            p.unlink() if p.is_symlink() or not p.is_dir() else p.rmdir()


# ---------------------------------------------------------------------------------------------------- the writer
@SETTINGS
@given(name=NAMES, thing=st.sampled_from(THINGS))
def test_the_writer_never_writes_over_or_through_what_it_did_not_write(tmp_path, name, thing):
    folder, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    folder.mkdir(exist_ok=True), elsewhere.mkdir(exist_ok=True)
    _clear(folder)
    target = folder / name
    victim = _plant(target, thing, elsewhere)
    with pytest.raises(GrpoTrlError) as caught:
        io.write(target, "grpo-trl's", flag="--output-dir", where="grpo-trl eval")
    (line,) = format_error_lines(caught.value)
    assert line.startswith("error: grpo-trl eval: --output-dir: ") and repr(str(target))[1:-1] in line, line
    if victim is not None:
        assert victim.read_text() == "the user's own"
    assert not (elsewhere / "not-yet").exists()  # nothing created through a dangling link
    assert [p.name for p in folder.iterdir() if p.name.endswith(".tmp")] == []


@SETTINGS
@given(name=NAMES, text=st.text(max_size=200))
def test_the_writer_replaces_its_own_file_only_while_unchanged(tmp_path, name, text):
    folder = tmp_path / "out"
    folder.mkdir(exist_ok=True)
    _clear(folder)
    path = io.write(folder / name, text, ledger=True)
    assert path.read_bytes() == text.encode("utf-8", "surrogateescape")
    io.write(path, text + "again", ledger=True)  # this process wrote it
    io._WRITTEN.clear()  # a later command: only the ledger beside it vouches for it
    io.write(path, "a later command", ledger=True)
    path.write_text("edited by the user")  # this process wrote it, but not this: the user's again
    with pytest.raises(GrpoTrlError, match="not written by grpo-trl"):
        io.write(path, "overwrite?")
    assert path.read_text() == "edited by the user"


@pytest.mark.parametrize("thing", THINGS)
def test_eval_output_dir_never_overwrites_or_writes_through(make_recipe, tmp_path, capsys, thing):
    out, elsewhere = tmp_path / "results", tmp_path / "elsewhere"
    out.mkdir(), elsewhere.mkdir()
    victim = _plant(out / "eval_completions.jsonl", thing, elsewhere)
    flags = ["--split", "train", "--n", "1", "--limit", "1", "--max-new-tokens", "2", "--output-dir", str(out)]
    assert cli_main(["eval", str(make_recipe()), *flags]) == 1
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and ": --output-dir: " in err[0] and "eval_completions.jsonl" in err[0], err
    assert victim is None or victim.read_text() == "the user's own"
    assert not (out / "eval.json").exists()  # refused before generating, not after


@pytest.mark.parametrize("thing", THINGS)
@pytest.mark.parametrize("command", ["schema", "import"])
def test_schema_and_import_outputs_never_overwrite_or_write_through(tmp_path, capsys, thing, command):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = tmp_path / "out.yaml"
    victim = _plant(target, thing, elsewhere)
    config = tmp_path / "peer.yaml"
    config.write_text(
        "model_name_or_path: Qwen/Qwen2.5-0.5B\ndataset_name: trl-lib/DeepMath-103K\nreward_funcs: [accuracy_reward]\n"
    )
    argv = ["schema", "-o", str(target)] if command == "schema" else ["import", str(config), "-o", str(target)]
    force = command == "import" and thing != "user file"  # --force replaces a file, never writes through a link
    assert cli_main([*argv, *(["--force"] if force else [])]) == 1
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and err[0].startswith("error: "), err
    assert victim is None or victim.read_text() == "the user's own"


# ---------------------------------------------------------------------------------------------------- the reader
def _special(kind: str, tmp_path: Path) -> tuple[Path, object]:
    path = tmp_path / f"special-{kind.rsplit('/', 1)[-1]}.yaml"
    keep = None
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        keep = socket.socket(socket.AF_UNIX)
        keep.bind(str(path))
    elif kind == "folder":
        path.mkdir()
    elif kind == "large":
        path.write_bytes(b"a: 1\n" + b"#" * 3_000_000)
    else:
        path.symlink_to(kind)
    return path, keep


@pytest.mark.parametrize("kind", ["fifo", "socket", "folder", "/dev/zero", "/dev/urandom", "/dev/null", "large"])
@pytest.mark.parametrize("command", ["check", "import", "extends"])
def test_the_reader_refuses_special_and_huge_files_at_once(tmp_path, capsys, kind, command):
    path, keep = _special(kind, tmp_path)
    named = path
    if command == "extends":
        named = tmp_path / "child.yaml"
        named.write_text(f"extends: {path.name}\n")
    start = time.monotonic()
    assert cli_main([command if command != "extends" else "check", str(named)]) == 1
    assert time.monotonic() - start < 60  # never waits on the pipe (imports on a busy machine take ~10 s)
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and err[0].startswith("error: ") and "internal error" not in err[0], err
    if keep is not None:
        keep.close()


def _bomb(width: int, depth: int, style: str) -> str:
    items = ", ".join(["x"] * width)
    lines = [f"a0: &a0 [{items}]" if style == "list" else f"a0: &a0 {{{', '.join(f'k{i}: x' for i in range(width))}}}"]
    for level in range(1, depth):
        refs = [f"*a{level - 1}"] * width
        body = (
            f"[{', '.join(refs)}]"
            if style == "list"
            else "{" + ", ".join(f"k{i}: {r}" for i, r in enumerate(refs)) + "}"
        )
        lines.append(f"a{level}: &a{level} {body}")
    return "\n".join(lines) + "\n"


@settings(max_examples=30, deadline=None)
@given(width=st.integers(2, 12), depth=st.integers(2, 40), style=st.sampled_from(["list", "map"]))
def test_yaml_bombs_of_every_shape_are_refused_quickly(width, depth, style):
    text = _bomb(width, depth, style)
    sizes = [1 + width * (1 if style == "list" else 2)]  # values after expansion, as io.load_yaml counts them
    for _ in range(1, depth):
        sizes.append(1 + width * (sizes[-1] + (0 if style == "list" else 1)))
    start = time.monotonic()
    if 1 + sum(1 + n for n in sizes) <= io.MAX_YAML_NODES:
        io.load_yaml(text, "bomb.yaml")  # small enough: read as it is
        return
    with pytest.raises(GrpoTrlError, match="expands to more than"):
        io.load_yaml(text, "bomb.yaml")
    assert time.monotonic() - start < 2


@pytest.mark.parametrize("opener", ["[", "{a: ", "- "])  # each form for sure, fewer examples in all than drawn
@settings(max_examples=4, deadline=None)
@given(depth=st.integers(io.MAX_YAML_DEPTH + 1, 3000))
def test_deep_nesting_is_refused(depth, opener):
    text = opener * depth if opener != "- " else "".join("  " * i + "- \n" for i in range(depth))
    with pytest.raises((GrpoTrlError, yaml.YAMLError)):
        io.load_yaml(text, "deep.yaml")


@pytest.mark.parametrize("command", ["check", "import"])
def test_a_600_byte_alias_bomb_is_one_error_line(tmp_path, capsys, command):
    path = tmp_path / "bomb.yaml"
    path.write_text(_bomb(9, 9, "list"))
    assert path.stat().st_size < 600
    start = time.monotonic()
    assert cli_main([command, str(path)]) == 1
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and "expands to more than" in err[0], err
    assert time.monotonic() - start < 5


# ---------------------------------------------------------------------------------------------------- redaction
SECRET_BODY = st.text("abcdefghijkLMNOPQRSTUVWXYZ0123456789", min_size=12, max_size=30)
FORMS = {
    "hf token": lambda s: f"hf_{s}",
    "openai key": lambda s: f"sk-{s}",
    "password in a URL": lambda s: f"https://bob:{s}@judge.example/v1",
    "token in a query": lambda s: f"https://x.example/v1?access_token={s}",
    "bearer": lambda s: f"Authorization: Bearer {s}",
}


@SETTINGS
@given(body=SECRET_BODY, form=st.sampled_from(sorted(FORMS)), before=st.text(max_size=20))
def test_no_secret_form_reaches_an_error_line(body, form, before):
    assume(body not in before)
    secret = FORMS[form](body)
    exc = GrpoTrlError([Problem(f"r-{secret}.yaml", "rewards.0.args.base_url", f"{before} cannot reach {secret}")])
    assert all(body not in line for line in format_error_lines(exc))


@SETTINGS
@given(
    body=SECRET_BODY,
    key=st.sampled_from(["hub_token", "api_key", "password", "HF_TOKEN", "secret", "access_key", "auth_token"]),
    section=st.sampled_from(["trainer", "model", "data", "rewards.0.args"]),
)
def test_a_secret_key_in_a_recipe_is_refused_and_redacted_everywhere(tmp_path, body, key, section):
    data = {
        "model": {"name": "builtin:tiny"},
        "data": {},
        "trainer": {},
        "rewards": [{"name": "countdown", "args": {}}],
    }
    node = data
    for part in section.split("."):
        node = node[int(part)] if part.isdigit() else node[part]
    node[key] = f"hf_{body}"
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(GrpoTrlError) as caught:
        read_recipe(path)
    lines = format_error_lines(caught.value)
    assert any(f"{section}.{key}" in line and "HF_TOKEN" in line for line in lines), lines
    assert body not in yaml.safe_dump(redact(data)) and body not in "".join(lines)


def test_secrets_never_reach_any_file_of_the_run_or_the_console(make_recipe, capsys):
    """A real tiny run whose recipe carries a password in a URL and a token in free text (the system prompt, which
    every logged prompt holds): neither is in any file of the run folder (recipe.yaml, the card, completions.jsonl,
    training_args.bin...) or anything printed."""
    from grpo_trl.cli import train_main

    url, token = "https://bob:hunter2hunter2@judge.example/v1", "hf_abcdefghijklmnopqrstu"
    data = {"builder": "countdown", "source": "generate", "size": 16, "system_prompt": f"{url} {token} {{question}}"}
    path = make_recipe(trainer={"max_steps": 1, "save_strategy": "steps", "save_steps": 1}, data=data)
    assert train_main([str(path)]) == 0
    out = path.parent / "out"
    shown = capsys.readouterr()
    files = [f for f in out.rglob("*") if f.is_file()]
    assert out / "completions.jsonl" in files and any(f.name == "training_args.bin" for f in files)
    for text in [shown.out, shown.err] + [f.read_bytes().decode("latin-1") for f in files]:
        assert "hunter2hunter2" not in text and token not in text
    assert "https://<redacted>@judge.example/v1" in (out / "recipe.yaml").read_text()


@SETTINGS
@given(
    body=st.text("abcdefghijkLMNOPQRSTUVWXYZ0123456789", min_size=32, max_size=40).map(lambda s: s + "Z9"),
    form=st.sampled_from(sorted(FORMS)),
    field=st.sampled_from(["run_name", "hub_model_id", "vllm_server_base_url"]),
)
def test_a_secret_value_in_any_trainer_field_is_refused_by_check_and_train(make_recipe, tmp_path, body, form, field):
    """transformers pickles the whole GRPOConfig into every checkpoint's training_args.bin (and sends it to
    trackers): a secret in any of its fields, whatever the key's name, is refused by check and by train (the
    Python API's config too) before anything is written; the error line does not show it."""
    from grpo_trl.check import load_recipe
    from grpo_trl.check.validate import validate
    from grpo_trl.recipe import open_recipe
    from grpo_trl.run.session import RunSession

    secret = FORMS[form](body)
    path = make_recipe(trainer={"max_steps": 1, field: secret})
    problems = validate(load_recipe(path, validate=False))
    assert [p.key for p in problems] == [f"trainer.{field}"] and body not in str(problems[0]), problems
    clean = open_recipe(make_recipe())
    config = clean.to_grpo_config()
    setattr(config, field, secret)
    with pytest.raises(GrpoTrlError) as caught:
        RunSession(clean, config)
    assert f"trainer.{field}" in str(caught.value) and not Path(config.output_dir).exists()


@SETTINGS
@given(
    thing=st.sampled_from(["symlink to a user file", "folder", "fifo", "dangling symlink", "none"]),
    body=SECRET_BODY,
    form=st.sampled_from(sorted(FORMS)),
)
def test_the_run_logs_are_appended_redacted_never_through_a_link_nor_onto_a_fifo(tmp_path, thing, body, form):
    """completions.jsonl and alerts.jsonl (appended during training) go through ``io.append_lines``: a symlink,
    folder or FIFO at the name is one error at once (the linked file unchanged), and no secret form is written."""
    folder = Path(tmp_path) / f"run-{time.monotonic_ns()}"
    folder.mkdir()
    path = folder / "completions.jsonl"
    victim = None if thing == "none" else _plant(path, thing, folder)
    line = f'{{"prompt": "see {FORMS[form](body)}"}}'
    if thing == "none":
        io.append_lines(path, [line, line])
        assert path.read_text().count("\n") == 2 and body not in path.read_text()
        return
    with pytest.raises(GrpoTrlError, match="cannot be appended"):
        io.append_lines(path, [line])
    if victim is not None and victim.is_file():
        assert victim.read_text() == "the user's own"


def test_hub_token_given_through_the_api_is_refused_before_anything_is_written(make_recipe, tmp_path):
    from grpo_trl.recipe import open_recipe
    from grpo_trl.run.session import RunSession

    recipe = open_recipe(make_recipe())
    config = recipe.to_grpo_config()
    config.hub_token = "hf_abcdefghijklmnop"
    with pytest.raises(GrpoTrlError, match="HF_TOKEN"):
        RunSession(recipe, config)
    assert not Path(config.output_dir).exists()


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero", "folder"])
def test_a_special_file_a_recipe_names_is_one_error_line(tmp_path, capsys, kind):
    """``data.pass_rate.file`` as a FIFO nothing writes to was waited on forever by ``check``."""
    rates = tmp_path / "rates.json"
    os.mkfifo(rates) if kind == "fifo" else rates.mkdir() if kind == "folder" else rates.symlink_to(kind)
    recipe = {
        "model": {"name": "builtin:tiny"},
        "data": {"builder": "countdown", "source": "generate", "size": 16, "pass_rate": {"file": "rates.json"}},
        "rewards": [{"name": "countdown"}],
        "trainer": {"output_dir": str(tmp_path / "out"), "max_steps": 1},
    }
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(recipe))
    assert cli_main(["check", str(tmp_path / "r.yaml")]) == 1
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and "data.pass_rate.file" in err[0], err


@pytest.mark.parametrize("where", ["state", "log"])  # both places for sure, fewer examples in all than drawn
@pytest.mark.parametrize("bracket", ["[]", '{"a":}'])
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(depth=st.integers(2_000, 200_000))
def test_json_nested_too_deep_is_one_error_never_a_crash(tmp_path, capsys, depth, bracket, where):
    """JSON decodes nesting by recursion: a trainer_state.json or a log line nested thousands deep raised
    RecursionError through ``report`` (exit 70). The bounded reader refuses the state; a log line costs its line."""
    run = tmp_path / f"run-{time.monotonic_ns()}"
    run.mkdir()
    nested = bracket[:-1] * depth + "1" + bracket[-1] * depth
    state = {"log_history": [{"step": 1, "reward": 0.5, "loss": 0.0}]}
    if where == "state":
        (run / "trainer_state.json").write_text('{"log_history": ' + nested + "}")
    else:
        (run / "trainer_state.json").write_text(json.dumps(state))
        (run / "completions.jsonl").write_text('{"step": 1, "x": ' + nested + "}\n")
    code = cli_main(["report", str(run)])
    err = capsys.readouterr().err
    assert "internal error" not in err and code == (1 if where == "state" else 0), err


@SETTINGS
@given(
    prefix=st.sampled_from(["hf_", "sk-", "ghp_", "AKIA"]),
    words=st.lists(st.text("abcdefghijklmnop", min_size=2, max_size=8), min_size=2, max_size=4),
    field=st.sampled_from(["output_dir", "run_name", "hub_model_id"]),
)
def test_a_name_that_only_starts_like_a_token_is_not_refused(make_recipe, tmp_path, prefix, words, field):
    """``outputs/hf_baseline_run`` is a name, not a token: the refusal of secret values in trainer fields matches
    tokens as issued (``hf_`` + 34 letters and digits...), never a path or run name that starts the same way."""
    from grpo_trl.check import load_recipe
    from grpo_trl.check.validate import validate

    name = prefix + "_".join(words)
    value = str(tmp_path / "runs" / name) if field != "run_name" else name
    problems = validate(load_recipe(make_recipe(trainer={"max_steps": 1, field: value}), validate=False))
    assert not [p for p in problems if p.key == f"trainer.{field}"], problems


# ------------------------------------------------------------------------------------- a file flag naming a folder
FOLDER_FORMS = ("{}/", "{}//", "{}/.", "{}/..", "{}/sub/", ".", "..", "")  # Path() drops the slash: 'new/' -> 'new'
PEER = "model_name_or_path: Qwen/Qwen2.5-0.5B\ndataset_name: trl-lib/DeepMath-103K\nreward_funcs: [accuracy_reward]\n"
FILE_FLAGS = {"schema": "--output", "import": "-o", "filter": "--output"}  # each --help: a file


@pytest.mark.parametrize("command", ["schema", "import", pytest.param("filter", marks=pytest.mark.slow)])  # a model
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=NAMES, form=st.sampled_from(FOLDER_FORMS), exists=st.booleans())
def test_a_file_flag_naming_a_folder_is_one_error_line_never_a_file(make_recipe, tmp_path, capsys, command, name,
                                                                    form, exists):  # fmt: skip
    """``schema --output new/`` wrote a FILE named ``new`` and exited 0: every flag that names a file refuses a name
    that ends in a separator (or ``.``/``..``, or is empty), whether that folder exists or not, and writes nothing."""
    work = tmp_path / f"w{time.monotonic_ns()}"
    (work / name).mkdir(parents=True) if exists else work.mkdir()
    given_name = "" if not form else f"{work}/{form.format(name)}"
    config = tmp_path / "peer.yaml"
    config.write_text(PEER)
    argv = {
        "schema": ["schema", "--output", given_name],
        "import": ["import", str(config), "-o", given_name, "--force"],
        "filter": ["filter", str(make_recipe()), "--n", "1", "--limit", "1", "--max-new-tokens", "2"],
    }[command]
    argv += ["--output", given_name] if command == "filter" else []
    assert cli_main(argv) == 1
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and err[0].startswith("error: ") and f": {FILE_FLAGS[command]}: " in err[0], err
    assert [p for p in work.rglob("*") if not p.is_dir()] == []


HOSTILE_PATHS = {  # each: one error line naming the flag, exit 1; never a traceback, never exit 70
    "a pipe as a folder": lambda tmp: tmp / "fifo" / "x",
    "a dangling link as a folder": lambda tmp: tmp / "dangling" / "x",
    "a file as a folder": lambda tmp: tmp / "file.txt" / "x",
    "a name too long": lambda tmp: tmp / ("n" * 300),
    "a NUL byte": lambda tmp: tmp / "a\x00b",  # no shell passes one; the API and --set values can
}
WRITERS = {
    "schema": lambda p, r: ["schema", "-o", p],
    "import": lambda p, r: ["import", str(r.parent / "peer.yaml"), "-o", p],
    "filter": lambda p, r: ["filter", str(r), "--output", p, "--limit", "1", "--n", "1", "--max-new-tokens", "2"],
    "eval": lambda p, r: ["eval", str(r), "--split", "train", "--output-dir", p, "--limit", "1", "--n", "1"],
}
SLOW = pytest.mark.slow  # a model loaded


@pytest.mark.parametrize("form", sorted(HOSTILE_PATHS))
@pytest.mark.parametrize(
    "command", ["schema", "import", pytest.param("filter", marks=SLOW), pytest.param("eval", marks=SLOW)]
)
def test_a_hostile_output_path_is_one_error_line_naming_the_flag(make_recipe, tmp_path, capsys, command, form):
    """A folder on the way that is a pipe, a dangling link or a file said 'File exists' (mkdir's words for it)."""
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    (tmp_path / "file.txt").write_text("the user's own")
    (tmp_path / "peer.yaml").write_text(PEER)
    path = str(HOSTILE_PATHS[form](tmp_path))
    assert cli_main(WRITERS[command](path, make_recipe())) == 1
    err = [line for line in capsys.readouterr().err.splitlines() if not line.startswith(("note: ", "warning: "))]
    assert len(err) == 1 and err[0].startswith("error: ") and "File exists" not in err[0], err
    assert {"import": ": -o: ", "eval": ": --output-dir: "}.get(command, ": --output: ") in err[0], err
    assert (tmp_path / "file.txt").read_text() == "the user's own" and not (tmp_path / "nowhere").exists()


def test_the_reader_refuses_a_name_holding_a_nul_as_one_error_line(tmp_path, capsys):
    """``os.open`` raises ValueError for a NUL, which a command reading a user's path took for a bug (exit 70)."""
    with pytest.raises(GrpoTrlError, match="NUL byte"):
        io.read_text(tmp_path / "a\x00b.yaml", 100)
    assert cli_main(["import", str(tmp_path / "a\x00b.yaml")]) == 1
    assert capsys.readouterr().err.startswith("error: ")


def _bytes_read() -> int:  # this process's read() total: machine-independent, unlike a time bound
    return int(Path("/proc/self/io").read_text().split("rchar:")[1].split()[0])


@pytest.mark.parametrize("hole", [2**28, 2**40])  # 256 MiB, 1 TiB of NULs after a row (sparse: no disk used)
def test_a_log_with_a_hole_is_read_to_the_hole_not_to_its_end(tmp_path, hole):
    log = tmp_path / "completions.jsonl"
    with open(log, "wb") as fh:
        fh.write(b'{"step": 1}\n')
        fh.truncate(hole)
    before = _bytes_read()
    assert io.read_jsonl(log) == [{"step": 1}]
    assert _bytes_read() - before < 6 * io.MAX_LINE


@given(rows=st.lists(st.integers(0, 10**6), min_size=1, max_size=40), limit=st.integers(1, 400))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_log_is_read_up_to_its_byte_limit_and_no_further(tmp_path, rows, limit):
    text = "".join(json.dumps({"step": r}) + "\n" for r in rows)
    log = tmp_path / "alerts.jsonl"
    log.write_text(text)
    got = io.read_jsonl(log, limit=limit)
    ends = [sum(len(json.dumps({"step": r})) + 1 for r in rows[: i + 1]) for i in range(len(rows))]
    assert got == [{"step": r} for r, end in zip(rows, ends) if end <= limit]


def test_over_long_line_costs_that_line_only(tmp_path):
    from grpo_trl.io import read_jsonl

    path = tmp_path / "log.jsonl"
    path.write_text('{"step": 1}\n{"step": 2, "c": "' + "x" * 200 + '"}\n{"step": 3}\n')
    assert [r["step"] for r in read_jsonl(path, max_line=100)] == [1, 3]
