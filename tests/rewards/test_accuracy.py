"""accuracy's math-verify runner: per-item deadlines from any thread, identical scores to plain math-verify."""

from __future__ import annotations

import threading
import time

from grpo_trl.rewards import get_reward
from grpo_trl.rewards.math import MathVerifier, math_form


def test_hanging_item_is_cut_off_off_the_main_thread_and_the_rest_still_scored():
    reward = get_reward("accuracy", timeout=1.0)
    reward(["<answer>x</answer>"], solution=["x"])  # start the child (start-up is not part of the item budget)
    texts = ["<answer>1/2</answer>", "<answer>9^{9^{9^{9}}}</answer>", "<answer>0.5</answer>", "<answer>2</answer>"]
    box = {}

    def call():
        start = time.perf_counter()
        box["scores"] = reward(texts, solution=["\\frac{1}{2}", "1", "\\frac{1}{2}", "3"])
        box["elapsed"] = time.perf_counter() - start

    worker = threading.Thread(target=call)  # TRL's async path scores rewards off the main thread
    worker.start()
    worker.join(30)
    assert box["scores"] == [1.0, 0.0, 1.0, 0.0]
    assert (
        box["elapsed"] < 1.0 + 15.0
    )  # one item's budget plus a fresh child's start-up (importing sympy; slow when busy)
    assert reward.func.verifier.timeouts == 1


def test_same_scores_as_plain_math_verify_on_the_math_form():
    """accuracy = math-verify's verify(parse(gold), parse(answer)): bare LaTeX goes between $...$ and is read with
    TRL's LaTeX-only extraction; prose is read with math-verify's default extraction."""
    from math_verify import LatexExtractionConfig, parse, verify

    latex = [LatexExtractionConfig(boxed_match_priority=0)]
    golds = ["72", "\\frac{1}{2}", "0.5", "1000", "3", "", "x+1", "-4", "2\\sqrt{3}"]
    answers = [
        "72",
        "0.5",
        "1/2",
        "1,000",
        "$3$",
        "7",
        "1+x",
        "-4.0",
        "seventy",
        "\\sqrt{9}",
        "2",
        "\\sqrt{12}",
        "is 3",
    ]
    texts, sols, expected = [], [], []
    for g in golds:
        for a in answers:
            texts.append(f"<answer>{a}</answer>")
            sols.append(g)
            gp = parse(math_form(g), parsing_timeout=None)
            if math_form(a) != a:
                ap = parse(math_form(a), latex, extraction_mode="first_match", parsing_timeout=None)
            else:
                ap = parse(a, parsing_timeout=None)
            expected.append(None if not gp else float(verify(gp, ap)))
    assert get_reward("accuracy")(texts, solution=sols) == expected
    assert expected[golds.index("2\\sqrt{3}") * len(answers) + answers.index("2")] == 0.0  # not read as 2
    assert expected[golds.index("3") * len(answers) + answers.index("\\sqrt{9}")] == 1.0
    assert expected[golds.index("3") * len(answers) + answers.index("is 3")] == 1.0


def test_large_batches_do_not_deadlock_and_cache_hits():
    verifier = MathVerifier(timeout=5.0)
    pairs = [(str(i % 50), f"{i % 50}.0") for i in range(3000)]  # non-integer answers: all through the child
    start = time.perf_counter()
    assert verifier.score(pairs) == [1.0] * 3000
    assert time.perf_counter() - start < 60
    start = time.perf_counter()
    assert verifier.score(pairs) == [1.0] * 3000  # cached
    assert time.perf_counter() - start < 0.5
    verifier.close()
