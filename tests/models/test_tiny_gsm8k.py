"""builtin:tiny-gsm8k's quick pieces: the generated stories, the split, the warm-up rows, the tokenizer."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_trl.data.gsm8k import MAX_VALUE, generate_problems, gsm8k, held_out
from grpo_trl.models.builtin import BUILDERS
from grpo_trl.models.tiny_gsm8k import _tokenizer, prompt_messages, warmup_rows
from grpo_trl.rewards.format import xml_format
from grpo_trl.rewards.math import gsm8k as gsm8k_reward
from grpo_trl.run.names import kind_of

seeds = st.integers(0, 2**32)


@settings(max_examples=25, deadline=None)
@given(seeds, st.booleans())
def test_every_story_has_a_gold_its_steps_reach_and_falls_on_its_own_side_of_the_split(seed, test):
    for row in generate_problems(20, seed, test=test):
        steps = re.findall(r"(\d+) ([-+*]) (\d+) = (\d+)", row["answer"])
        assert 1 <= len(steps) <= 2 and held_out(row["key"]) == test
        value = int(steps[0][0])
        for a, op, b, r in steps:
            assert int(a) == value and int(r) == eval(f"{a} {op} {b}") and 1 <= int(r) <= MAX_VALUE  # noqa: S307
            value = int(r)
        assert row["answer"].endswith(f"#### {value}")
        assert [int(n) for n in re.findall(r"\d+", row["question"])] == [int(steps[0][0])] + [int(s[2]) for s in steps]


def test_the_builder_generates_offline_and_parses_the_gold_as_for_gsm8k():
    train, test = gsm8k("train", source="generate", size=300), gsm8k("test", source="generate", size=300)
    assert train.column_names == ["user", "solution", "reasoning"]
    assert all(r["reasoning"].endswith("#### " + r["solution"]) for r in test)
    keys = {tuple(re.findall(r"\d+|[-+*] ", r["reasoning"].split("####")[0])) for r in train}
    assert not keys & {tuple(re.findall(r"\d+|[-+*] ", r["reasoning"].split("####")[0])) for r in test}


@settings(max_examples=10, deadline=None)
@given(seeds)
def test_clean_warmup_answers_score_full_marks_and_noisy_ones_only_add(seed):
    clean, noisy = warmup_rows(30, seed, noise=0.0), warmup_rows(30, seed, noise=1.0)
    gold = [r["answer"].rsplit("#### ", 1)[1] for r in clean]
    assert gsm8k_reward([r["completion"] for r in clean], solution=gold) == [2.0] * 30
    assert xml_format([r["completion"] for r in clean]) == [0.8] * 30
    assert all(re.findall(r" ([-*]) ", r["completion"]) == [] for r in noisy)


def test_numbers_are_one_token_at_the_same_places_whatever_the_words():
    tokenizer = _tokenizer(768)
    layouts = {}
    for row in warmup_rows(200, 1):
        text = tokenizer.apply_chat_template(prompt_messages(row["question"]), tokenize=False)
        pieces = [tokenizer.decode([i]) for i in tokenizer(text + row["completion"])["input_ids"]]
        assert "".join(pieces) == text + row["completion"]
        places = tuple(i for i, p in enumerate(pieces) if p.isdigit())
        layouts.setdefault(row["answer"].count("="), set()).add(places)
    assert {k: len(v) for k, v in layouts.items()} == {1: 1, 2: 1}


def test_builtin_and_its_folder_are_known():
    assert "builtin:tiny-gsm8k" in BUILDERS and kind_of("tiny-gsm8k") == "cache"
