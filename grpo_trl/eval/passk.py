"""pass@k by the unbiased estimator of Chen et al. (2021): ``1 - C(n-c, k) / C(n, k)`` as the paper's product, and
its mean over problems with a normal interval over problems (``None`` with one problem)."""

from __future__ import annotations

import math
from statistics import NormalDist, stdev


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one problem with ``n`` samples, ``c`` of them passing (``1 <= k <= n``)."""
    if not all(isinstance(v, int) for v in (n, c, k)) or not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need integers 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1)) if n - c >= k else 1.0


def pass_at_k_table(passed: list[list[bool]], confidence: float = 0.95) -> dict[int, dict]:
    """``{k: {"estimate", "stderr", "ci_low", "ci_high"}}`` for every ``k`` up to the fewest samples of a problem;
    the interval is ``estimate ± z * stderr`` over problems, clipped to [0, 1]."""
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    table: dict[int, dict] = {}
    for k in range(1, min(map(len, passed), default=0) + 1):
        values = [pass_at_k(len(p), sum(map(bool, p)), k) for p in passed]
        mean = math.fsum(values) / len(values)
        stderr = stdev(values) / math.sqrt(len(values)) if len(values) > 1 else None
        low, high = (None, None) if stderr is None else (max(0.0, mean - z * stderr), min(1.0, mean + z * stderr))
        table[k] = {"estimate": mean, "stderr": stderr, "ci_low": low, "ci_high": high}
    return table
