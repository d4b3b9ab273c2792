"""pass@k (Chen et al., 2021): hand-computed values, the exact binomial form, and properties over all inputs."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grpo_trl.eval.score import pass_at_k, pass_at_k_table


@pytest.mark.parametrize(
    "n, c, k, expected",
    [
        (1, 0, 1, 0.0),
        (1, 1, 1, 1.0),
        (4, 1, 1, 0.25),
        (4, 1, 2, 0.5),  # 1 - C(3,2)/C(4,2) = 1 - 3/6
        (4, 2, 2, 5 / 6),  # 1 - C(2,2)/C(4,2) = 1 - 1/6
        (4, 2, 3, 1.0),  # n - c < k: every draw of 3 holds a pass
        (4, 0, 3, 0.0),
        (8, 2, 4, 1 - 15 / 70),  # 1 - C(6,4)/C(8,4)
        (10, 3, 5, 1 - 21 / 252),  # 1 - C(7,5)/C(10,5)
        (16, 0, 16, 0.0),
        (16, 1, 16, 1.0),
    ],
)
def test_hand_computed_values(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)


@given(n=st.integers(1, 60), data=st.data())
def test_matches_the_exact_binomial_form(n, data):
    c = data.draw(st.integers(0, n))
    k = data.draw(st.integers(1, n))
    exact = 1 - Fraction(math.comb(n - c, k), math.comb(n, k))
    assert pass_at_k(n, c, k) == pytest.approx(float(exact), abs=1e-9)


@given(n=st.integers(1, 40), data=st.data())
def test_properties(n, data):
    c = data.draw(st.integers(0, n))
    values = [pass_at_k(n, c, k) for k in range(1, n + 1)]
    assert all(0.0 <= v <= 1.0 for v in values)
    assert all(a <= b + 1e-12 for a, b in zip(values, values[1:]))  # more tries never hurt
    assert values[0] == pytest.approx(c / n)  # pass@1 is the pass rate
    assert values[-1] == (1.0 if c else 0.0)  # pass@n: any pass among all n
    if c < n:
        assert pass_at_k(n, c + 1, 1) > values[0]  # one more pass raises it


@given(st.lists(st.lists(st.booleans(), min_size=3, max_size=3), min_size=1, max_size=30))
def test_table_over_problems(passed):
    table = pass_at_k_table(passed)
    assert sorted(table) == [1, 2, 3]
    for k, row in table.items():
        per_problem = [pass_at_k(3, sum(p), k) for p in passed]
        assert row["estimate"] == pytest.approx(sum(per_problem) / len(per_problem))
        if len(passed) == 1:
            assert row["stderr"] is row["ci_low"] is row["ci_high"] is None
        else:
            assert 0.0 <= row["ci_low"] <= row["estimate"] + 1e-12 <= row["ci_high"] + 2e-12 <= 1.0 + 2e-12
            if len(set(per_problem)) == 1:
                assert row["stderr"] == pytest.approx(0.0, abs=1e-12)


def test_interval_hand_computed():
    # per-problem pass@1: 1, 0, 0.5, 0.5 -> mean 0.5, sample sd sqrt(1/6), stderr sqrt(1/6)/2
    row = pass_at_k_table([[True, True], [False, False], [True, False], [False, True]])[1]
    stderr = math.sqrt(1 / 6) / 2
    assert row["estimate"] == 0.5 and row["stderr"] == pytest.approx(stderr)
    assert row["ci_low"] == pytest.approx(0.5 - 1.959964 * stderr, abs=1e-5)
    assert row["ci_high"] == pytest.approx(0.5 + 1.959964 * stderr, abs=1e-5)


def test_table_hand_computed():
    table = pass_at_k_table([[True, False], [False, False]])
    assert (table[1]["estimate"], table[2]["estimate"]) == (0.25, 0.5)


def test_uneven_sample_counts_stop_at_the_smallest():
    assert sorted(pass_at_k_table([[True] * 4, [False] * 2])) == [1, 2]
    assert pass_at_k_table([]) == {}


@pytest.mark.parametrize("n, c, k", [(0, 0, 1), (4, 5, 1), (4, -1, 1), (4, 1, 0), (4, 1, 5), (4.0, 1, 1)])
def test_bad_inputs_raise(n, c, k):
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)
