"""Table tests for every built-in reward, including the completions quoted in the Countdown write-up."""

from __future__ import annotations

import pytest

from grpo_trl.rewards import get_reward

STEP_1 = """<think>
We need to create an equation using the given numbers [70, 5, 42, 30] exactly once and make it equal to 77.
So, (70 - 42) * (30 / 5) = 77.
</think>
<answer>(70 - 42) * (30 / 5) = 77</answer>"""
STEP_2000 = """<think>
(78 + 9) - (58 - 44) = 87 - 14 = 73
</think>
<answer>(78 + 9) - (58 - 44) = 73</answer>"""


@pytest.mark.parametrize(
    ("completion", "nums", "target", "expected"),
    [
        (STEP_1, [70, 5, 42, 30], 77, 0.0),  # claims the target, evaluates to 168
        (STEP_2000, [58, 9, 78, 44], 73, 1.0),
        ("<answer>73 - 70 + 96 = 99</answer>", [96, 70, 73], 99, 1.0),
        ("<answer>(73 - 56) + 51</answer>", [56, 73, 51], 68, 1.0),  # no "=" part
        ("<answer>(86 + 49) - 50 = 85</answer>", [50, 86, 49], 85, 1.0),
        ("<answer>86 + 49 = 135</answer>", [50, 86, 49], 85, 0.0),  # a number unused
        ("<answer>86 + 49 - 50 - 50</answer>", [50, 86, 49], 35, 0.0),  # a number used twice
        ("<answer>10 / 4 * 2</answer>", [10, 4, 2], 5, 1.0),  # exact rational arithmetic
        ("<answer>8 / (4 - 4) + 1</answer>", [8, 4, 4, 1], 1, 0.0),  # division by zero
        ("<answer>2 ** 3</answer>", [2, 3], 8, 0.0),  # no exponentiation
        ("<answer>1.5 * 2</answer>", [1, 5, 2], 3, 0.0),  # integers only
        ("<answer>__import__('os')</answer>", [1], 1, 0.0),
        ("no answer at all: 1 + 2 = 3", [1, 2], 3, 0.0),
        ("<answer>1 + 2</answer> then <answer>2 + 2</answer>", [2, 2], 4, 1.0),  # the last answer counts
        ("<answer>-3 + 10</answer>", [3, 10], 7, 1.0),
        ("<answer>١ + ٢</answer>", [1, 2], 3, 0.0),  # unicode digits are not Countdown numbers
        pytest.param("<answer>1 + 2</answer>", [1, 2], 10**400, 0.0, id="target-past-float"),  # was OverflowError
    ],
)
def test_countdown(completion, nums, target, expected):
    reward = get_reward("countdown")
    assert reward([completion], nums=[nums], target=[target]) == [expected]
    assert reward([[{"role": "assistant", "content": completion}]], nums=[nums], target=[target]) == [expected]


def test_countdown_accepts_string_columns():
    assert get_reward("countdown")(["<answer>1 + 2</answer>"], nums=["[1, 2]"], target=["3"]) == [1.0]


@pytest.mark.parametrize(
    ("completion", "prefilled", "expected"),
    [
        ("<think>\nplan\n</think>\n<answer>\n4\n</answer>", False, 1.0),
        ("<think>\nplan\n</think>\n<answer>\n4\n</answer>\n", False, 0.0),  # anchored at the end
        ("x<think>\nplan\n</think>\n<answer>\n4\n</answer>", False, 0.0),  # anchored at the start
        ("<think>plan</think><answer>4</answer>", False, 0.0),  # newlines are part of the format
        ("plan\n</think>\n<answer>\n4\n</answer>", True, 1.0),  # template opened <think>
        ("plan\n</think>\n<answer>\n4\n</answer>", False, 0.0),
        ("<think>\na\n<think>\nb\n</think>\n<answer>\n4\n</answer>", False, 0.0),  # a nested second <think>
    ],
)
def test_think_format(completion, prefilled, expected):
    assert get_reward("think_format", prefilled_think=prefilled)([completion]) == [expected]


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("<think>\nx\n</think>\n<answer>\n4\n</answer>", 1.0),
        ("<think>\nx\n</think>\n", 0.5),
        ("<think>\n<think>\nx\n</think>\n<answer>\n4\n</answer>", 0.75),
        ("", 0.0),
    ],
)
def test_tag_count(completion, expected):
    assert get_reward("tag_count")([completion]) == [expected]


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("Step 1: a\nStep 2: b\nStep 3: c", 1.0),
        ("First, a. Next, b.", 2 / 3),
        ("1. a\n2. b\n3. c\n4. d", 1.0),
        ("nothing", 0.0),
    ],
)
def test_reasoning_steps(completion, expected):
    assert get_reward("reasoning_steps")([completion]) == [pytest.approx(expected)]


@pytest.mark.parametrize(
    ("completion", "solution", "expected"),
    [
        ("<reasoning>48/2=24</reasoning><answer>72</answer>", "72", 2.0),
        ("<answer>72.0</answer>", "72", 1.5),
        ("<answer>$72</answer>", "72", 1.5),
        ("<answer>1,234 dollars</answer>", "1234", 1.5),
        ("<answer>71</answer>", "72", 0.0),
        ("The total is \\boxed{72}.", "72", 2.0),  # untagged: scored with require_answer_tag=False (below)
        ("so #### 72", "72", 2.0),
        ("I think it is 70 or maybe 72", "72", 2.0),  # last-number fallback: "72" matches exactly
        ("no number here", "72", 0.0),
        ("<answer>72.</answer>", "72", 2.0),
        ("<answer>1,200</answer>", "1200", 2.0),  # the builder strips the gold's commas: still the same string
        ("<answer>**1{,}200**.</answer>", "1200", 2.0),
        ("<answer>$\\boxed{72}$</answer>", "72", 2.0),
        ("<answer>The answer is 72.</answer>", "72", 1.5),
        ("<answer>1\\,200</answer>", "200", 0.0),  # a LaTeX thousands separator, not "1 200"
    ],
)
def test_gsm8k(completion, solution, expected):
    tagged = "<answer>" in completion
    assert get_reward("gsm8k", require_answer_tag=tagged)([completion], solution=[solution]) == [expected]
    if not tagged:  # the fallback is an option: by default a completion without <answer> scores 0
        assert get_reward("gsm8k")([completion], solution=[solution]) == [0.0]


def test_gsm8k_last_number_fallback_is_opt_in():
    text = "The answer is 471. (Not 464.)"
    assert get_reward("gsm8k")([text], solution=["464"]) == [0.0]
    assert get_reward("gsm8k", require_answer_tag=False)([text], solution=["464"]) == [2.0]  # the fallback's risk


def test_gsm8k_weights_are_arguments():
    assert get_reward("gsm8k", exact=1.0, numeric=0.5)(
        ["<answer>72</answer>", "<answer>72.0</answer>"], solution=["72", "72"]
    ) == [1.0, 0.5]


@pytest.mark.parametrize(
    ("completion", "tags", "expected"),
    [
        ("<reasoning>r</reasoning>\n<answer>4</answer>", None, 0.8),
        ("<reasoning>r", None, 0.2),
        ("<think>t</think><answer>4</answer>", ["think", "answer"], 0.8),
        ("plain", None, 0.0),
    ],
)
def test_xml_format(completion, tags, expected):
    args = {"tags": tags} if tags else {}
    assert get_reward("xml_format", **args)([completion]) == [pytest.approx(expected)]


@pytest.mark.parametrize(
    ("completion", "solution", "expected"),
    [
        ("<answer>72</answer>", "72", 1.0),
        ("<answer>\\frac{1}{2}</answer>", "0.5", 1.0),
        ("<answer>0.5</answer>", "\\frac{1}{2}", 1.0),
        ("<answer>$\\sqrt{4}$</answer>", "2", 1.0),
        ("<answer>007</answer>", "7", 1.0),  # leading zeros go through math-verify, not the integer fast path
        ("<answer>73</answer>", "72", 0.0),
        ("72", "72", 0.0),  # no <answer> block
        # issue 19: right answers as models write them (they scored 0), and wrong ones in the same forms
        ("<answer>72.</answer>", "72", 1.0),
        ("<answer>**72**</answer>", "72", 1.0),
        ("<answer>x = 72.</answer>", "72", 1.0),
        ("<answer>\\boxed{The answer is 72.}</answer>", "72", 1.0),
        ("<answer>The answer is 2\\sqrt{3}.</answer>", "2\\sqrt{3}", 1.0),
        ("<answer>**73.**</answer>", "72", 0.0),
        ("<answer>x = 7.2</answer>", "72", 0.0),
        ("<answer>\\boxed{The answer is 720.}</answer>", "72", 0.0),
        ("<answer>The answer is 2\\sqrt{3}.</answer>", "2", 0.0),
    ],
)
def test_accuracy(completion, solution, expected):
    assert get_reward("accuracy")([completion], solution=[solution]) == [expected]


def test_accuracy_unparseable_gold_is_none():
    assert get_reward("accuracy")(["<answer>1</answer>", "no answer"], solution=["", ""]) == [None, None]


def test_accuracy_without_answer_tag_requirement():
    assert get_reward("accuracy", require_answer_tag=False)(["the answer is $\\boxed{72}$"], solution=["72"]) == [1.0]


def test_cosine_prefers_short_correct_answers():
    reward = get_reward("cosine", max_len=100)
    ids_short, ids_long = [[0] * 10], [[0] * 90]
    short = reward(["<answer>7</answer>"], solution=["7"], completion_ids=ids_short)[0]
    long = reward(["<answer>7</answer>"], solution=["7"], completion_ids=ids_long)[0]
    wrong_short = reward(["<answer>8</answer>"], solution=["7"], completion_ids=ids_short)[0]
    wrong_long = reward(["<answer>8</answer>"], solution=["7"], completion_ids=ids_long)[0]
    assert 1.0 >= short > long >= 0.5
    assert -1.0 <= wrong_short < wrong_long <= -0.5


def test_repetition_penalty_and_soft_overlong_wrap_trl():
    rep = get_reward("repetition_penalty", ngram_size=2)
    assert rep(["x"] * 2, completion_ids=[[1, 2, 3, 4], [1, 1, 1, 1]]) == [0.0, pytest.approx(-2 / 3)]
    assert rep(["a b a b a b", "a b c d"]) == [pytest.approx(-0.6), 0.0]  # words when no token ids
    over = get_reward("soft_overlong", max_completion_len=10, soft_punish_cache=5)
    assert over(["x"] * 3, completion_ids=[[0] * 4, [0] * 8, [0] * 12]) == [0.0, pytest.approx(-0.6), -1.0]


def test_length_reward_kimi():
    reward = get_reward("length")
    out = reward(
        ["<answer>7</answer>", "<answer>7</answer>", "<answer>8</answer>", "<answer>8</answer>"],
        solution=["7"] * 4,
        completion_ids=[[0] * 10, [0] * 30, [0] * 10, [0] * 30],
    )
    assert out == [0.5, -0.5, 0.0, -0.5]
