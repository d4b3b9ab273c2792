"""``think_format(newlines=False)`` is seed 001's reward (ms-swift's built-in ``format``): the five completions the
write-up prints score 1.0, it agrees with ms-swift's regex on a generated corpus of format variants, and it stays
linear on the inputs that make that regex backtrack."""

from __future__ import annotations

import itertools
import json
import re
import time
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_trl.rewards import get_reward
from grpo_trl.rewards.format import think_format

# Copied verbatim from shared/seeds/001 ("Completion Examples at Different Steps", steps 1, 200, 500, 1000, 2000),
# mojibake included: the completions as the write-up printed them.
SEED_COMPLETIONS = json.loads((Path(__file__).with_name("seed001_completions.json")).read_text(encoding="utf-8"))

# ms-swift's `format` (swift/rewards/orm.py, class Format), re-expressed: `<think>` at the start, a lazy body,
# `</think>`, whitespace, `<answer>`, a lazy body, `</answer>` as the very last characters. Its `re.match` with
# DOTALL and a "nothing follows" lookahead is a full match where `.` is any character: `[\s\S]` here.
_REFERENCE = re.compile(r"<think>[\s\S]*?</think>\s*<answer>[\s\S]*?</answer>")


def reference(text: str) -> float:
    """ms-swift's verdict (backtracking: only for the short texts of the corpus)."""
    return 1.0 if _REFERENCE.fullmatch(text) else 0.0


def seed_format(texts: list[str]) -> list[float]:
    return think_format(texts, newlines=False)


def test_the_five_printed_completions_score_one_under_the_seed_reward_and_zero_under_the_strict_one():
    texts = list(SEED_COMPLETIONS.values())
    assert len(texts) == 5
    assert seed_format(texts) == [1.0] * 5
    assert [reference(t) for t in texts] == [1.0] * 5
    assert think_format(texts) == [0.0] * 5  # `<answer>(...)</answer>` has no newlines inside the tags
    assert get_reward("think_format", newlines=False)(texts) == [1.0] * 5  # as a recipe's `args:` builds it


# A labelled corpus: each piece of the layout, right and wrong, in every combination.
PREFIX = ["", "\n"]
OPEN = ["<think>", "<think>\n", "<Think>", ""]
THINK = ["", "plan", "a\nb\n", "</think>x", "<think>", "<answer>4</answer>"]
CLOSE = ["</think>", "</think>\n", "</ think>", ""]
SEP = ["", " ", "\n\n", "\t\r\n", "\u00a0\u2003", "\x1c", " . "]
AOPEN = ["<answer>", "<answer>\n", "<answer >"]
ANSWER = ["", "4", "\n(1 + 2) = 3\n", "</answer>", "<answer>"]
ACLOSE = ["</answer>", "</answer>\n", "</answer> ", "</answer>x", "</answer></answer>", ""]


def corpus() -> list[str]:
    return ["".join(parts) for parts in itertools.product(PREFIX, OPEN, THINK, CLOSE, SEP, AOPEN, ANSWER, ACLOSE)]


def test_agrees_with_ms_swift_on_every_row_of_a_generated_corpus():
    rows = corpus()
    labels = [reference(t) for t in rows]
    assert len(rows) == 120_960 and 0 < sum(labels) < len(rows)  # both verdicts are exercised
    got = seed_format(rows)
    wrong = [(t, want) for t, want, have in zip(rows, labels, got) if want != have]
    assert wrong == []


FRAGMENTS = ["<think>", "</think>", "<answer>", "</answer>", " ", "\n", "\u3000", "x", "4", "<", ">", "/"]


TAGGED = st.lists(st.sampled_from(FRAGMENTS), max_size=14).map("".join)


@settings(max_examples=1000, deadline=None)
@given(TAGGED)
def test_agrees_with_ms_swift_on_any_sequence_of_tags_and_whitespace(text):
    assert seed_format([text]) == [reference(text)]


@settings(max_examples=300, deadline=None)
@given(TAGGED)
def test_prefilled_think_scores_the_text_as_if_the_tag_were_written(text):
    prefilled = get_reward("think_format", newlines=False, prefilled_think=True)
    assert prefilled([text]) == [reference(text if text.startswith("<think>") else "<think>" + text)]


def test_trailing_lines_accepts_lines_after_a_closing_tag_that_ends_its_line():
    lines = get_reward("think_format", newlines=False, trailing_lines=True)
    assert lines(["<think>a</think><answer>4</answer>\nmore", "<think>a</think><answer>4</answer>"]) == [1.0, 1.0]
    assert lines(["<think>a</think><answer>4</answer> more", "<think>a</think><answer></answer"]) == [0.0, 0.0]
    assert seed_format(["<think>a</think><answer>4</answer>\n"]) == [0.0]  # ms-swift: nothing after </answer>


ADVERSARIAL = [
    # the reference regex tries every </think><answer> against every later </answer>: quadratic
    "<think>" + "</think><answer></answer>x" * 20_000,
    "<think>" + "</think>" + " " * 200_000 + "x" + "</think> <answer>" * 20_000,
    "<think>" + "</think>\n" * 50_000 + "<answer>",
    "<think>" + "a" * 500_000 + "</think><answer>" + "b" * 500_000,
]


def test_adversarial_texts_are_scored_in_linear_time():
    start = time.perf_counter()
    assert seed_format(ADVERSARIAL) == [0.0, 0.0, 0.0, 0.0]
    assert seed_format([ADVERSARIAL[0] + "</answer>"]) == [1.0]
    # ms-swift's regex took 1.8 s at 2,000 repeats and 6.7 s at 4,000 (quadratic): minutes on the first text
    assert time.perf_counter() - start < 1.0
