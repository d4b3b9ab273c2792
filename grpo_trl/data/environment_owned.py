"""``builder: environment``: no dataset, the environment owns the data.

TRL 1.16 trains without a ``train_dataset`` when an environment's ``reset()`` returns the prompt: it drives the loop
with rows of one empty user turn and ``max_steps`` sets the length. This builder gives those rows, so a recipe with an
``environment:`` section trains the same way; ``reset()`` gets no dataset columns and appends its prompt to the empty
turn, as in TRL. ``size`` is the number of placeholder rows (one epoch); ``trainer.max_steps`` bounds the run.

With several environments, TRL's documented dataset only routes (``{"environment": ["coding", "game"] * 500}``, no
prompt): ``environments: [coding, game]`` gives that ``environment`` column, the names in turn, row by row.

Example:
    >>> environment(size=2)["user"][:]
    ['', '']
    >>> environment(size=3, environments=["coding", "game"])["environment"][:]
    ['coding', 'game', 'coding']
"""

from __future__ import annotations

from grpo_trl.data.registry import register_builder


def _columns(options: dict, base_dir) -> tuple[str, ...]:
    return ("environment",) if options.get("environments") else ()


@register_builder("environment", system_prompt="none", columns=_columns)  # the environment holds the task
def environment(split: str = "train", *, size: int = 64, environments: list[str] | None = None):
    """Placeholder rows (one empty user turn each) for an environment whose ``reset()`` returns the prompt;
    ``environments``: names for an ``environment`` column routing each row (several environments)."""
    from datasets import Dataset

    rows: dict[str, list] = {"user": [""] * size}
    if environments:
        rows["environment"] = [environments[i % len(environments)] for i in range(size)]
    return Dataset.from_dict(rows)
