"""A right answer scores as right in any of the forms models write it, a wrong one as wrong (issue 19): generated
(gold, rendering of a value, wrapper) triples, for ``accuracy`` and ``gsm8k``."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_trl.rewards import get_reward
from grpo_trl.rewards.math import answer_value, written
from tests.rewards.labelled_corpus import WRAPPERS

pytestmark = pytest.mark.slow

ACCURACY = get_reward("accuracy", timeout=10.0)
GSM8K = get_reward("gsm8k")
ANY = [t for _, t, scope in WRAPPERS if scope == "all"]
NUMERIC = [t for _, t, _ in WRAPPERS]  # units too
# wrappers that only present the value (no words, no "x ="): gsm8k calls these the same string as the gold
PRESENTATION = [
    t for name, t, _ in WRAPPERS if not any(w in name for w in ("sentence", "answer", "equation", "units"))
]
PRESENTATION.remove("\\boxed{{The answer is {v}.}}")


def _renderings(n: int) -> list[str]:
    out = [str(n), f"{n}.0"]
    if abs(n) >= 1000:
        out += [f"{n:,}", f"{n:,}".replace(",", "{,}"), f"{n:,}".replace(",", "\\,"), f"{n:,}".replace(",", ",\\!")]
    return out


def _score(reward, template: str, value: str, gold: str) -> float:
    return reward([f"<answer>{template.format(v=value)}</answer>"], solution=[gold])[0]


def _pick(options: list[str], form: int) -> str:
    return options[form % len(options)]


@settings(max_examples=300, deadline=None)
@given(
    n=st.integers(-(10**7), 10**7),
    delta=st.sampled_from([1, -1, 2, 9, 10, 100, "x10", "/10", "neg"]),
    form=st.integers(0, 5),
    template=st.sampled_from(NUMERIC),
)
def test_integer_golds(n, delta, form, template):
    right = _pick(_renderings(n), form)
    assert _score(ACCURACY, template, right, str(n)) == 1.0, template.format(v=right)
    assert _score(GSM8K, template, right, str(n)) > 0, template.format(v=right)
    if delta == "/10":
        wrong, bad = Fraction(n, 10), str(Fraction(n, 10).__float__()).removesuffix(".0")
    else:
        wrong = {"x10": n * 10, "neg": -n}.get(delta) if isinstance(delta, str) else n + delta
        bad = _pick(_renderings(wrong), form)
    if wrong != n:
        assert _score(ACCURACY, template, bad, str(n)) == 0.0, template.format(v=bad)
        assert _score(GSM8K, template, bad, str(n)) == 0.0, template.format(v=bad)


@settings(max_examples=200, deadline=None)
@given(cents=st.integers(-(10**6), 10**6).filter(lambda c: c % 100), template=st.sampled_from(NUMERIC))
def test_decimal_golds(cents, template):
    gold = str(Fraction(cents, 100).__float__())
    for right in (gold, gold + "0"):
        assert _score(ACCURACY, template, right, gold) == 1.0, template.format(v=right)
        assert _score(GSM8K, template, right, gold) > 0, template.format(v=right)
    for bad in (str((cents + 1) / 100), str(cents / 10), gold.replace(".", "")):
        if Fraction(bad) != Fraction(cents, 100):
            assert _score(ACCURACY, template, bad, gold) == 0.0, template.format(v=bad)
            assert _score(GSM8K, template, bad, gold) == 0.0, template.format(v=bad)


@settings(max_examples=200, deadline=None)
@given(
    p=st.integers(1, 60),
    q=st.integers(2, 60),
    negative=st.booleans(),
    form=st.integers(0, 3),
    template=st.sampled_from(ANY),
)
def test_fraction_golds(p, q, negative, form, template):
    f = Fraction(p, q) * (-1 if negative else 1)
    if f.denominator == 1:
        return
    sign, a, b = ("-" if f < 0 else ""), abs(f.numerator), f.denominator
    gold = f"{sign}\\frac{{{a}}}{{{b}}}"
    rights = [gold, f"{sign}\\dfrac{{{a}}}{{{b}}}", f"{sign}{a}/{b}", f"{sign}\\frac{{{2 * a}}}{{{2 * b}}}"]
    right = rights[form]
    assert _score(ACCURACY, template, right, gold) == 1.0, template.format(v=right)
    for bad in (
        f"{sign}\\frac{{{b}}}{{{a}}}",
        f"{sign}\\frac{{{a + 1}}}{{{b}}}",
        f"\\frac{{{a}}}{{{b}}}" if sign else f"-{a}/{b}",
    ):
        if bad not in rights:
            assert _score(ACCURACY, template, bad, gold) == 0.0, template.format(v=bad)


@settings(max_examples=100, deadline=None)
@given(a=st.integers(2, 9), b=st.sampled_from([2, 3, 5, 6, 7]), template=st.sampled_from(ANY))
def test_root_golds_are_read_whole(a, b, template):
    """``2\\sqrt{3}`` is never read as 2 (or 3), whatever surrounds it."""
    gold = f"{a}\\sqrt{{{b}}}"
    for right in (gold, f"\\sqrt{{{a * a * b}}}"):
        assert _score(ACCURACY, template, right, gold) == 1.0, template.format(v=right)
    for bad in (str(a), str(b), f"\\sqrt{{{b}}}", f"{a + 1}\\sqrt{{{b}}}"):
        assert _score(ACCURACY, template, gold, bad) == 0.0, (template.format(v=gold), bad)
        assert _score(ACCURACY, template, bad, gold) == 0.0, template.format(v=bad)


@settings(max_examples=300, deadline=None)
@given(n=st.integers(-(10**7), 10**7), form=st.integers(0, 5), template=st.sampled_from(PRESENTATION))
def test_gsm8k_exact_is_the_same_string_as_written(n, form, template):
    """The builder stores "1200" for GSM8K's "1,200": every presentation of the same digits is exact."""
    value = [r for r in _renderings(n) if not r.endswith(".0")][form % (1 + 4 * (abs(n) >= 1000))]
    assert _score(GSM8K, template, value, str(n)) == 2.0, template.format(v=value)
    assert _score(GSM8K, template, f"{n}.0", str(n)) == 1.5  # a different string, the same number


@pytest.mark.parametrize(
    ("answer", "value"),
    [
        ("not 72, it's 73", "not 72, it's 73"),  # prose: math-verify reads the last value (73)
        ("x = 73, not 72", "x = 73, not 72"),  # ... here 72: a hedge is read at its end, as gsm8k reads it
        ("2**10", "2**10"),  # a power, not emphasis
        ("2 * 3 * 4", "2 * 3 * 4"),
        ("x_1 + x_2", "x_1 + x_2"),
        ("The answer is 72. I checked it: 3 \\cdot 24 = 72", "The answer is 72. I checked it: 3 \\cdot 24 = 72"),
        ("The ratio is 3:4", "3:4"),
    ],
)
def test_answer_value_leaves_math_alone(answer, value):
    assert answer_value(answer) == value


def test_ambiguous_answers_are_read_at_their_end():
    """A hedge scores by its last value (documented): never both values."""
    golds = ["73", "72", "73", "72"]
    texts = ["not 72, it's 73", "not 72, it's 73", "72 or 73", "72 or 73"]
    assert ACCURACY([f"<answer>{t}</answer>" for t in texts], solution=golds) == [1.0, 0.0, 1.0, 0.0]
    assert written("**1,200.**") == written("1200") != written("1200.0")
