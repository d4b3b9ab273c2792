"""The one secret-key rule and the one redaction (``grpo_trl.errors``): every spelling of a secret's name, every
password a URL can hold, every secret value the process knows."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_trl import errors
from grpo_trl.errors import HIDDEN, is_secret_key, keep_secret, redact

WORDS = ["token", "key", "apikey", "secret", "password", "passwd", "auth", "authorization", "cookie", "credentials"]
PLAIN = ["max_new_tokens", "tokenizer", "keys", "monkey", "key_column", "keyword", "seed", "tokens", "author"]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(["x", "api", "hub", "access", "hmac", "Private", "SECRET", "client"]), max_size=3),
    st.sampled_from(WORDS),
    st.sampled_from(["_", "-", ".", " "]),
    st.booleans(),
)
def test_a_secret_name_is_secret_in_any_spelling(words, last, sep, upper):
    name = sep.join([*(words or ["hmac"]), last])  # key needs a word before it: a bare "key" is not a secret
    assert is_secret_key(name.upper() if upper else name), name


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["x", "api", "hub", "max", "new", "data"]), max_size=2), st.sampled_from(PLAIN))
def test_a_name_that_merely_holds_a_secret_word_is_not_secret(words, last):
    name = "-".join([*words, last])
    assert not is_secret_key(name) and not is_secret_key("key"), name
    assert redact({name: "visible"}) == {name: "visible"}


PASSWORD = st.text(st.sampled_from("abcXYZ019@:/%40-._~!$&()*+,;="), min_size=1, max_size=20)


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
