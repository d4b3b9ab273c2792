"""The one error line (``grpo_trl.errors``): a user-given name is shown visibly whatever it holds; the one
secret-key rule and the one redaction: every spelling of a secret's name, every password a URL can hold, every
secret value the process knows."""

from __future__ import annotations

import json

import pytest
import yaml
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from grpo_trl import errors
from grpo_trl.cli import main as cli_main
from grpo_trl.errors import HIDDEN, is_secret_key, keep_secret, redact

WORDS = ["token", "key", "apikey", "secret", "password", "passwd", "authorization", "cookie", "credentials"]
PLAIN = ["max_new_tokens", "tokenizer", "keys", "monkey", "key_column", "keyword", "seed", "tokens", "author"]
PLAIN += ["prompt_key", "image_key", "reward_fn_key", "answer_key", "choices_key", "model_key", "use_auth"]  # data
PLAIN += ["pad_token", "eos_token", "think_token", "pwd", "oldpwd"]  # a tokenizer's tokens; the shell's PWD


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(["x", "api", "hub", "access", "hmac", "Private", "SECRET", "client"]), max_size=3),
    st.sampled_from(WORDS),
    st.sampled_from(["_", "-", ".", " "]),
    st.booleans(),
)
def test_a_secret_name_is_secret_in_any_spelling(words, last, sep, upper):
    words = words if last != "key" or (words and words[-1] != "x") else [*words, "api"]  # x_key: no such secret
    name = sep.join([*(words or ["hmac"]), last])  # key needs a word before it: a bare "key" is not a secret
    assert is_secret_key(name.upper() if upper else name), name


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["x", "my", "max", "new", "data"]), max_size=2), st.sampled_from(PLAIN))
def test_a_name_that_merely_holds_a_secret_word_is_not_secret(words, last):
    name = "-".join([*words, last])
    assert not is_secret_key(name) and not is_secret_key("key"), name
    assert redact({name: "visible"}) == {name: "visible"}


PASSWORD = st.text(st.sampled_from("abcXYZ019@:%40-._~!$&()*+,;="), min_size=1, max_size=20)  # a '/' ends a host


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["bob", "bob@corp.com", "", "a-b"]), PASSWORD)
def test_redact_hides_every_password_in_a_url(user, password):
    secret = f"SEKRIT{password}"
    text = f"base_url https://{user}:{secret}@judge.example:8000/v1 failed"
    hidden = redact(text)
    assert "SEKRIT" not in hidden and hidden.endswith("@judge.example:8000/v1 failed"), hidden


def test_redact_keeps_urls_without_a_password():
    for text in ("http://127.0.0.1:8000/v1", "https://user@host/x", "see https://hf.co/models?x=1 and a@b.c"):
        assert redact(text) == text


@pytest.mark.parametrize("name", ["x-api-key", "access-token", "hmac_key", "HUB_TOKEN", "client.secret", "e2b_key"])
def test_redact_hides_key_value_pairs_under_any_secret_name(name):
    assert redact(f"call with {name}=SEKRIT1 seed=3") == f"call with {name}={HIDDEN} seed=3"
    assert redact(f"does not take {name}='SEKRIT1' yet") == f"does not take {name}='{HIDDEN}' yet"


def test_redact_hides_every_secret_value_the_process_knows(monkeypatch):
    monkeypatch.setattr(errors, "KNOWN", set())
    monkeypatch.setenv("HF_TOKEN", "plain-SEKRIT-one")
    monkeypatch.setenv("HF_HUB_DISABLE_IMPLICIT_TOKEN", "1")  # too short to be a secret: "1" stays
    keep_secret("mykey-SEKRIT-2f9c81d0")
    keep_secret("EMPTY")  # the placeholder key of a local server: not a secret
    text = 'Incorrect API key provided: mykey-SEKRIT-2f9c81d0 (HF said "plain-SEKRIT-one") EMPTY 1'
    assert redact(text) == f"Incorrect API key provided: {HIDDEN} (HF said {HIDDEN!r}) EMPTY 1".replace("'", '"')
    assert redact(["mykey-SEKRIT-2f9c81d0"]) == [HIDDEN]


HOSTILE = [
    "",
    " ",
    "  ",
    "\t",
    "\n",
    "a\nb",
    "\r",
    "x\r\ny",
    "\x00",
    "\x1b[31mred",
    "\x1b[2J",
    "\u200b",
    "\u2028",
    " a",
]
NAMES = st.one_of(st.sampled_from(HOSTILE), st.text(max_size=8))
KINDS = {  # what the recipe gets wrong -> the key its error line names
    "data.prompt_column": "data.prompt_column",  # the name is a column the data lacks
    "data column": "data.prompt_column",  # the name is a column the data has (listed in the line)
    "rewards.0.name": "rewards.0.name",
    "trainer key": "trainer.",
}


def visible(name: str) -> str:
    """How a name must read on an error line: as it is when that shows it, else quoted."""
    return name if name and name.strip() == name and name.isprintable() else repr(name)


@pytest.mark.parametrize("kind", [pytest.param(k, marks=pytest.mark.slow) if k == "data column" else k for k in KINDS])
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=NAMES)
@example(name="")
@example(name=" ")
@example(name="a\nb")
def test_a_name_on_an_error_line_is_visible_and_never_splits_it(tmp_path, capsys, kind, name):
    """``prompt_column: ""`` printed ``missing column(s) ;`` and a column named " " vanished from ``the data has:``:
    every name a line shows is quoted when it is empty, blank at an end or holds what does not print, and a newline
    in it never starts a second line (one problem, one ``error:`` line; ordinary names read as before)."""
    assume(name not in ("question", "answer", "prompt", "nope") and "." not in name)
    assume(kind != "data column" or "\x00" not in name)  # Arrow cannot cast a column named with a NUL
    row = {"question": "1+1", "answer": "2", **({name: "x"} if kind == "data column" else {})}
    (tmp_path / "d.jsonl").write_text(json.dumps(row) + "\n")
    column = {"data.prompt_column": name, "data column": "nope"}.get(kind, "question")
    recipe = {
        "model": {"name": "builtin:tiny"},
        "data": {"builder": "hub", "path": "d.jsonl", "prompt_column": column, "solution_column": "answer"},
        "rewards": [{"name": name if kind == "rewards.0.name" else "accuracy"}],
        "trainer": {
            "output_dir": "out",
            "max_steps": 1,
            "use_cpu": True,
            **({name: 1} if kind == "trainer key" else {}),
        },
    }
    (tmp_path / "recipe.yaml").write_text(yaml.safe_dump(recipe))
    assert cli_main(["check", str(tmp_path / "recipe.yaml")]) == 1
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert all(line.startswith("error: ") and line.isprintable() for line in lines), lines
    (line,) = lines
    if kind == "rewards.0.name":  # a reward's name is always quoted
        assert ": rewards.0.name: " in line and (repr(name) if name else "must not be empty") in line, line
    elif kind == "trainer key":
        assert f": trainer.{visible(name)}: " in line, line
    else:
        assert f": {KINDS[kind]}: " in line and f"{visible(name)}" in line, line
        shown = line.rsplit("the data has: ", 1)[1] if kind == "data column" else line
        assert visible(name) in shown.split(", ") or f"missing column(s) {visible(name)};" in shown, line


# a custom reward's arguments named like a field (choices_key) or a switch (use_auth) are no secrets: refused, their
# value ('options') would also be redacted from every later message
@pytest.mark.parametrize("name", ["choices_key", "model_key", "chosen_key", "ground_truth_key", "use_auth"])
def test_custom_reward_argument_named_key_is_not_a_secret(name):
    from grpo_trl.recipe.load import secrets

    assert secrets({"rewards": [{"name": "mylib:mcq", "args": {name: "options"}}]}) == []


def test_refused_non_secret_value_is_not_hidden_from_later_messages():
    from grpo_trl.recipe.load import secrets

    secrets({"rewards": [{"name": "mylib:mcq", "args": {"choices_key": "choices"}}]})
    assert "choices" in str(errors.GrpoTrlError("data: missing column choices"))


# a URL without credentials keeps its host and port even when its path holds an '@'
def test_url_without_credentials_keeps_host_and_port():
    url = "http://localhost:8000/v1/models/org@rev"
    assert errors.redact(url) == url


# holes in the one rule: a secret quoted as a dict/JSON (a repr in a log line or error), plural or short names
@pytest.mark.parametrize("text", ["{'hub_token': 'abcdef123456'}", '{"api_key": "abcdef123456"}'])
def test_secret_in_a_mapping_repr_is_redacted(text):
    assert "abcdef123456" not in errors.redact(text)


@pytest.mark.parametrize("name", ["api_keys", "access_tokens", "db_password"])
def test_secret_names_plural_or_short(name):
    assert errors.is_secret_key(name)


def test_the_shells_working_folder_is_no_secret(monkeypatch, tmp_path):
    monkeypatch.setenv("PWD", str(tmp_path))
    monkeypatch.setenv("OLDPWD", str(tmp_path))
    assert redact(f"defined at {tmp_path}/reward.py:3") == f"defined at {tmp_path}/reward.py:3"


@pytest.mark.parametrize(
    "text",
    ["You can use basic arithmetic operations", "bearer instruments", "Basic Usage", "k.Authorization: a secret in"],
)
def test_prose_that_mentions_auth_words_is_not_redacted(text):
    assert redact(text) == text  # a prompt or completion saying so (eval_completions.jsonl is written redacted)


@pytest.mark.parametrize(
    "text", ["Authorization: Basic dXNlcjpwYXNzMQ==", "Bearer abcdef123456", '{"Authorization": "Bearer eyJ0.a1.b2"}']
)
def test_an_authorization_header_is_redacted(text):
    assert not any(part in redact(text) for part in ("dXNlcjpwYXNzMQ", "abcdef123456", "eyJ0.a1.b2")), redact(text)
