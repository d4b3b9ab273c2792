r"""``reasoning_accuracy``: TRL's ``reasoning_accuracy_reward`` on grpo-trl's ``accuracy``: the answer is read after
the reasoning delimiter (``</think>``); a completion that never closes it scores 0.0.

    >>> r = ReasoningAccuracy()
    >>> r(["<think>so</think> The answer is \\boxed{4}", "<think>maybe \\boxed{4}"], solution=["4", "4"])
    [1.0, 0.0]
"""

from __future__ import annotations

from grpo_trl.rewards.math import Accuracy
from grpo_trl.rewards.registry import register_reward, text_of


@register_reward("reasoning_accuracy")
class ReasoningAccuracy(Accuracy):
    """``accuracy`` on the text after the last occurrence of the first of ``reasoning_delimiters`` found (as TRL);
    0.0 when none is (even for an unparseable gold, like TRL). ``require_answer_tag`` is false by default, as TRL."""

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
