"""A plugin file (listed under ``plugins:``) registering a tool, and module:function tools for the tests."""

import time

from grpo_trl.tools import register_tool


@register_tool("plugin_echo")
def echo(text: str) -> str:
    """Repeat a text.

    Args:
        text: The text to repeat.
    """
    return text


def no_doc(x: int) -> int:
    return x


def no_hint(x) -> int:
    """Return x.

    Args:
        x: A number.
    """
    return x


def no_args_section(x: int) -> int:
    """Return x."""
    return x


def explode(x: int) -> int:
    """Always fails.

    Args:
        x: Ignored.
    """
    raise RuntimeError("tool exploded")


def hang(x: int) -> int:
    """Never returns in time.

    Args:
        x: Ignored.
    """
    time.sleep(30)
    return x


class NoReset:
    def act(self, x: int) -> int:
        """Act.

        Args:
            x: A number.
        """
        return x


class Echo:
    """An environment whose only tool repeats text and whose reward is how many calls it got."""

    def __init__(self, bonus: float = 1.0):
        self.bonus = bonus

    def reset(self, **row) -> str | None:
        self.calls = 0
        return None

    def say(self, text: str) -> str:
        """Say something.

        Args:
            text: What to say.
        """
        self.calls += 1
        return text

    def get_reward(self) -> float:
        return self.bonus * self.calls


def broken_calculator(expression: str) -> str:
    """Evaluate an arithmetic expression exactly.

    Args:
        expression: Integers combined with +, -, *, / and parentheses, e.g. "(3 + 5) * 2".

    Returns:
        The exact value: an integer, or a fraction with its decimal value.
    """
    if "+" in expression:
        raise RuntimeError("calculator exploded")
    time.sleep(30)  # hangs otherwise
    return "never"


broken_calculator.__name__ = "calculator"  # the name the model learned to call


class CalculatorEnv:
    """An environment whose tool is the one the tiny tool model learned to call; get_reward() counts good calls."""

    def reset(self, **row) -> None:
        self.good = 0

    def calculator(self, expression: str) -> str:
        """Evaluate an arithmetic expression exactly.

        Args:
            expression: Integers combined with +, -, *, / and parentheses, e.g. "(3 + 5) * 2".

        Returns:
            The exact value: an integer, or a fraction with its decimal value.
        """
        from grpo_trl.tools.calculator import calculator

        result = calculator(expression)
        self.good += 1
        return result

    def get_reward(self) -> float:
        return float(min(self.good, 1))


class ExitsWhenBuilt:
    BUILT = 0  # how many times anything called the constructor (check must not)

    def __init__(self):
        type(self).BUILT += 1
        raise SystemExit(5)

    def reset(self, **row) -> None:
        return None


class Unruly:
    """An environment whose tools fail in the ways a user's code can: raising, and calling exit()."""

    def reset(self, **row) -> str | None:
        return None

    def fail(self, x: int) -> int:
        """Fail.

        Args:
            x: A number.
        """
        raise ValueError(f"bad {x}")

    def leave(self, code: int) -> int:
        """Leave.

        Args:
            code: The exit code.
        """
        raise SystemExit(code)


class ExitingCountdown:
    """The Countdown environment's tool name (which the tiny tool model calls), but the tool calls exit()."""

    def reset(self, **row) -> str | None:
        return None

    def check_equation(self, equation: str) -> str:
        """Check a candidate equation against the numbers and the target.

        Args:
            equation: An arithmetic expression using each number once, e.g. "(3 + 5) * 2".
        """
        raise SystemExit(3)


class OnlyReset:
    """TRL's environment-owned prompt: no tools, no get_reward(); reward functions score it (TRL accepts this)."""

    def reset(self, **row) -> str:
        return "Guess the 5-letter word."


class StaticTool:
    """A tool written as a @staticmethod: TRL calls it without self."""

    def reset(self, **row) -> None:
        return None

    @staticmethod
    def double(x: int) -> int:
        """Double a number.

        Args:
            x: The number.
        """
        return 2 * x


class AsyncScored:
    """An async tool and an async get_reward() (an LLM judge, say), both of which TRL awaits."""

    def reset(self, **row) -> None:
        self.calls = 0

    async def ping(self, x: int) -> int:
        """Ping.

        Args:
            x: A number.
        """
        self.calls += 1
        return x

    async def get_reward(self) -> float:
        import asyncio

        await asyncio.sleep(0)
        return 0.5 + self.calls


class OwnsData:
    """An environment that owns the data (TRL's train_dataset=None): reset() returns the prompt, from no columns."""

    def reset(self, **row) -> str:
        assert not set(row) - {"prompt"}, row  # the placeholder rows carry no task columns
        self.said = ""
        return "Say the word banana."

    def say(self, word: str) -> str:
        """Say one word.

        Args:
            word: The word to say.
        """
        self.said = word
        return "ok"

    def get_reward(self) -> float:
        return float(self.said == "banana")


class BadReset:
    """reset() misbehaving in the ways user code can: ``how`` picks raising, exit(2), or a huge non-text result."""

    how = "raise"

    def reset(self, **row):
        if self.how == "raise":
            raise KeyError("no such task")
        if self.how == "exit":
            import sys

            sys.exit(2)
        return 10**5000

    def act(self, x: int) -> int:
        """Act.

        Args:
            x: A number.
        """
        return x


def huge_result(x: int) -> int:
    """Return a number too long for str().

    Args:
        x: Ignored.
    """
    return 2**20000


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no text for you")


def unprintable_result(x: int) -> str:
    """Return an object whose str() raises.

    Args:
        x: Ignored.
    """
    return Unprintable()
