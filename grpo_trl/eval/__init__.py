"""Evaluation that scales past a notebook: ``grpo-trl eval`` and ``grpo-trl filter``.

- :mod:`grpo_trl.eval.backends`: generation with transformers, offline vLLM, or an OpenAI-compatible endpoint;
- :mod:`grpo_trl.eval.score`: the recipe's rewards on the completions, identical whatever the backend;
- :mod:`grpo_trl.eval.passk`: pass@k (Chen et al., 2021) for every k <= n with an interval over problems;
- :mod:`grpo_trl.eval.run`: ``evaluate`` (``eval.json`` + ``eval_completions.jsonl``).

Example:
    >>> from grpo_trl.eval import pass_at_k
    >>> round(pass_at_k(n=8, c=2, k=4), 4)
    0.7857
"""

from grpo_trl.eval.backends import BACKENDS, Generations, Sampling, generate
from grpo_trl.eval.passk import pass_at_k, pass_at_k_table
from grpo_trl.eval.run import evaluate

__all__ = ["BACKENDS", "Generations", "Sampling", "evaluate", "generate", "pass_at_k", "pass_at_k_table"]
