"""Held-out accuracy during training: the ``heldout:`` section and its checks, the metric names (``heldout/pass@<k>``,
``heldout/greedy/pass@1``...; the evaluation is ``grpo_trl.eval.during``) and :class:`Divergence`, training reward
up while held-out accuracy falls (the ``heldout_diverging`` alert)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from grpo_trl.errors import Problem
from grpo_trl.fields import Section, YamlFloat

PREFIX = "heldout/"
TIME_KEY = "heldout/time_s"
GREEDY_KEY = "heldout/greedy/pass@1"
ACCURACY_KEYS = ("heldout/pass@1", GREEDY_KEY)  # the held-out accuracy the alert follows: sampled, else greedy
KIND = "heldout_diverging"
# grpo_trl/eval/benchmarks.yaml's names (a higher layer; tests/monitor/test_heldout.py keeps the two equal)
BENCHMARKS = ("math500", "aime24", "aime25", "gsm8k", "gpqa-diamond", "humaneval")


class HeldoutSection(Section):
    """Held-out pass@k on the eval split every N steps during training, and an alert when it falls as reward rises."""

    every: int = Field(50, ge=1, description="evaluate every N optimizer steps (and at the last step)")
    at_start: bool = Field(True, description="also evaluate before the first step: the baseline")
    limit: int = Field(32, ge=1, description="prompts of the eval split evaluated each time (the first N)")
    n: int = Field(4, ge=1, description="sampled completions per prompt (pass@k for k <= n)")
    k: list[int] | None = Field(None, description="the k of the pass@k logged (default: 1 and n)")
    sampled: bool = Field(True, description="sample n completions per prompt at the temperature")
    greedy: bool = Field(True, description="also one greedy completion per prompt (heldout/greedy/pass@1)")
    temperature: YamlFloat | None = Field(
        None, gt=0, description="sampling temperature (default: trainer's; greedy is greedy: true)"
    )
    max_new_tokens: int | None = Field(None, ge=1, description="default: trainer.max_completion_length")
    batch_size: int = Field(16, ge=1, description="prompts per generate() call")
    seed: int = Field(0, ge=0, le=2**32 - 1, description="sampling seed (plus the step)")
    benchmark: Literal[BENCHMARKS] | None = Field(  # type: ignore[valid-type]
        None, description="a standard benchmark (as grpo-trl eval --benchmark) instead of the eval split"
    )
    data: str | None = Field(None, description="with benchmark: a local copy of its data (default: the Hub)")
    min_drop: YamlFloat = Field(
        0.1, gt=0, le=1, description="a fall of held-out accuracy below its best that is more than noise"
    )


def ks(section: dict) -> list[int]:
    """The k of the pass@k logged: ``section['k']``, else 1 and n."""
    return sorted(set(section.get("k") or [1, section["n"]]))


def heldout_problems(section: dict, data: dict, file: str) -> list[Problem]:
    """What ``check`` says of a (coerced) ``heldout:`` section beyond its types: an eval split, k <= n."""
    out = []
    if section.get("data") and not section.get("benchmark"):
        out.append(Problem(file, "heldout.data", "is a benchmark's local copy, and no heldout.benchmark is named"))
    local = section.get("data") and Path(file).parent / section["data"]
    if local and not local.is_file():
        out.append(Problem(file, "heldout.data", f"{section['data']!r} is not a file (relative to the recipe)"))
    if not (section.get("benchmark") or data.get("eval_size") or data.get("eval_split")):
        fix = "set data.eval_size: N (rows held out of training), data.eval_split or heldout.benchmark"
        out.append(Problem(file, "heldout", "needs an eval split to evaluate on, and the recipe has none", fix))
    if not (section["sampled"] or section["greedy"]):
        out.append(Problem(file, "heldout", "evaluates nothing: sampled and greedy are both false", "turn one on"))
    bad = [k for k in section.get("k") or [] if not 1 <= k <= section["n"]]
    if section["sampled"] and bad:
        why = f"pass@{bad[0]} needs 1 <= k <= n, and heldout.n is {section['n']}"
        out.append(Problem(file, "heldout.k", why, f"raise heldout.n to {max(bad)} or drop {bad[0]} from heldout.k"))
    return out


def finite(value: Any) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def is_heldout(logs: dict) -> bool:
    return any(k.startswith(PREFIX) for k in logs)


def accuracy(logs: dict) -> tuple[str, float] | None:
    """``(key, value)`` of the held-out accuracy in a log entry (sampled pass@1, else greedy), or None."""
    for key in ACCURACY_KEYS:
        value = finite(logs.get(key))
        if value is not None:
            return key, value
    return None


@dataclass
class Point:
    step: int
    accuracy: float
    reward: float | None  # mean training reward logged since the previous evaluation


class Divergence:
    """Fed every training log (``train``) and held-out entry (``evaluated``): an evaluation diverges when its accuracy
    is ``min_drop`` below the best so far while the mean training reward since the last one is above the best's;
    ``streak`` counts them in a row (no finite accuracy: no evidence)."""

    def __init__(self, min_drop: float = 0.1):
        self.min_drop = min_drop
        self.points: list[Point] = []
        self.pending: list[float] = []
        self.streak = 0

    def train(self, logs: dict) -> None:
        reward = finite(logs.get("reward"))
        if reward is not None:
            self.pending.append(reward)

    def evaluated(self, step: int, logs: dict) -> str | None:
        """Record one evaluation; the message naming both trends when it diverges, else None."""
        found = accuracy(logs)
        if found is None:
            return None
        key, value = found
        reward = sum(self.pending) / len(self.pending) if self.pending else None
        self.pending = []
        for p in self.points:
            if p.reward is None:
                p.reward = reward
        best = max(self.points, key=lambda p: p.accuracy, default=None)  # the first of equals
        self.points.append(Point(step, value, reward))
        diverging = (
            best is not None
            and reward is not None
            and best.reward is not None
            and best.accuracy - value >= self.min_drop - 1e-12
            and reward > best.reward
        )
        self.streak = self.streak + 1 if diverging else 0
        if not diverging:
            return None
        return (
            f"training reward rose {best.reward:.3f} -> {reward:.3f} while held-out {key[len(PREFIX) :]} fell "
            f"{best.accuracy:.3f} -> {value:.3f} (best at step {best.step}, {self.streak} evaluation(s) in a row "
            f"below it by >= heldout.min_drop {self.min_drop:g}): the reward pays for something the task does not "
            f"(a lenient format reward, a leaky judge?); read completions.jsonl, and prefer the model of step "
            f"{best.step}"
        )
