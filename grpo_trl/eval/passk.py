"""pass@k with the unbiased estimator of Chen et al. (2021), "Evaluating Large Language Models Trained on Code".

For a problem with ``n`` samples of which ``c`` pass, ``pass@k = 1 - C(n-c, k) / C(n, k)``: the probability that at
least one of ``k`` samples drawn without replacement from the ``n`` passes. It is computed as the paper does, as a
product (no huge binomials). The estimate over a set of problems is the mean of the per-problem values, with a normal
confidence interval over problems (the spread between problems, not between samples; ``None`` with one problem).

Example:
    >>> pass_at_k(4, 1, 1), pass_at_k(4, 1, 2), pass_at_k(4, 0, 3), pass_at_k(4, 2, 3)
    (0.25, 0.5, 0.0, 1.0)
    >>> table = pass_at_k_table([[True, False], [False, False]])
    >>> table[1]["estimate"], table[2]["estimate"]
    (0.25, 0.5)
"""

from __future__ import annotations

import math
from statistics import NormalDist


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one problem with ``n`` samples, ``c`` of them passing (``1 <= k <= n``)."""
    if not (isinstance(n, int) and isinstance(c, int) and isinstance(k, int)) or not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need integers 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    fail = 1.0
    for i in range(n - c + 1, n + 1):
        fail *= 1.0 - k / i
    return 1.0 - fail


def pass_at_k_table(passed: list[list[bool]], confidence: float = 0.95) -> dict[int, dict]:
    """``{k: {"estimate", "stderr", "ci_low", "ci_high"}}`` for every ``k`` up to the smallest number of samples of a
    problem, from per-problem lists of pass flags. The interval is ``estimate ± z * stderr`` over problems, clipped
    to [0, 1]; ``stderr`` and the bounds are ``None`` with fewer than two problems."""
    if not passed:
        return {}
    n_min = min(len(p) for p in passed)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    table: dict[int, dict] = {}
    for k in range(1, n_min + 1):
        values = [pass_at_k(len(p), sum(map(bool, p)), k) for p in passed]
        mean = math.fsum(values) / len(values)
        stderr = low = high = None
        if len(values) > 1:
            var = math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1)
            stderr = math.sqrt(var / len(values))
            low, high = max(0.0, mean - z * stderr), min(1.0, mean + z * stderr)
        table[k] = {"estimate": mean, "stderr": stderr, "ci_low": low, "ci_high": high}
    return table
