r"""``reasoning_accuracy``: TRL's ``reasoning_accuracy_reward`` semantics on grpo-trl's ``accuracy``.

Only a completion whose reasoning block is closed can score: the answer is read from the text after the reasoning
delimiter (``</think>`` by default); a completion that never closes it scores 0.0.

Example:
    >>> r = ReasoningAccuracy()
    >>> r(["<think>so</think> The answer is \\boxed{4}", "<think>maybe \\boxed{4}"], solution=["4", "4"])
    [1.0, 0.0]
"""

from __future__ import annotations

from grpo_trl.rewards.math import Accuracy
from grpo_trl.rewards.registry import register_reward, text_of


@register_reward("reasoning_accuracy")
class ReasoningAccuracy(Accuracy):
    """``accuracy`` on what follows the reasoning: for the first of ``reasoning_delimiters`` found in a completion,
    the text after its last occurrence (as TRL splits it); 0.0 when none is found (incomplete reasoning, even where the
    gold cannot be parsed, like TRL). ``require_answer_tag`` defaults to false here, as in TRL: a ``\\boxed{}``
    answer after ``</think>`` counts; an ``<answer>`` block, when present, is still preferred.
    """

    def __init__(
        self,
        reasoning_delimiters: list[str] | tuple[str, ...] = ("</think>",),
        timeout: float = 5.0,
        require_answer_tag: bool = False,
        answer_tag: str = "answer",
        workers: int | None = None,
    ):
        if isinstance(reasoning_delimiters, str) or not reasoning_delimiters or not all(reasoning_delimiters):
            raise ValueError("reasoning_delimiters must be a non-empty list of non-empty strings, e.g. ['</think>']")
        super().__init__(
            timeout=timeout, require_answer_tag=require_answer_tag, answer_tag=answer_tag, workers=workers
        )
        self.delimiters = list(reasoning_delimiters)

    def after_reasoning(self, text: str) -> str | None:
        """The text after the closed reasoning block, or None when it is never closed."""
        for delim in self.delimiters:
            at = text.rfind(delim)
            if at >= 0:
                return text[at + len(delim) :]
        return None

    def __call__(self, completions: list, solution: list, **kwargs) -> list[float | None]:
        rests = [self.after_reasoning(t) for t in text_of(completions)]
        if len(solution) != len(rests):
            raise ValueError(f"{len(solution)} solutions for {len(rests)} completions")
        done = [i for i, rest in enumerate(rests) if rest is not None]
        out: list[float | None] = [0.0] * len(rests)
        scores = super().__call__([rests[i] for i in done], [solution[i] for i in done]) if done else []
        for i, score in zip(done, scores):
            out[i] = score
        return out
