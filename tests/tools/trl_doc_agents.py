"""TRL's documented agent examples, written as TRL's documentation writes them, for the side-by-side runs in
``test_trl_doc_agents.py`` (grpo-trl from a recipe naming these as ``tests.tools.trl_doc_agents:NAME`` versus plain
``GRPOTrainer`` given the same objects).

Sources (TRL 1.16): ``docs/source/grpo_trainer.md`` (Agent Training: Tools, Environments, Providing an external
dataset, Rewards, Multiple environments), ``docs/source/openenv.md`` (Quick start, Multi-environment training),
``examples/scripts/grpo_agent.py`` (``query_biogrid`` and its ``signal.SIGALRM`` ``timeout``) and the
``GRPOTrainer`` docstring (``rollout_func``, ``environment_factory`` owning the reward).

Where the documentation elides a body (``...``) or reaches the network (an OpenEnv server, the BioGRID dataset on
the Hub), a local stand-in of the same shape is written here and says so.
"""

from __future__ import annotations

import random
import re
import signal
import sqlite3
from contextlib import contextmanager

# ---------------------------------------------------------------------------------------------------------------
# grpo_trainer.md, "Tools"


def multiply(a: int, b: int) -> int:
    """
    Multiplies two integers.

    Args:
        a: The first integer.
        b: The second integer.

    Returns:
        The product of the two integers.
    """
    return a * b


async def async_add(a: int, b: int) -> int:
    """
    Asynchronously adds two integers.

    Args:
        a: The first integer.
        b: The second integer.

    Returns:
        The sum of the two integers.
    """
    return a + b


# ---------------------------------------------------------------------------------------------------------------
# examples/scripts/grpo_agent.py: a tool that bounds itself with signal.SIGALRM (works only in the main thread)


class TimeoutError(Exception):  # noqa: A001 - as the example names it
    """Raised when a function call times out."""

    pass


@contextmanager
def timeout(seconds):
    """Context manager that raises TimeoutError if execution exceeds time limit."""

    def timeout_handler(signum, frame):
        raise TimeoutError(f"Operation timed out after {seconds} seconds")

    signal.signal(signal.SIGALRM, timeout_handler)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)


BIOGRID_DB = "biogrid.db"  # the example builds it from the Hub; the tests write a small local one (make_biogrid)


def query_biogrid(sql_command: str) -> list[tuple]:
    """
    Execute a read-only SQL command on the BioGRID database.

    BioGRID is a curated biological database that compiles protein, genetic, and chemical interactions from multiple organisms. It provides researchers with experimentally verified interaction data to support studies in systems biology and functional genomics.

    Args:
        sql_command: The SQL command to execute.

    Returns:
        A list of tuples containing the query results.
    """  # noqa: E501 - the example's docstring
    with timeout(5):
        conn = sqlite3.connect(f"file:{BIOGRID_DB}?mode=ro", uri=True)
        cursor = conn.cursor()
        try:
            cursor.execute(sql_command)
            results = cursor.fetchall()
        finally:
            conn.close()
    return results


def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression exactly.

    Args:
        expression: Integers combined with +, -, *, / and parentheses, e.g. "(3 + 5) * 2".

    Returns:
        The exact value: an integer, or a fraction with its decimal value.
    """
    # query_biogrid's shape (the example's `with timeout(5):` around the work) under the tool name and argument the
    # tiny test model learned to call, so that the model really calls it during the runs
    from grpo_trl.tools.calculator import calculator as evaluate

    with timeout(5):
        return evaluate(expression)


def make_biogrid(path: str) -> None:
    """A two-row stand-in for the example's ``biogrid.db`` (built from ``qgallouedec/biogrid`` on the Hub)."""
    global BIOGRID_DB
    conn = sqlite3.connect(path)
    try:
        conn.execute("CREATE TABLE interactions (Alt_IDs_Interactor_A TEXT, Alt_IDs_Interactor_B TEXT)")
        conn.executemany("INSERT INTO interactions VALUES (?, ?)", [("JNKK", "MAPKK4"), ("TP53", "MDM2")])
        conn.commit()
    finally:
        conn.close()
    BIOGRID_DB = path


def correctness_reward(completions, answer, **kwargs):
    """
    Reward Yes/No correctness.
    Model must provide final answer enclosed in stars — *yes* or *no*.
    Does not reward informal yes/no buried in text.
    """
    rewards = []
    for completion, ans in zip(completions, answer, strict=False):
        raw = completion[-1]["content"].lower()

        # detect form *yes* or *no*
        match = re.search(r"\*(yes|no)\*", raw)
        guess = match.group(1) if match else None

        reward = 0.0

        if guess is None:
            reward -= 0.5  # invalid format
        elif guess == ans.lower():
            reward += 0.6  # correct under required format
        else:
            reward -= 1.0  # wrong answer

        rewards.append(reward)

    return rewards


def structure_reward(completions, **kwargs):
    """
    Reward proper assistant structure.
    Encourages a logical sequence: tool call + response + optional extra content.
    """
    rewards = []

    for completion in completions:
        has_call = False
        has_response = False
        has_other = False

        for turn in completion:
            role = turn.get("role")
            if role == "assistant" and turn.get("tool_calls"):
                has_call = True
            elif role == "tool":
                has_response = True
            else:
                content = turn.get("content")
                if content and content.strip() not in ["", "<think>"]:
                    has_other = True

        # Reward sequences
        if has_call and has_response:
            if has_other:
                reward = 0.1
            else:
                reward = 0.05  # still positive even without extra text
        elif has_call and not has_response:
            reward = -0.15
        else:
            reward = 0.0  # neutral if no call

        rewards.append(reward)

    return rewards


# ---------------------------------------------------------------------------------------------------------------
# grpo_trainer.md, "Environments": the environment owns the data and the reward (no dataset, no reward_funcs)


class IncrementEnv:
    # Reserved methods
    def reset(self, **kwargs) -> str | None:  # required; called at the start of each rollout
        self.counter = 0
        self.target = random.randint(1, 6)  # self-sample the task
        return f"Increment the counter by {self.target}."  # returned string becomes the prompt

    def get_reward(self) -> float:  # optional: the environment scores itself from its own state
        return float(self.counter == self.target)

    # Public methods (exposed as tools)
    def increment(self, step: int) -> int:
        """
        Increment the internal counter.

        Args:
            step: Value to add to the counter.

        Returns:
            The updated counter value.
        """
        self.counter += step
        return self.counter


# "Providing an external dataset (optional)": the row's `target` column arrives in reset(target=...)


class DatasetIncrementEnv:
    def reset(self, target, **kwargs) -> None:  # the row's `target` column arrives as a keyword argument
        self.counter = 0
        self.target = target

    def get_reward(self) -> float:
        return float(self.counter == self.target)

    def increment(self, step: int) -> int:  # exposed as a tool (the full docstring, as the docs refer to it)
        """
        Increment the internal counter.

        Args:
            step: Value to add to the counter.

        Returns:
            The updated counter value.
        """
        self.counter += step
        return self.counter


DatasetIncrementEnv.__name__ = DatasetIncrementEnv.__qualname__ = "IncrementEnv"  # the docs' class name


def increment_dataset() -> dict:
    """The docs' external dataset: the prompt and the task data (the counter target to reach)."""
    return {
        "prompt": [[{"role": "user", "content": f"Increment the counter to {i}."}] for i in range(1, 7)],
        "target": list(range(1, 7)),
    }


# "Rewards": a trainer-owned reward beside the environment's get_reward (the docs elide its body)


def format_reward(completions, **kwargs):  # trainer-owned: scores the completion text
    return [0.5 if "<answer>" in completion[-1]["content"] else 0.0 for completion in completions]


# "Multiple environments": the dataset only routes; each environment owns its data (bodies elided in the docs)


class CodingEnv:
    def reset(self, **kwargs) -> str:
        n = random.randint(1, 20)
        return f"Compute the {n}th Fibonacci number."

    def run_code(self, code: str) -> str:  # exposed as a tool only for "coding" examples
        """Run the given Python code and return its stdout.

        Args:
            code: The Python source to execute.

        Returns:
            The captured standard output.
        """
        return ""  # stand-in: the docs elide the body (running model code is the sandbox's job)


class GameEnv:
    def reset(self, **kwargs) -> str:
        return "Reach the goal tile."

    def move(self, action: str) -> str:  # exposed as a tool only for "game" examples
        """Apply an action to the game and return the new observation.

        Args:
            action: One of "up", "down", "left", "right".

        Returns:
            The observation after the move.
        """
        return f"moved {action}"


def reward_func(completions, environments, **kwargs):  # the docs name it without a body; it branches on the type
    return [1.0 if isinstance(env, CodingEnv) else 0.5 for env in environments]


def routing_dataset(n: int) -> dict:
    """The dataset only routes: each row picks the environment for that rollout."""
    return {"environment": ["coding", "game"] * n}


# ---------------------------------------------------------------------------------------------------------------
# GRPOTrainer docstring, rollout_func: "It must return a dict with prompt_ids, completion_ids, and logprobs ... Any
# other fields are forwarded to the reward functions." A rollout that generates with the trainer's own model and
# tokenizer, plus one extra field per completion (a remote agent server would compute it).


def rollout_func(prompts, trainer):
    import torch

    tokenizer = trainer.processing_class
    texts = [tokenizer.apply_chat_template(p, tokenize=False, add_generation_prompt=True) for p in prompts]
    prompt_ids = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]
    model = trainer.accelerator.unwrap_model(trainer.model)
    completion_ids = []
    with torch.no_grad():
        for ids in prompt_ids:
            out = model.generate(
                torch.tensor([ids]), max_new_tokens=trainer.max_completion_length, do_sample=True, top_k=0
            )
            completion_ids.append(out[0, len(ids) :].tolist())
    logprobs = [[0.0] * len(ids) for ids in completion_ids]
    env_reward = [min(1.0, len(ids) / 10) for ids in completion_ids]
    return {"prompt_ids": prompt_ids, "completion_ids": completion_ids, "logprobs": logprobs, "env_reward": env_reward}


def env_reward_passthrough(completions, env_reward, **kwargs):  # reads the rollout's extra field by name
    return list(env_reward)
