"""Correctness rewards for math answers: ``accuracy`` (math-verify), ``reasoning_accuracy`` (TRL's, on ``accuracy``:
the answer after the closed reasoning block) and ``gsm8k`` (exact / numeric match)."""

from __future__ import annotations

import re

from grpo_trl.rewards.math_verifier import MAX_ANSWER_CHARS, MathVerifier, is_prose, math_form  # noqa: F401
from grpo_trl.rewards.registry import register_reward, text_of
from grpo_trl.rewards.text import extract_answer, extract_boxed, extract_tag, last_number, parse_number


def locate_answer(text: str, answer_tag: str = "answer", require_answer_tag: bool = True) -> str | None:
    r"""The span holding the final answer (linear time): the last ``<answer_tag>`` block; with
    ``require_answer_tag=False`` and none, the last ``\boxed{}``, else the last ``MAX_ANSWER_CHARS`` characters."""
    answer = extract_tag(text, answer_tag)
    if answer is not None or require_answer_tag:
        return answer
    boxed = extract_boxed(text)
    if boxed is not None:
        return f"\\boxed{{{boxed}}}"
    return text[-MAX_ANSWER_CHARS:]


# Markdown emphasis marks (**, __, *) that open a span (after the start, a space or a bracket, before a non-space) or
# close one (after a non-space, before the end, a space or punctuation); "2**10", "x_1" and "2 * 3" are left alone.
_EMPHASIS = re.compile(
    r"(?:(?<![^\s(\[{$])(?:\*\*|__|\*)(?=[^\s*_]))|(?:(?<=[^\s*_])(?:\*\*|__|\*)(?![^\s.,:;!?)\]}$]))"
)
# Thousands separators LaTeX writes between digit groups: 1{,}200, 1\,200, 1,\!200, 1\!200 (1\,200 reads as 201).
_DIGIT_GROUP = re.compile(r"(?<=\d)(?:\{,\}|,\\!|\\[,!])(?=\d{3}(?!\d))")
# Plain thousands separators (1,200 and 1,000,000.50, not 1,2 or 1,2345), read as math-verify reads them in plain text.
_COMMA_GROUPS = re.compile(r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!,?\d)")
# In a one-sentence prose answer, the value follows its last "is", "equals", "=" or ": " ("The answer is 2\sqrt{3}").
_ANCHORS = (" is ", " equals ", "=", ": ")
_SENTENCE_BREAK = re.compile(r"[.!?;]\s|\n")
# A full stop (or ! ; ,) ending the answer, before any closing $, \), \] or }: "72." and "$72.$" state 72.
_FINAL_STOP = re.compile(r"[.!;,]+(?=(?:\s|\$|\\\)|\\\]|\})*\Z)")


def answer_value(answer: str) -> str:
    r"""The value an answer block states, for math-verify: Markdown emphasis, ``\$``, LaTeX thousands separators and a
    final full stop dropped; a ``\boxed{}`` holding prose gives its content; one sentence of prose its final value.

    >>> answer_value("**72.**"), answer_value("x = 72."), answer_value("\\boxed{The answer is 72.}")
    ('72', 'x = 72', '72')
    >>> answer_value("\\$1{,}200"), answer_value("$\\frac{5}{2}$.")
    ('1200', '$\\frac{5}{2}$')
    """
    text = _plain(answer.replace("\\$", ""))
    boxed = extract_boxed(text)
    if boxed is not None and is_prose(boxed):  # "\\boxed{The answer is 72.}"
        text = _plain(boxed)
    if is_prose(text) and not _SENTENCE_BREAK.search(text):  # one sentence of prose
        at = max(text.rfind(a) + len(a) if a in text else -1 for a in _ANCHORS)
        rest = text[at:].strip() if at > 0 else ""
        if rest and math_form(rest) != rest:  # bare math after the anchor: the value
            return rest
    return text


def _plain(text: str) -> str:
    text = _DIGIT_GROUP.sub("", _EMPHASIS.sub("", text.replace("\u2212", "-")))  # U+2212 minus: "−72" is not 72
    text = _COMMA_GROUPS.sub(lambda m: m.group().replace(",", ""), text)
    return _FINAL_STOP.sub("", text.strip()).strip()


@register_reward("accuracy", passes_at=1.0)
class Accuracy:
    """1.0 when the answer is mathematically equal to ``solution`` (math-verify), 0.0 if not, None if gold unparseable.

    The answer: ``locate_answer``; ``timeout`` bounds each item (seconds), ``workers`` the math-verify processes."""

    def __init__(
        self,
        timeout: float = 5.0,
        require_answer_tag: bool = True,
        answer_tag: str = "answer",
        workers: int | None = None,
    ):
        self.verifier = MathVerifier(timeout=timeout, workers=workers)
        self.verifier.start()  # math-verify warm (seconds, once per process) before the first step, not in it
        self.require_answer_tag = require_answer_tag
        self.answer_tag = answer_tag

    def answer_of(self, text: str) -> str | None:
        """The answer span this reward judges in ``text`` (None: no answer, scores 0)."""
        answer = locate_answer(text, self.answer_tag, self.require_answer_tag)
        return answer if answer is None or len(answer) > MAX_ANSWER_CHARS else answer_value(answer)

    def __call__(self, completions: list, solution: list, **kwargs) -> list[float | None]:
        answers = [self.answer_of(text) for text in text_of(completions)]
        golds = [str(gold) for gold in solution]
        # a row without an answer scores 0.0, or None when its gold is unparseable (gold against itself says which)
        pairs = [(g, g if a is None else a) for g, a in zip(golds, answers, strict=True)]
        scores = self.verifier.score(pairs)
        return [0.0 if a is None and s is not None else s for a, s in zip(answers, scores)]


@register_reward("reasoning_accuracy")
class ReasoningAccuracy(Accuracy):
    """``accuracy`` on the text after the last occurrence of the first of ``reasoning_delimiters`` found (as TRL);
    0.0 when none is (even for an unparseable gold, like TRL). ``require_answer_tag`` is false by default, as TRL."""

    def __init__(
        self,
        reasoning_delimiters: list[str] | tuple[str, ...] = ("</think>",),
        timeout: float = 5.0,
        require_answer_tag: bool = False,
        answer_tag: str = "answer",
        workers: int | None = None,
    ):
        if isinstance(reasoning_delimiters, str) or not reasoning_delimiters or not all(reasoning_delimiters):
            raise ValueError("reasoning_delimiters must be a non-empty list of non-empty strings, e.g. ['</think>']")
        super().__init__(
            timeout=timeout, require_answer_tag=require_answer_tag, answer_tag=answer_tag, workers=workers
        )
        self.delimiters = list(reasoning_delimiters)

    def after_reasoning(self, text: str) -> str | None:
        """The text after the closed reasoning block, or None when it is never closed."""
        for delim in self.delimiters:
            at = text.rfind(delim)
            if at >= 0:
                return text[at + len(delim) :]
        return None

    def __call__(self, completions: list, solution: list, **kwargs) -> list[float | None]:
        rests = [self.after_reasoning(t) for t in text_of(completions)]
        if len(solution) != len(rests):
            raise ValueError(f"{len(solution)} solutions for {len(rests)} completions")
        closed = [(rest, gold) for rest, gold in zip(rests, solution) if rest is not None]
        scores = iter(super().__call__([rest for rest, _ in closed], [gold for _, gold in closed]))
        return [0.0 if rest is None else next(scores) for rest in rests]


_WRAPPERS = (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]"))


def written(answer: str) -> str:
    r"""``answer`` as written, without its presentation ("1{,}200", "**1200**", "\boxed{1200}." are "1200").

    >>> written("**1,200.**"), written("$\\boxed{72}$."), written("72.0")
    ('1200', '72', '72.0')
    """
    text = _plain(answer)
    while True:  # strips a wrapper each turn: at most len(text) turns
        inner = None
        for open_, close in _WRAPPERS:
            if len(text) > len(open_) + len(close) and text.startswith(open_) and text.endswith(close):
                inner = text[len(open_) : -len(close)]
                inner = None if open_ in inner or close in inner else inner
                break
        if inner is None and text.startswith("\\boxed{") and text.rfind("\\boxed{") == 0:
            inner = text[7:-1].strip() if text.endswith("}") and extract_boxed(text) == text[7:-1].strip() else None
        if inner is None:
            return text
        text = _plain(inner)


# A plain fraction ("\\frac{5}{2}", "-5/2") with no digit after it: the value of "x = \\frac{5}{2} cups"
_FRACTION = re.compile(
    r"(?<![\w.^{}\\/])(-?)(?:\\[dt]?frac\{(-?\d{1,15})\}\{(\d{1,15})\}|(\d{1,15})\s*/\s*(\d{1,15}))(?=\D*\Z)"
)
# Around the last number, signs that it is part of an expression ("2\\sqrt{3}", "x^2", "3\\pi", "1/4 x", "\\pm 72")
_BEFORE_EXPRESSION = re.compile(r"(?:[/^]|[\^_]\{|\}\{)\s*\Z|\\(?:sqrt|frac|dfrac|tfrac|pi|pm|mp|overline|neq?)\b")
_AFTER_EXPRESSION = re.compile(r"\s*(?:[/^_]|\\(?:sqrt|pi|frac|cdot|times)\b)")


def _number(value: str) -> float | None:
    """The number ``value`` states: its last number, or a plain fraction ("\\frac{5}{2}", "5/2"); None for an
    expression whose last number is not its value ("2\\sqrt{3}", "x^2")."""
    value = written(value)
    fraction = _FRACTION.search(value)
    if fraction is not None:
        sign, num, den = fraction[1], fraction[2] or fraction[4], fraction[3] or fraction[5]
        return None if int(den) == 0 else (-1 if sign else 1) * int(num) / int(den)
    number = last_number(value)
    at = -1 if number is None else value.rfind(number)
    if at < 0 or _BEFORE_EXPRESSION.search(value, 0, at) or _AFTER_EXPRESSION.match(value, at + len(number)):
        return None
    return parse_number(number)


@register_reward("gsm8k", passes_at="numeric")  # a correct number, exact or not
def gsm8k(
    completions: list,
    solution: list,
    exact: float = 2.0,
    numeric: float = 1.5,
    answer_tag: str = "answer",
    require_answer_tag: bool = True,
    **kwargs,
) -> list[float]:
    """``exact`` when the answer is written as ``solution`` is (``written``), ``numeric`` for numeric equality, else 0.

    The answer is the last ``<answer_tag>`` block (``require_answer_tag=False``: else ``extract_answer``'s)."""
    out = []
    for text, gold in zip(text_of(completions), solution, strict=True):
        answer = extract_tag(text, answer_tag) if require_answer_tag else extract_answer(text, answer_tag)
        gold = str(gold)[-MAX_ANSWER_CHARS:]
        if answer is None:
            out.append(0.0)
            continue
        answer = answer[-MAX_ANSWER_CHARS:]  # a longer block is judged by its end, where its value is written
        if written(answer) == written(gold):
            out.append(exact)
        else:
            a, g = _number(answer_value(answer)), _number(answer_value(gold))
            out.append(numeric if a is not None and g is not None and abs(a - g) < 1e-9 * max(1.0, abs(g)) else 0.0)
    return out
