"""Naive references for the reward benchmarks: what the write-ups do, kept in the test tree on purpose.

- ``naive_countdown``: the ms-swift CountdownORM (regex gate + ``eval``). Never use it on model output: it is here
  only to be measured against (inputs in the benchmark are known-safe completions).
- ``naive_accuracy``: math-verify ``parse`` of gold and answer for every completion, sequentially (single-GPU
  write-up), with the answer taken from the last ``<answer>`` block like ``accuracy`` does.
"""

from __future__ import annotations

import re

from grpo_trl.rewards.text import completion_text, extract_tag


def naive_countdown(completions, target, nums, **kwargs):
    rewards = []
    for completion, gt, numbers in zip(completions, target, nums):
        completion = completion_text(completion)
        try:
            match = re.search(r"<answer>(.*?)<\/answer>", completion)
            if match is None:
                rewards.append(0.0)
                continue
            equation = match.group(1).strip()
            if "=" in equation:
                equation = equation.split("=")[0]
            used_numbers = [int(n) for n in re.findall(r"\d+", equation)]
            if sorted(used_numbers) != sorted(numbers):
                rewards.append(0.0)
                continue
            if not re.match(r"^[\d+\-*/().\s]+$", equation):
                rewards.append(0.0)
                continue
            result = eval(equation, {"__builtins__": None}, {})  # noqa: S307 - the naive reference, measured only
            rewards.append(1.0 if abs(float(result) - float(gt)) < 1e-5 else 0.0)
        except Exception:  # noqa: BLE001
            rewards.append(0.0)
    return rewards


def naive_accuracy(completions, solution, **kwargs):
    from math_verify import parse, verify

    out = []
    for completion, gold in zip(completions, solution):
        answer = extract_tag(completion_text(completion))
        if answer is None:
            gold_parsed = parse(gold, parsing_timeout=None)
            out.append(None if not gold_parsed else 0.0)
            continue
        gold_parsed = parse(gold, parsing_timeout=None)
        if not gold_parsed:
            out.append(None)
            continue
        out.append(float(verify(gold_parsed, parse(answer, parsing_timeout=None), timeout_seconds=None)))
    return out
