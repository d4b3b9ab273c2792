"""Reward functions of the kinds TRL's GRPOTrainer tests use, importable by name (``module.path:function``) so a
recipe can list the same function the plain ``GRPOTrainer`` side receives."""

from __future__ import annotations


def _text(completion) -> str:
    return completion if isinstance(completion, str) else completion[0]["content"]


def length(completions, **kwargs) -> list[float]:
    """Longer completions score more (standard or conversational)."""
    return [float(len(_text(c))) for c in completions]


def one(completions, **kwargs) -> list[float]:
    return [1.0 for _ in completions]


def zero(completions, **kwargs) -> list[float]:
    return [0.0 for _ in completions]


def unique_letters(completions, **kwargs) -> list[float]:
    return [float(len(set(_text(c)))) for c in completions]


async def async_unique_letters(completions, **kwargs) -> list[float]:
    return unique_letters(completions)


def never(completions, **kwargs) -> list[None]:
    """Not applicable to any row: TRL ignores a None reward."""
    return [None] * len(completions)


def near_value(completions, some_values, **kwargs) -> list[float]:
    """Reads a dataset column beside the prompt."""
    return [float(abs(len(_text(c)) - v)) for c, v in zip(completions, some_values, strict=True)]


def reads_trainer_state(completions, trainer_state=None, **kwargs) -> list[float]:
    assert trainer_state is not None and hasattr(trainer_state, "global_step")
    return unique_letters(completions)


def logs_extra(completions, log_extra=None, **kwargs) -> list[float]:
    log_extra("test_column", [_text(c)[:5] for c in completions])
    return length(completions)


def logs_metric(completions, log_metric=None, **kwargs) -> list[float]:
    log_metric("custom_accuracy", 0.75)
    return length(completions)


def records_rows(completions, n, **kwargs) -> list[float]:
    """Appends the ``n`` column of the rows it scores to the file ``$GRPO_TRL_SEEN`` names (one line per call)."""
    import json
    import os

    with open(os.environ["GRPO_TRL_SEEN"], "a") as fh:
        fh.write(json.dumps(list(n)) + "\n")
    return length(completions)
