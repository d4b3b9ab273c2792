"""accuracy's math-verify runner: per-item deadlines from any thread, identical scores to plain math-verify."""

from __future__ import annotations

import os
import threading
import time
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_trl.rewards import get_reward
from grpo_trl.rewards.math import MathVerifier, math_form
from grpo_trl.rewards.math_verifier import number, request, same_number


def test_hanging_item_is_cut_off_off_the_main_thread_and_the_rest_still_scored():
    reward = get_reward("accuracy", timeout=1.0)
    reward(["<answer>x</answer>"], solution=["x"])  # math-verify warm (its imports are not part of the item budget)
    texts = ["<answer>1/2</answer>", "<answer>9^{9^{9^{9}}}</answer>", "<answer>0.5</answer>", "<answer>2</answer>"]
    box = {}

    def call():
        start = time.perf_counter()
        box["scores"] = reward(texts, solution=["\\frac{1}{2}", "1", "\\frac{1}{2}", "3"])
        box["elapsed"] = time.perf_counter() - start

    worker = threading.Thread(target=call)  # TRL's async path scores rewards off the main thread
    worker.start()
    worker.join(30)
    assert box["scores"] == [1.0, 0.0, 1.0, 0.0]
    assert box["elapsed"] < 1.0 + 15.0  # one item's budget plus forking children (slow when busy)
    assert reward.func.verifier.timeouts == 1


def test_same_scores_as_plain_math_verify_on_the_math_form():
    """accuracy = math-verify's verify(parse(gold), parse(answer)): bare LaTeX goes between $...$ and is read with
    TRL's LaTeX-only extraction; prose is read with math-verify's default extraction."""
    from math_verify import LatexExtractionConfig, parse, verify

    latex = [LatexExtractionConfig(boxed_match_priority=0)]
    golds = ["72", "\\frac{1}{2}", "0.5", "1000", "3", "", "x+1", "-4", "2\\sqrt{3}"]
    answers = [
        "72",
        "0.5",
        "1/2",
        "1,000",
        "$3$",
        "7",
        "1+x",
        "-4.0",
        "seventy",
        "\\sqrt{9}",
        "2",
        "\\sqrt{12}",
        "is 3",
    ]
    texts, sols, expected = [], [], []
    for g in golds:
        for a in answers:
            texts.append(f"<answer>{a}</answer>")
            sols.append(g)
            gp = parse(math_form(g), parsing_timeout=None)
            if math_form(a) != a:
                ap = parse(math_form(a), latex, extraction_mode="first_match", parsing_timeout=None)
            else:
                ap = parse(a, parsing_timeout=None)
            expected.append(None if not gp else float(verify(gp, ap)))
    assert get_reward("accuracy")(texts, solution=sols) == expected
    assert expected[golds.index("2\\sqrt{3}") * len(answers) + answers.index("2")] == 0.0  # not read as 2
    assert expected[golds.index("3") * len(answers) + answers.index("\\sqrt{9}")] == 1.0
    assert expected[golds.index("3") * len(answers) + answers.index("is 3")] == 1.0


def test_large_batches_do_not_deadlock_and_cache_hits():
    verifier = MathVerifier(timeout=5.0)
    pairs = [(str(i % 50), f"{i % 50}.0") for i in range(3000)]  # non-integer answers: all through the child
    start = time.perf_counter()
    assert verifier.score(pairs) == [1.0] * 3000
    assert time.perf_counter() - start < 60
    start = time.perf_counter()
    assert verifier.score(pairs) == [1.0] * 3000  # cached
    assert time.perf_counter() - start < 0.5


# ------------------------------------------------------------------------------------------------ in-process fast path
_SIGN = st.sampled_from(["", "-"])
_NUMBERS = st.one_of(
    st.builds("{}{}".format, _SIGN, st.integers(0, 10**16)),
    st.builds("{}{}.{}".format, _SIGN, st.integers(0, 10**10), st.text("0123456789", min_size=1, max_size=8)),
    st.builds(
        "{}\\{}{{{}}}{{{}}}".format,
        _SIGN,
        st.sampled_from(["frac", "dfrac", "tfrac"]),
        st.integers(0, 10**7),
        st.integers(0, 10**7),
    ),
    st.builds("{}/{}".format, st.integers(0, 99), st.integers(1, 99)),
    st.sampled_from(["007", ".5", "1.", "1e5", "2\\sqrt{3}", "50\\%", "x", "1,000", "\\infty", "3.14159265"]),
)
_WRAPS = st.sampled_from(["{}", "${}$", "\\boxed{{{}}}", "$\\boxed{{{}}}$", " {} ", "$ {} $", "\\boxed{{ {} }}."])
_PROSE = st.text(alphabet=" abcxyzXY,.:;!?'$", max_size=24)


def _near(base: str) -> st.SearchStrategy[str]:
    """Other ways to write ``base``'s value, and values just beside it (where 6-place rounding decides)."""
    value = Fraction(base.lstrip("$").rstrip("$") if "/" in base else str(number(base)[0])) if number(base) else None
    if value is None:
        return st.just(base)
    return st.sampled_from(
        [
            base,
            f"{float(value):.6f}",
            f"{float(value):.1f}",
            str(value.numerator) if value.denominator == 1 else f"\\frac{{{value.numerator}}}{{{value.denominator}}}",
            f"{float(value + Fraction(1, 10**6)):.6f}",
            f"{float(value - Fraction(1, 10**5)):.6f}",
            str(int(value) + 1),
        ]
    )


@settings(max_examples=300, deadline=None)
@given(data=st.data(), prose=st.tuples(_PROSE, _PROSE), boxed_gold=st.booleans())
def test_fast_path_scores_plain_numbers_exactly_as_math_verify(data, prose, boxed_gold):
    """Every (gold, answer) pair the in-process path decides gets the verdict math-verify gives in the worker:
    integers, decimals, fractions, LaTeX wrappers, \\boxed{}, and golds written as prose around one \\boxed{}."""
    from grpo_trl.rewards.math_verifier import verdict

    base = data.draw(_NUMBERS)
    gold = f"{prose[0]}$\\boxed{{{base}}}${prose[1]}" if boxed_gold else data.draw(_WRAPS).format(base)
    answer = data.draw(_WRAPS).format(data.draw(_near(base) if number(base) else _NUMBERS))
    gold_value, answer_value = number(gold, gold=True), number(answer)
    fast = same_number(gold_value, answer_value) if gold_value and answer_value else None
    if fast is not None:
        assert fast == verdict(*request(gold, answer)), (gold, answer)


def test_fast_path_takes_the_common_forms_and_leaves_the_rest_to_math_verify():
    assert number("72") == (Fraction(72), False) and number("$\\boxed{-0.25}$") == (Fraction(-1, 4), True)
    assert number("Working through it, the result is $\\boxed{\\frac{7}{12}}$.", gold=True) == (Fraction(7, 12), False)
    for other in ["2\\sqrt{3}", "1e5", "007", "72.", "$72$ and $73$", "50\\%", "The answer is $5$, so \\boxed{7}"]:
        assert number(other, gold=True) is None
    assert same_number((Fraction(1, 3), False), (Fraction(333333, 10**6), True)) is None  # math-verify: equal
    assert same_number((Fraction(72), False), (Fraction(72), True)) == 1.0
    assert same_number((Fraction(10**15 - 1), False), (Fraction(10**15 - 2), False)) == 0.0


def test_workers_are_warm_when_the_reward_is_built_not_at_its_first_call():
    """A trainer builds its rewards before its first step: math-verify's warm-up is paid then, not in the step."""
    from grpo_trl.rewards.math_verifier import _POOL

    _POOL.close()
    get_reward("accuracy", workers=1)
    assert _POOL.idle and not _POOL.fresh.intersection(_POOL.idle)  # forked and said "ready"


def _forked_children() -> int:
    """Live children forked from this process (same command line: math-verify workers; Linux ``/proc``)."""
    from pathlib import Path

    mine = Path(f"/proc/{os.getpid()}/cmdline").read_bytes()
    count = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            cmd = (stat.parent / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        count += ppid == os.getpid() and cmd == mine
    return count


def test_threads_scoring_and_building_at_once_get_their_scores_and_leave_no_stray_worker():
    """Callers on several threads (one with a hostile answer) while rewards are built: every caller gets its own
    scores, the hostile item costs its timeout, and no worker process is started twice or left behind."""
    reward = get_reward("accuracy", timeout=1.0, workers=2)
    texts = ["<answer>\\sqrt{12}</answer>", "<answer>0.5</answer>", "<answer>x+2</answer>", "<answer>7</answer>"]
    golds = ["2\\sqrt{3}", "\\frac{1}{2}", "x+1", "7"]
    hostile = ["<answer>9^{9^{9^{9}}}</answer>"] + texts
    results: list = []

    def score(i: int) -> None:
        batch, sols = (hostile, ["1", *golds]) if i == 0 else (texts, golds)
        results.append((i, reward(batch, solution=sols)))

    def build() -> None:
        for _ in range(20):
            get_reward("accuracy", workers=2)

    start = time.perf_counter()
    threads = [threading.Thread(target=score, args=(i,)) for i in range(4)] + [threading.Thread(target=build)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(results) == [(0, [0.0, 1.0, 1.0, 0.0, 1.0])] + [(i, [1.0, 1.0, 0.0, 1.0]) for i in (1, 2, 3)]
    assert time.perf_counter() - start < 1.0 + 30.0  # one item's budget plus forking children when busy
    from grpo_trl.rewards.math_verifier import _POOL

    assert _forked_children() == len(_POOL.idle) == _POOL.size  # the killed worker was replaced, none started twice
