"""The token-length filter pipeline (grpo_trl/data/filters.py) keeps exactly the rows of the old row-at-a-time filter
(tests/data/naive_filter.py), caches by content, tokenizes only what ``limit`` needs, and bounds pathological rows."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_trl.data import filters
from grpo_trl.data.filters import filter_by_tokens
from grpo_trl.data.token_count import byte_bound_mode
from tests.data.naive_filter import naive_filter


@pytest.fixture(scope="module")
def tok(tiny_model):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model)


def _ds(rows):
    from datasets import Dataset

    return Dataset.from_list(rows)


def _rows(texts, solutions, system=None):
    sys_turn = [{"role": "system", "content": system}] if system else []
    return [{"prompt": [*sys_turn, {"role": "user", "content": t}], "solution": s} for t, s in zip(texts, solutions)]


class Counting:
    """The real tokenizer, recording the rows it renders and tokenizes (the test's own probe, not a fake)."""

    def __init__(self, tok):
        self.tok, self.rendered, self.tokenized = tok, [], []

    def __getattr__(self, name):
        return getattr(self.tok, name)

    def apply_chat_template(self, conversations, **kwargs):
        self.rendered += conversations
        return self.tok.apply_chat_template(conversations, **kwargs)

    def __call__(self, texts, **kwargs):
        self.tokenized += texts
        return self.tok(texts, **kwargs)


texts_st = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)) | st.sampled_from("abc <think>12 \n"),
    max_size=120,
)
solutions_st = st.one_of(st.text(max_size=30), st.integers(-(10**12), 10**12).map(str))


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=st.lists(st.tuples(texts_st, solutions_st), min_size=1, max_size=30),
    max_p=st.one_of(st.none(), st.integers(1, 120)),
    max_s=st.one_of(st.none(), st.integers(1, 12)),
    limit=st.one_of(st.none(), st.integers(1, 35)),
    system=st.sampled_from([None, "Be brief.", "é" * 40]),
)
def test_same_rows_as_the_row_at_a_time_filter(tok, tmp_path, monkeypatch, data, max_p, max_s, limit, system):
    monkeypatch.setenv("GRPO_TRL_CACHE", str(tmp_path))
    texts, solutions = zip(*data)
    ds = _ds(_rows(texts, solutions, system))
    cfg = {"max_prompt_tokens": max_p, "max_solution_tokens": max_s, "limit": limit}
    want, want_dropped = naive_filter(ds, cfg, tok)
    for _ in range(2):  # cold, then from the cache
        got, dropped = filter_by_tokens(ds, cfg, tok)
        assert got[:] == want[:]
        if limit is None:  # with a limit only the rows examined are counted
            assert dropped == want_dropped


def test_a_second_run_reads_the_cache_and_tokenizes_nothing(tok, tmp_path, monkeypatch):
    monkeypatch.setenv("GRPO_TRL_CACHE", str(tmp_path))
    ds = _ds(_rows([f"question {i} " * (i % 40) for i in range(300)], [str(i) * (i % 9) for i in range(300)]))
    cfg = {"max_prompt_tokens": 60, "max_solution_tokens": 3}
    first, dropped = filter_by_tokens(ds, cfg, tok)
    assert 0 < len(first) < 300 and len(list(tmp_path.rglob("*.json"))) == 1
    probe = Counting(tok)
    again, dropped_again = filter_by_tokens(ds, cfg, probe)
    assert again[:] == first[:] and dropped_again == dropped
    assert probe.rendered == [] and probe.tokenized == []
    # another option, another row or another template is another key: computed again, right again
    for cfg2, ds2, tok2 in [
        ({**cfg, "max_prompt_tokens": 61}, ds, tok),
        (cfg, ds.select(range(299)), tok),
    ]:
        probe = Counting(tok2)
        out, _ = filter_by_tokens(ds2, cfg2, probe)
        assert probe.rendered and out[:] == naive_filter(ds2, cfg2, tok2)[0][:]
    tok.chat_template, saved = tok.chat_template + " ", tok.chat_template
    try:
        probe = Counting(tok)
        filter_by_tokens(ds, cfg, probe)
        assert probe.rendered
    finally:
        tok.chat_template = saved


def test_a_corrupt_or_unwritable_cache_is_recomputed(tok, tmp_path, monkeypatch):
    monkeypatch.setenv("GRPO_TRL_CACHE", str(tmp_path))
    ds = _ds(_rows(["a b c " * i for i in range(50)], ["1"] * 50))
    cfg = {"max_prompt_tokens": 40}
    want = filter_by_tokens(ds, cfg, tok)[0][:]
    (path,) = tmp_path.rglob("*.json")
    for junk in ["", "{", json.dumps({"kept": "x"}), json.dumps([1])]:
        path.write_text(junk)
        assert filter_by_tokens(ds, cfg, tok)[0][:] == want
    monkeypatch.setenv("GRPO_TRL_CACHE", str(tmp_path / "file"))
    (tmp_path / "file").write_text("not a folder")
    assert filter_by_tokens(ds, cfg, tok)[0][:] == want  # a warning, not a failure


def test_limit_tokenizes_only_what_it_needs(tok, tmp_path, monkeypatch):
    monkeypatch.setenv("GRPO_TRL_CACHE", str(tmp_path))
    n = 5000
    ds = _ds(_rows([("word " * (i % 300)) + str(i) for i in range(n)], ["7"] * n))
    cfg = {"max_prompt_tokens": 600, "limit": 10}  # every third row or so is too long
    probe = Counting(tok)
    got, dropped = filter_by_tokens(ds, cfg, probe)
    assert got[:] == naive_filter(ds.select(range(200)), cfg, tok)[0][:]
    assert len(probe.rendered) <= filters.BATCH_SIZE < n
    assert set(dropped) == {"max_prompt_tokens"}


def test_a_pathological_row_is_never_rendered_nor_tokenized(tok, tmp_path, monkeypatch):
    monkeypatch.setenv("GRPO_TRL_CACHE", str(tmp_path))
    huge = "x" * 20_000_000  # 20 MB in one row; the bound is max_prompt_tokens x longest token x 4 characters
    ds = _ds(_rows(["short one", huge, "another", "last"], ["1", "2", huge, "4"]))
    probe = Counting(tok)
    got, dropped = filter_by_tokens(ds, {"max_prompt_tokens": 50, "max_solution_tokens": 5}, probe)
    assert [r[-1]["content"] for r in got["prompt"]] == ["short one", "last"]
    assert dropped == {"max_prompt_tokens": 1, "max_solution_tokens": 1}
    assert max(len(t) for t in probe.tokenized + [""]) < 1000
    assert all(len(c[-1]["content"]) < 1000 for c in probe.rendered)
    probe = Counting(tok)
    got, dropped = filter_by_tokens(_ds(_rows(["a", "b"], ["1", huge])), {"max_solution_tokens": 5}, probe)
    assert got["solution"] == ["1"] and dropped == {"max_solution_tokens": 1}
    assert all(len(t) < 1000 for t in probe.tokenized)


def test_short_texts_skip_the_tokenizer_only_when_bytes_bound_tokens(tok, tmp_path, monkeypatch):
    monkeypatch.setenv("GRPO_TRL_CACHE", str(tmp_path))
    assert byte_bound_mode(tok) == "ascii"  # NFC normalizer: the identity on ASCII only
    ds = _ds(_rows(["hi", "é" * 5, "x" * 80], ["1", "2", "3"]))
    probe = Counting(tok)
    filter_by_tokens(ds, {"max_prompt_tokens": 60}, probe)
    assert len(probe.rendered) == 3 and len(probe.tokenized) == 2  # the short ASCII prompt was not tokenized


def _other_tokenizer(kind: str):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    if kind == "wordlevel":
        t = Tokenizer(models.WordLevel({"a": 0, "[UNK]": 1}, unk_token="[UNK]"))
        t.pre_tokenizer = pre_tokenizers.Whitespace()
    else:
        t = Tokenizer(models.BPE())
        t.pre_tokenizer = pre_tokenizers.Metaspace() if kind == "metaspace" else pre_tokenizers.ByteLevel()
        if kind == "lowercase":
            t.normalizer = normalizers.Lowercase()
    return PreTrainedTokenizerFast(tokenizer_object=t)


@pytest.mark.parametrize(
    ("kind", "mode"), [("bytelevel", "any"), ("lowercase", None), ("metaspace", None), ("wordlevel", None)]
)
def test_byte_bound_mode_is_conservative(kind, mode):
    assert byte_bound_mode(_other_tokenizer(kind)) == mode


def test_no_token_filter_is_limit_only_and_needs_no_tokenizer():
    ds = _ds(_rows(["a", "b", "c"], ["1", "2", "3"]))
    assert filter_by_tokens(ds, {"limit": 2}, None)[0]["solution"] == ["1", "2"]
    assert filter_by_tokens(ds, {}, None)[0]["solution"] == ["1", "2", "3"]


def _c_env(name: str) -> bytes | None:
    """The variable as C code (the Rust tokenizer) reads it, which os.environ may not show."""
    import ctypes

    libc = ctypes.CDLL(None)
    libc.getenv.restype = ctypes.c_char_p
    return libc.getenv(name.encode())


@pytest.mark.parametrize("before", [None, "true"])
def test_worker_processes_leave_the_tokenizers_parallelism_as_it_was(tok, tmp_path, monkeypatch, before):
    """datasets.map(num_proc>1) leaves TOKENIZERS_PARALLELISM=false in the C environment: after the filter, TRL's
    tokenization in this process would have run on one core."""
    import os

    monkeypatch.setenv("GRPO_TRL_CACHE", str(tmp_path))
    monkeypatch.setattr(filters, "MIN_ROWS_PER_PROC", 20)  # two worker processes for 40 rows
    if before is None:
        monkeypatch.delenv("TOKENIZERS_PARALLELISM", raising=False)
        os.unsetenv("TOKENIZERS_PARALLELISM")
    else:
        monkeypatch.setenv("TOKENIZERS_PARALLELISM", before)
    ds = _ds(_rows([f"q {i} " * (i % 7) for i in range(40)], ["1"] * 40))
    assert filters.num_proc_for(40) == 2
    got, _ = filter_by_tokens(ds, {"max_prompt_tokens": 20}, tok)
    assert got[:] == naive_filter(ds, {"max_prompt_tokens": 20}, tok)[0][:]
    assert _c_env("TOKENIZERS_PARALLELISM") == (before.encode() if before else None)
