"""Rewards referenced as ``tests.rewards.plugin_module:NAME`` by the registry and fault tests."""

import math
import time


def shouts(completions, **kwargs):
    return [1.0 if c.isupper() else 0.0 for c in completions]


def wrong_length(completions, **kwargs):
    return [1.0] * (len(completions) + 1)


def raises_on_boom(completions, **kwargs):
    if any("boom" in str(c) for c in completions):
        raise RuntimeError("boom")
    return [1.0] * len(completions)


def odd_values(completions, **kwargs):
    return [1.0, None, math.nan, math.inf, "1.0"][: len(completions)]


def sleeps(completions, seconds: float = 1.0, **kwargs):
    time.sleep(seconds)
    return [1.0] * len(completions)


def zero(completions, **kwargs):
    return [0.0] * len(completions)
