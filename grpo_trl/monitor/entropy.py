"""The sign of entropy collapse: the policy's token entropy (TRL's ``entropy`` metric) has fallen far below its early
level while the training reward has not risen, so the model stopped exploring without learning the task.
:class:`grpo_trl.monitor.callbacks.Alerts` reports it as ``entropy_collapse`` after ``alert_patience`` such logs.

Example:
    >>> c = Collapse()
    >>> [c.sign({"entropy": e, "reward": 0.3, "reward_std": 0.2}) is not None for e in (1.2, 1.0, 0.8, 0.5, 0.1)]
    [False, False, False, False, True]
"""

from __future__ import annotations

import math
from typing import Any

KIND = "entropy_collapse"
EARLY_LOGS = 3  # the early level: the mean of the first logs that carry entropy and reward
FRACTION = 0.2  # collapsed: entropy below this fraction of its early level
FLAT_GAIN = 0.05  # flat: reward gained less than the early reward_std (this when reward_std is not logged)


def _finite(value: Any) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


class Collapse:
    """Fed every training log in order; :meth:`sign` says whether this log shows the collapse, and why.

    The early level is the mean entropy, reward and ``reward_std`` of the first ``EARLY_LOGS`` logs with a finite
    entropy and reward. A later log is a sign when its entropy is below ``FRACTION`` of the early entropy while its
    reward is less than one early ``reward_std`` (the spread between a prompt's completions; ``FLAT_GAIN`` without it)
    above the early reward: a task being solved may lower entropy, a flat reward says it is not being solved.
    """

    def __init__(self) -> None:
        self.early: list[tuple[float, float, float | None]] = []

    def sign(self, logs: dict) -> str | None:
        entropy, reward = _finite(logs.get("entropy")), _finite(logs.get("reward"))
        if entropy is None or reward is None:
            return None
        if len(self.early) < EARLY_LOGS:
            self.early.append((entropy, reward, _finite(logs.get("reward_std"))))
            return None
        level = sum(e for e, _, _ in self.early) / EARLY_LOGS
        base = sum(r for _, r, _ in self.early) / EARLY_LOGS
        stds = [s for _, _, s in self.early if s is not None]
        flat = sum(stds) / len(stds) if stds else FLAT_GAIN
        if level <= 0 or entropy >= FRACTION * level or reward - base >= max(flat, 1e-9):
            return None
        return (
            f"entropy fell to {entropy:.3g} from its early {level:.3g} (below {FRACTION:g}x) while the reward stayed "
            f"flat ({base:.3f} -> {reward:.3f}): the policy stopped exploring without learning the task. Raise "
            "trainer.temperature, lower the learning rate, add trainer.beta (KL to the reference), or clip higher "
            "(trainer.epsilon_high); completions.jsonl shows whether the samples of a prompt became identical"
        )
