"""``builder: environment``: no dataset, the environment owns the data.

TRL 1.16 trains without a ``train_dataset`` when an environment's ``reset()`` returns the prompt: it drives the loop
with rows of one empty user turn and ``max_steps`` sets the length. This builder gives those rows, so a recipe with an
``environment:`` section trains the same way; ``reset()`` gets no dataset columns and appends its prompt to the empty
turn, as in TRL. ``size`` is the number of placeholder rows (one epoch); ``trainer.max_steps`` bounds the run.

Example:
    >>> environment(size=2)["user"][:]
    ['', '']
"""

from __future__ import annotations

from grpo_trl.data.registry import register_builder


@register_builder("environment", system_prompt="none")  # no reward columns: the environment holds the task
def environment(split: str = "train", *, size: int = 64):
    """Placeholder rows (one empty user turn each) for an environment whose ``reset()`` returns the prompt."""
    from datasets import Dataset

    return Dataset.from_dict({"user": [""] * size})
