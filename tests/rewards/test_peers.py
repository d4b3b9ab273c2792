"""grpo-trl's rewards against TRL's own (run side by side here, no mocks): where they agree, and where they differ
on purpose (documented in the README reward table)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from trl.rewards import accuracy_reward, think_format_reward

from grpo_trl.rewards import get_reward
from grpo_trl.rewards.format import think_format
from grpo_trl.rewards.math import Accuracy, locate_answer

# ------------------------------------------------------------------------------------------------ think_format
# The documented layout as a regex (fine on short inputs; the reward itself is linear-time string search).
_LAYOUT = re.compile(
    r"<think>\n(?:(?!<think>).)*?\n</think>\n<answer>\n(?:(?!<think>).)*?\n</answer>\Z",
    re.DOTALL,
)
PIECES = ["<think>", "</think>", "<answer>", "</answer>", "\n", "a", " ", "<", ">", "/", "think", "\n\n", "519"]


def _trl(text: str) -> float:
    return think_format_reward([[{"role": "assistant", "content": text}]])[0]


NEAR = {  # each part of the layout, and near misses of it
    "open": ["<think>\n", "<think>", " <think>\n", "<think>\n\n", "", "<answer>\n"],
    "sep": ["\n</think>\n<answer>\n", "</think>\n<answer>\n", "\n</think><answer>\n", "\n</think>\n<answer>", ""],
    "close": ["\n</answer>", "</answer>", "\n</answer>\n", "\n</answer> ", ""],
}
BODY = st.lists(st.sampled_from(PIECES), max_size=4).map("".join)


@settings(max_examples=1500, deadline=None)
@given(
    st.sampled_from(NEAR["open"]),
    BODY,
    st.sampled_from(NEAR["sep"]),
    BODY,
    st.sampled_from(NEAR["close"]),
    st.lists(st.sampled_from(PIECES), max_size=12).map("".join),
    st.booleans(),
)
def test_think_format_never_accepts_what_trl_rejects(open_, think, sep, answer, close, noise, use_noise):
    text = noise if use_noise else open_ + think + sep + answer + close
    ours = think_format([text])[0]
    if ours == 1.0:
        assert _trl(text) == 1.0, text
    assert ours == (1.0 if _LAYOUT.match(text) else 0.0), text


@settings(max_examples=500, deadline=None)
@given(st.text(st.sampled_from("ab \n<>"), max_size=20), st.text(st.sampled_from("ab \n<>/"), max_size=20))
def test_think_format_accepts_the_layout_with_any_body(think, answer):
    text = f"<think>\n{think}\n</think>\n<answer>\n{answer}\n</answer>"
    assert think_format([text])[0] == (0.0 if "<think>" in think + answer else 1.0)
    assert think_format([text])[0] <= _trl(text)


@pytest.mark.parametrize(
    "text",
    [
        "<think>\n...\n</think>\n<answer>\n<think>519\n</answer>",  # the case TRL rejects, from the issue
        "<think>\nx\n</think>\n<answer>\ny\n</answer>\n<think>",
        "<think>\n</think>\n<answer>\n1\n</answer>",  # no newline pair around an empty think
        "<think>\nx\n</think>\n<answer>\n</answer>",
        " <think>\nx\n</think>\n<answer>\n1\n</answer>",
    ],
)
def test_think_format_rejections(text):
    assert think_format([text]) == [0.0]


# ------------------------------------------------------------------------------------------------ accuracy
def _msg(text: str) -> list[dict]:
    return [{"role": "assistant", "content": text}]


def test_long_solution_with_boxed_answer_scores_like_trl():
    """The issue's case: a correct \\boxed{214} after 2,165 characters of work scores 1 (it scored 0)."""
    text = "Let me work this out step by step. " * 60 + "So the total is $\\boxed{214}$."
    assert len(text) > 2_000
    acc = Accuracy(require_answer_tag=False)
    assert acc([text], solution=["214"]) == [1.0]
    assert accuracy_reward([_msg(text)], ["214"]) == [1.0]
    assert acc([text.replace("214", "215")], solution=["214"]) == [0.0]
    assert acc(["x" * 50_000 + "\\boxed{\\frac{1}{2}}"], solution=["0.5"]) == [1.0]
    # a wrong boxed answer is wrong even when the right number appears in the text before it
    assert acc(["I first thought 214. " * 100 + "\\boxed{7}"], solution=["214"]) == [0.0]


def test_located_answer_is_bounded_before_parsing():
    assert locate_answer("a" * 100_000, require_answer_tag=False) == "a" * 2_000
    assert locate_answer("<answer>1</answer>" + "a" * 10, require_answer_tag=False) == "1"
    assert locate_answer("\\boxed{1} and \\boxed{2}", require_answer_tag=False) == "\\boxed{2}"
    assert locate_answer("\\boxed{1} and \\boxed{2", require_answer_tag=False).endswith("\\boxed{2")  # unclosed
    assert locate_answer("\\boxed{1}", require_answer_tag=True) is None


# MATH answers of every kind: (gold as the math builder stores it, a right answer, a wrong answer)
MATH_GOLDS = [
    ("2\\sqrt{3}", "\\boxed{2\\sqrt{3}}", "\\boxed{2}"),
    ("2\\sqrt{3}", "\\boxed{\\sqrt{12}}", "\\boxed{3.46}"),
    ("3\\pi", "\\boxed{3\\pi}", "\\boxed{3}"),
    ("\\frac{\\sqrt{3}}{2}", "\\boxed{\\frac{\\sqrt{3}}{2}}", "\\boxed{\\frac{1}{2}}"),
    ("\\dfrac{3}{4}", "\\boxed{0.75}", "\\boxed{\\frac{4}{3}}"),
    ("(-\\infty, 3]", "\\boxed{(-\\infty, 3]}", "\\boxed{(-\\infty, 3)}"),
    ("[2,5)", "\\boxed{[2, 5)}", "\\boxed{3}"),
    ("\\{1,2,3\\}", "\\boxed{\\{3,2,1\\}}", "\\boxed{\\{1,2\\}}"),
    ("30^\\circ", "\\boxed{30^\\circ}", "\\boxed{60^\\circ}"),
    ("\\text{(C)}", "\\boxed{\\text{(C)}}", "\\boxed{\\text{(B)}}"),
    ("\\text{Devon}", "\\boxed{\\text{Devon}}", "\\boxed{\\text{Evan}}"),
    ("x^2+2x+1", "\\boxed{(x+1)^2}", "\\boxed{x^2+1}"),
    ("\\left( 3, \\frac{\\pi}{2} \\right)", "\\boxed{\\left( 3, \\frac{\\pi}{2} \\right)}", "\\boxed{(3, \\pi)}"),
    ("5\\sqrt{2}", "\\boxed{5\\sqrt2}", "\\boxed{5}"),
    ("10\\%", "\\boxed{10\\%}", "\\boxed{20\\%}"),
    ("-\\frac{1}{2}", "\\boxed{-0.5}", "\\boxed{\\frac{1}{2}}"),
    ("2,\\!500", "\\boxed{2500}", "\\boxed{250}"),
]


@pytest.mark.parametrize(("gold", "right", "wrong"), MATH_GOLDS, ids=[g for g, _, _ in MATH_GOLDS])
def test_math_golds_are_read_as_latex(gold, right, wrong):
    # what is read, not how fast: a generous bound (5 s was overrun on a loaded 2-core machine, scoring 0.0)
    acc = Accuracy(require_answer_tag=False, timeout=60)
    assert acc([f"So the answer is ${right}$.", f"So the answer is ${wrong}$."], solution=[gold] * 2) == [1.0, 0.0]
    # the same answers inside <answer> tags, bare
    assert Accuracy(timeout=60)(
        [f"<answer>{right[7:-1]}</answer>", f"<answer>{wrong[7:-1]}</answer>"], solution=[gold] * 2
    ) == [
        1.0,
        0.0,
    ]


def test_trl_agrees_when_the_gold_is_the_worked_solution():
    """TRL parses the gold as given; with the MATH worked solution as gold it reads it as LaTeX, like we do."""
    # TRL's extraction config misses \sqrt2 without braces (ours reads it); \text answers are not in its scope
    rows = [(g, r, w) for g, r, w in MATH_GOLDS if "text" not in g and "sqrt2" not in r]
    golds = [f"Thus the answer is $\\boxed{{{g}}}$." for g, _, _ in rows]
    texts = [f"Work... the answer is ${r}$." for _, r, _ in rows] + [f"... ${w}$." for _, _, w in rows]
    ours = Accuracy(require_answer_tag=False)(texts, solution=golds + golds)
    trl = accuracy_reward([_msg(t) for t in texts], golds + golds)
    assert ours == trl == [1.0] * len(rows) + [0.0] * len(rows)


def test_plain_text_answers_differ_from_trl_on_purpose():
    texts = ["#### 552", "The answer is 72."]
    assert Accuracy(require_answer_tag=False)(texts, solution=["552", "72"]) == [1.0, 1.0]
    assert accuracy_reward([_msg(t) for t in texts], ["552", "72"]) == [0.0, 0.0]


def test_default_accuracy_reads_only_the_answer_tag():
    assert get_reward("accuracy")(["\\boxed{4}", "<answer>4</answer>"], solution=["4", "4"]) == [0.0, 1.0]


@pytest.mark.slow
def test_math_verify_child_runs_isolated_from_the_working_directory(tmp_path):
    """A math_verify.py (or json.py) in the cwd must not be imported by the worker process."""
    (tmp_path / "math_verify.py").write_text("raise SystemExit('hijacked')\n")
    (tmp_path / "json.py").write_text("raise SystemExit('hijacked')\n")
    code = (
        "from grpo_trl.rewards.math import MathVerifier\n"
        "print(MathVerifier(timeout=30, workers=1).score([('\\\\frac{1}{2}', '0.5'), ('2\\\\sqrt{3}', '2')]))"
    )
    out = subprocess.run(  # -P: like the grpo-trl console script, the parent itself does not import from the cwd
        [sys.executable, "-P", "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip() == "[1.0, 0.0]"


# ------------------------------------------------------------------------------------------------ reasoning_accuracy
REASONING_CASES = [
    ("<think> Reasoning content </think> The final answer is \\boxed{\\frac{1}{3}}", "\\frac{1}{3}"),
    ("<think> Reasoning content </think> The final answer is \\boxed{\\frac{1}{2}}", "\\frac{1}{3}"),
    ("<think> Reasoning with a partial answer \\boxed{\\frac{1}{3}} but no final answer", "\\frac{1}{3}"),
    ("<think>a</think> first \\boxed{1} </think> then \\boxed{2}", "2"),  # after the LAST delimiter
    ("<think>a</think> first \\boxed{1} </think> then \\boxed{2}", "1"),
    ("no reasoning at all \\boxed{5}", "5"),
    ("<think>x</think> \\boxed{5}", "\\text{unparseable \\"),  # gold unparseable -> None
    ("<think>never closed", "\\text{unparseable \\"),  # incomplete -> 0.0 even so, like TRL
    ("<think>x</think>\n\\boxed{2\\sqrt{3}}", "Thus $\\boxed{2\\sqrt{3}}$."),
]


def test_reasoning_accuracy_matches_trl():
    from trl.rewards import reasoning_accuracy_reward

    texts, golds = [t for t, _ in REASONING_CASES], [g for _, g in REASONING_CASES]
    ours = get_reward("reasoning_accuracy")(texts, solution=golds)
    theirs = reasoning_accuracy_reward([_msg(t) for t in texts], golds)
    assert ours == theirs == [1.0, 0.0, 0.0, 1.0, 0.0, 0.0, None, 0.0, 1.0]


def test_reasoning_accuracy_delimiters_and_bad_args():
    r = get_reward("reasoning_accuracy", reasoning_delimiters=["</reasoning>", "</think>"])
    assert r(["<reasoning>x</reasoning><answer>4</answer>", "<think>y</think>\\boxed{4}"], solution=["4", "4"]) == [
        1.0,
        1.0,
    ]
    for bad in ([], "</think>", [""]):
        with pytest.raises(ValueError, match="reasoning_delimiters"):
            get_reward("reasoning_accuracy", reasoning_delimiters=bad)
    with pytest.raises(ValueError, match="solutions for"):
        get_reward("reasoning_accuracy")(["<think>a</think>1"], solution=[])


@pytest.mark.parametrize("name", ["cosine", "length"])
def test_cosine_and_length_take_require_answer_tag(name):
    args = {"max_len": 100} if name == "cosine" else {}
    texts = ["work " * 10 + "\\boxed{7}", "work " * 30 + "\\boxed{8}"]
    strict = get_reward(name, **args)(texts, solution=["7", "7"])
    loose = get_reward(name, require_answer_tag=False, **args)(texts, solution=["7", "7"])
    correct = get_reward("accuracy", require_answer_tag=False)(texts, solution=["7", "7"])
    assert correct == [1.0, 0.0]
    if name == "cosine":
        assert strict[0] < 0 < loose[0]  # without the tag requirement the boxed 7 is right: positive reward
        trl = __import__("trl.rewards", fromlist=["x"]).get_cosine_scaled_reward(max_len=100)
        ids = [[0] * len(t.split()) for t in texts]
        assert loose == pytest.approx(trl([_msg(t) for t in texts], ["7", "7"], ids))
    else:
        assert strict != loose and loose[0] > loose[1]


# ------------------------------------------------------------------------------------------------ open-r1's own
# open-r1's reasoning_steps_reward and tag_count_reward (src/open_r1/rewards.py), as published; `grpo-trl import`
# maps them to reasoning_steps (numbered_lines: false) and tag_count.
def _open_r1_reasoning_steps(completions, **kwargs):
    pattern = r"(Step \d+:|^\d+\.|\n-|\n\*|First,|Second,|Next,|Finally,)"
    return [min(1.0, len(re.findall(pattern, c[0]["content"])) / 3) for c in completions]


def _open_r1_tag_count(completions, **kwargs):
    def count_tags(text):
        marks = ("<think>\n", "\n</think>\n", "\n<answer>\n", "\n</answer>")
        return sum(0.25 for m in marks if text.count(m) == 1)

    return [count_tags(c[0]["content"]) for c in completions]


STEP_PIECES = ["Step 1:", "Step 22:", "1. ", "\n1. ", "12.", "\n- ", "\n* ", "First,", "Next,", "Finally,", "x", "\n"]
TAG_PIECES = ["<think>\n", "\n</think>\n", "\n<answer>\n", "\n</answer>", "<think>", "\n", "a"]


@settings(max_examples=500, deadline=None)
@given(text=st.lists(st.sampled_from(STEP_PIECES), max_size=8).map("".join))
def test_imported_reasoning_steps_scores_like_open_r1(text):
    from grpo_trl import tables

    name, args, _ = tables.REWARDS["reasoning_steps"]
    assert get_reward(name, **args)([_msg(text)]) == pytest.approx(_open_r1_reasoning_steps([_msg(text)]))


def test_reasoning_steps_counts_numbered_lines_by_default():
    text = "1. a\n2. b\n3. c"
    assert get_reward("reasoning_steps")([text]) == [1.0]
    assert get_reward("reasoning_steps", numbered_lines=False)([text]) == [pytest.approx(1 / 3)]  # open-r1's


@settings(max_examples=500, deadline=None)
@given(text=st.lists(st.sampled_from(TAG_PIECES), max_size=8).map("".join))
def test_imported_tag_count_scores_like_open_r1(text):
    from grpo_trl import tables

    name, args, _ = tables.REWARDS["tag_count"]
    assert get_reward(name, **args)([_msg(text)]) == _open_r1_tag_count([_msg(text)])


def _open_r1_format(completions, **kwargs):
    pattern = r"^<think>\n.*?\n</think>\n<answer>\n.*?\n</answer>$"
    return [1.0 if re.match(pattern, c[0]["content"], re.DOTALL | re.MULTILINE) else 0.0 for c in completions]


FORMAT_PIECES = ["<think>\n", "\n</think>\n<answer>\n", "\n</answer>", "\n", "a", "</answer>", "\n</think>\n", " "]


@settings(max_examples=1500, deadline=None)
@given(
    st.lists(st.sampled_from(FORMAT_PIECES), max_size=8).map("".join),
    st.sampled_from(["", "\n", "\nmore", "\n\n", " ", "x"]),
    st.booleans(),
)
def test_imported_format_scores_like_open_r1_but_refuses_a_second_think(text, tail, layout):
    """open-r1's `format` -> think_format as `grpo-trl import` writes it: the same score, except that grpo-trl's
    rejects a second <think> (the one documented difference; TRL's think_format_reward rejects it too)."""
    from grpo_trl import tables

    name, args, _ = tables.REWARDS["format"]
    if layout:
        text = f"<think>\n{text}\n</think>\n<answer>\n{text}\n</answer>{tail}"
    ours = get_reward(name, **args)([_msg(text)])[0]
    expected = _open_r1_format([_msg(text)])[0] if "<think>" not in text[1:] else 0.0
    assert ours == expected, text


def test_think_format_trailing_lines():
    text = "<think>\nx\n</think>\n<answer>\n4\n</answer>\n"
    assert think_format([text]) == [0.0]  # the default layout ends at </answer>
    assert think_format([text], trailing_lines=True) == [1.0] == _open_r1_format([_msg(text)])
    assert (
        think_format([text[:-1] + " more"], trailing_lines=True)
        == [0.0]
        == _open_r1_format([_msg(text[:-1] + " more")])
    )
