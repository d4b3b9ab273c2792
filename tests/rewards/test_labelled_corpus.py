"""The correctness rewards against their references on the labelled corpus (``labelled_corpus.py``): on every row
where a reference is right, grpo-trl is right (README, "Rewards": where they differ on purpose).

References: seed 003's ``correctness_reward`` and seed 004's ``accuracy_reward`` (``reference_rewards.py``), TRL's
``accuracy_reward`` / ``reasoning_accuracy_reward`` / ``get_cosine_scaled_reward`` (imported from the installed TRL)
and open-r1's ``accuracy_reward`` (re-expressed in ``reference_rewards.py``: open-r1 is not installed). Each reads the
completion layout it was written for: seed 004 and open-r1 a ``<answer>\\n...\\n</answer>`` block, TRL the whole
completion (its ``\\boxed{}`` first), seed 003 the last ``<answer>`` block.
"""

from __future__ import annotations

import pytest
from trl.rewards import accuracy_reward, get_cosine_scaled_reward, reasoning_accuracy_reward

from grpo_trl.rewards import get_reward
from tests.rewards import reference_rewards as ref
from tests.rewards.labelled_corpus import Row, completion, corpus

pytestmark = pytest.mark.slow

ROWS = corpus()
GOLDS = [r.gold for r in ROWS]
# Against the references (each reads every row in math-verify, in this process: slow), every fourth row; accuracy
# itself is checked right on every row, which is what the comparisons guard.
SAMPLE = ROWS[::4]
SAMPLE_GOLDS = [r.gold for r in SAMPLE]


def _right(score, row: Row) -> bool:
    return (score is not None and score > 0) == row.correct


def _msgs(texts: list[str]) -> list:
    return [[{"role": "assistant", "content": t}] for t in texts]


def _where_only_they_are_right(rows, ours, theirs) -> list:
    return [(r.gold, r.answer, o, t) for r, o, t in zip(rows, ours, theirs) if _right(t, r) and not _right(o, r)]


def _texts(layout: str, rows=ROWS) -> list[str]:
    return [completion(r, layout) for r in rows]


def _accuracy(layout: str, rows) -> list:
    reward = get_reward("accuracy", require_answer_tag=layout != "bare")
    return reward(_texts(layout, rows), solution=[r.gold for r in rows])


@pytest.fixture(scope="module")
def sampled() -> dict:
    """accuracy's scores on the sample, per layout"""
    return {layout: _accuracy(layout, SAMPLE) for layout in ("lines", "think", "bare")}


def test_accuracy_is_right_on_every_row():
    """Every right answer scores 1, every wrong one 0 (the other layouts: on the sample, below)."""
    wrong = [(r.gold, r.answer, s) for r, s in zip(ROWS, _accuracy("tag", ROWS)) if not _right(s, r)]
    assert wrong == []
    assert len(ROWS) > 7_000 and sum(r.correct for r in ROWS) > 2_500


def test_accuracy_is_right_where_seed_004_is(sampled):
    theirs = ref.seed004_accuracy(_texts("lines", SAMPLE), SAMPLE_GOLDS)
    assert _where_only_they_are_right(SAMPLE, sampled["lines"], theirs) == []
    assert [s for r, s in zip(SAMPLE, sampled["lines"]) if not _right(s, r)] == []
    assert sum(not _right(t, r) for r, t in zip(SAMPLE, theirs)) > 0  # it misses some that accuracy gets


@pytest.mark.parametrize("layout", ["think", "bare"])
def test_accuracy_is_right_where_trl_is(sampled, layout):
    theirs = accuracy_reward(_msgs(_texts(layout, SAMPLE)), SAMPLE_GOLDS)
    assert _where_only_they_are_right(SAMPLE, sampled[layout], theirs) == []
    assert [s for r, s in zip(SAMPLE, sampled[layout]) if not _right(s, r)] == []


def test_accuracy_is_right_where_open_r1_is(sampled):
    theirs = ref.open_r1_accuracy(_texts("lines", SAMPLE), SAMPLE_GOLDS)
    assert _where_only_they_are_right(SAMPLE, sampled["lines"], theirs) == []


def test_gsm8k_is_right_where_seed_003_is_and_exact_where_it_is():
    rows = [r for r in ROWS if r.style == "gsm8k"]
    texts = [completion(r, "tag") for r in rows]
    golds = [r.gold for r in rows]
    ours = get_reward("gsm8k")(texts, solution=golds)
    theirs = ref.seed003_correctness(texts, golds)
    assert [(r.gold, r.answer, s) for r, s in zip(rows, ours) if not _right(s, r)] == []
    assert _where_only_they_are_right(rows, ours, theirs) == []
    assert all(o == 2.0 for o, t in zip(ours, theirs) if t == 2.0)  # the seed's exact matches stay exact
    assert sum(t > 0 for r, t in zip(rows, theirs) if not r.correct) > 0  # it takes \sqrt{72} for 72


def test_reasoning_accuracy_is_right_where_trl_is():
    texts, golds = _texts("think", SAMPLE), SAMPLE_GOLDS
    ours = get_reward("reasoning_accuracy")(texts, solution=golds)
    theirs = reasoning_accuracy_reward(_msgs(texts), golds)
    assert [(r.gold, r.answer, s) for r, s in zip(SAMPLE, ours) if not _right(s, r)] == []
    assert _where_only_they_are_right(SAMPLE, ours, theirs) == []


def test_cosine_is_right_where_trl_is():
    """Correct completions get a positive cosine reward, wrong ones a negative one; TRL's on the same lengths."""
    texts, golds = _texts("bare", SAMPLE), SAMPLE_GOLDS
    ids = [[0] * 50 for _ in texts]
    ours = get_reward("cosine", max_len=100, require_answer_tag=False)(texts, solution=golds, completion_ids=ids)
    theirs = get_cosine_scaled_reward(max_len=100)(_msgs(texts), golds, ids)
    assert [(r.gold, r.answer, s) for r, s in zip(SAMPLE, ours) if not _right(s, r)] == []
    assert _where_only_they_are_right(SAMPLE, ours, theirs) == []


# ------------------------------------------------------------------------------------------------ format rewards
# The seeds' format rewards score layout, not correctness: grpo-trl's built-ins give the same scores on the corpus.
def test_format_rewards_score_like_the_seeds():
    texts = [completion(r, layout) for r in ROWS[::7] for layout in ("tag", "lines", "think", "bare")]
    texts += [f"<reasoning>\n{t}\n</reasoning>\n{t}" for t in texts[:200]]
    assert get_reward("xml_format")(texts) == pytest.approx(ref.seed003_format(texts))
    assert get_reward("tag_count")(texts) == ref.seed004_tag_count(texts)
    assert get_reward("reasoning_steps", numbered_lines=False)(texts) == pytest.approx(
        ref.seed004_reasoning_steps(texts)
    )
    ours = get_reward("think_format", trailing_lines=True)(texts)
    theirs = ref.seed004_format(texts)
    # the one difference (README): a second <think> anywhere is refused, as TRL's think_format_reward refuses it
    assert [t for t, o, s in zip(texts, ours, theirs) if o != s and "<think>" not in t[1:]] == []
    assert sum(ours) > 0
