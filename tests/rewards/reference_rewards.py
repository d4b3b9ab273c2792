"""The project's reference reward functions, test-local: grpo-trl's built-ins are compared with them on the labelled
corpus (``labelled_corpus.py``). Kept in the test tree only; nothing in ``grpo_trl`` imports them.

- ``seed003_correctness``: seed 003 (``shared/seeds/003_*.txt``), ``correctness_reward`` as its code block writes
  it (2.0 exact, 1.5 numeric), with its ``extract_answer_from_model_output``. The seed names
  ``extract_single_number`` without showing it; it is written here as the tutorial the seed describes defines it:
  the one number in the string (regex ``-?\\d*\\.?\\d+``), else None.
- ``seed003_format``: seed 003's ``format_reward`` (0.2 per reasoning/answer tag present).
- ``seed004_accuracy`` / ``seed004_format`` / ``seed004_tag_count`` / ``seed004_reasoning_steps``: seed 004's
  ``src/reward.py`` code block (one completion per call there; a list here, in TRL's signature).
- ``open_r1_accuracy``: open-r1's ``accuracy_reward`` (``src/open_r1/rewards.py``), re-expressed from reading its
  source because open-r1 is not installed (and not importable without its training stack): math-verify ``parse`` of
  the gold (first match), LaTeX-only ``parse`` of the whole completion with its normalization config, ``verify``.
  TRL's ``accuracy_reward`` is not re-expressed: the tests import it from the installed TRL.
"""

from __future__ import annotations

import re

from grpo_trl.rewards.text import completion_text


# ------------------------------------------------------------------------------------------------ seed 003
def _seed003_extract(text):
    parts = text.split("<answer>")
    if len(parts) < 2:
        return None
    last_part = parts[-1]
    if "</answer>" not in last_part:
        return None
    answer = last_part.split("</answer>")[0].strip()
    return None if answer == "..." else answer


def _seed003_single_number(text):
    numbers = re.findall(r"-?\d*\.?\d+", text)
    return float(numbers[0]) if len(numbers) == 1 else None


def seed003_correctness(completions, answer, **kwargs):
    extracted = [_seed003_extract(completion_text(c)) for c in completions]
    rewards = []
    for r, a in zip(extracted, answer):
        if r == a:
            rewards.append(2.0)
        else:
            r_num = _seed003_single_number(str(r))
            a_num = _seed003_single_number(str(a))
            if r_num is not None and a_num is not None and r_num == a_num:
                rewards.append(1.5)
            else:
                rewards.append(0.0)
    return rewards


def seed003_format(completions, **kwargs):
    rewards = []
    for response in map(completion_text, completions):
        score = 0.0
        if "<reasoning>" in response:
            score += 0.2
        if "</reasoning>" in response:
            score += 0.2
        if "<answer>" in response:
            score += 0.2
        if "</answer>" in response:
            score += 0.2
        rewards.append(score)
    return rewards


# ------------------------------------------------------------------------------------------------ seed 004
def _seed004_extract(text):
    match = re.search(r"<answer>\n(.*?)\n</answer>", text, re.DOTALL)
    if match:
        return match.group(1).strip()
    return None


def _seed004_accuracy_one(completion, solution):
    from math_verify import parse, verify

    full_answer_content = _seed004_extract(completion)
    if full_answer_content is None:
        return 0.0
    gold_parsed = parse(solution, parsing_timeout=None)
    answer_parsed = parse(full_answer_content, parsing_timeout=None)
    try:
        return float(verify(gold_parsed, answer_parsed, timeout_seconds=None))
    except Exception:  # noqa: BLE001 - as the seed does
        return 0.0


def seed004_accuracy(completions, solution, **kwargs):
    return [_seed004_accuracy_one(completion_text(c), s) for c, s in zip(completions, solution)]


def seed004_format(completions, **kwargs):
    pattern = r"^<think>\n.*?\n</think>\n<answer>\n.*?\n</answer>$"
    return [1.0 if re.match(pattern, completion_text(c), re.DOTALL | re.MULTILINE) else 0.0 for c in completions]


def seed004_tag_count(completions, **kwargs):
    out = []
    for completion in map(completion_text, completions):
        score = 0.0
        for mark in ("<think>\n", "\n</think>\n", "\n<answer>\n", "\n</answer>"):
            if completion.count(mark) == 1:
                score += 0.25
        out.append(score)
    return out


def seed004_reasoning_steps(completions, **kwargs):
    pattern = r"(Step \d+:|^\d+\.|\n-|\n\*|First,|Second,|Next,|Finally,)"
    return [min(1.0, len(re.findall(pattern, completion_text(c))) / 3) for c in completions]


# ------------------------------------------------------------------------------------------------ open-r1
def open_r1_accuracy(completions, solution, **kwargs):
    from latex2sympy2_extended import NormalizationConfig
    from math_verify import LatexExtractionConfig, parse, verify

    config = LatexExtractionConfig(
        normalization_config=NormalizationConfig(
            nits=False, malformed_operators=False, basic_latex=True, equations=True, boxed="all", units=True
        ),
        boxed_match_priority=0,
        try_extract_without_anchor=False,
    )
    rewards = []
    for content, sol in zip(map(completion_text, completions), solution):
        gold_parsed = parse(sol, extraction_mode="first_match", parsing_timeout=None)
        if len(gold_parsed) != 0:
            answer_parsed = parse(
                content, extraction_config=[config], extraction_mode="first_match", parsing_timeout=None
            )
            try:
                reward = float(verify(gold_parsed, answer_parsed, timeout_seconds=None))
            except Exception:  # noqa: BLE001 - as open-r1 does
                reward = None
        else:
            reward = None
        rewards.append(reward)
    return rewards
