"""``grpo-trl eval`` and ``filter``: generation backends (``backends``), the recipe's rewards on the completions
(``score``), pass@k with intervals, ``evaluate`` (``run``), standard benchmarks and ``heldout:``."""

from grpo_trl.eval.backends import BACKENDS, Generations, Sampling, generate
from grpo_trl.eval.run import evaluate
from grpo_trl.eval.score import pass_at_k, pass_at_k_table

__all__ = ["BACKENDS", "Generations", "Sampling", "evaluate", "generate", "pass_at_k", "pass_at_k_table"]
