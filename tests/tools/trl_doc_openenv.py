"""TRL's ``docs/source/openenv.md`` "Quick start", written as the docs write it (its own module: its reward is named
``reward_func`` like the multi-environment example's in ``trl_doc_agents.py``). ``EchoToolEnv`` reaches an OpenEnv
server through ``echo_env.EchoEnv``: ``EchoEnv`` and ``EchoAction`` here are local stand-ins of that client's shape
(``EchoEnv(base_url).step(EchoAction(message)).observation.{reward, echoed_message}``), which also count the
connections a real client would open."""

from __future__ import annotations

# ---------------------------------------------------------------------------------------------------------------
# openenv.md, "Quick start": EchoToolEnv over an OpenEnv client. The client reaches a server over the network, so a
# local stand-in of its shape (EchoEnv(base_url).step(EchoAction(message)).observation.{reward, echoed_message})


class EchoAction:  # stand-in for echo_env.models.EchoAction
    def __init__(self, message: str):
        self.message = message


class _Observation:
    def __init__(self, message: str):
        self.echoed_message = message
        self.reward = len(message) * 0.1  # the Echo environment rewards by text length


class _StepResult:
    def __init__(self, message: str):
        self.observation = _Observation(message)


class EchoEnv:  # stand-in for echo_env.EchoEnv (an OpenEnv client); counts connections it would open
    CONNECTIONS = 0

    def __init__(self, base_url: str):
        self.base_url = base_url
        type(self).CONNECTIONS += 1

    def step(self, action: EchoAction) -> _StepResult:
        return _StepResult(action.message)


ENV_URL = "https://openenv-echo-env.hf.space"


class EchoToolEnv:
    def __init__(self):
        self.env = EchoEnv(base_url=ENV_URL)
        self.reward = 0.0

    def reset(self, **kwargs) -> str | None:
        self.reward = 0.0
        return None

    def echo(self, message: str) -> str:
        """
        Echo the message back from the environment.

        Args:
            message: The message to echo

        Returns:
            The echoed message.
        """
        observation = self.env.step(EchoAction(message=message))
        self.reward = observation.observation.reward
        return observation.observation.echoed_message


def reward_func(environments, **kwargs):
    return [env.reward for env in environments]


def echo_dataset(n: int) -> dict:
    return {"prompt": [[{"role": "user", "content": "Try to echo 'Hello World!' in the environment."}]] * n}


# ---------------------------------------------------------------------------------------------------------------
# openenv.md, "Multi-environment training": one MultiEnv routing on a dataset column `env`, per-environment rewards
# returning None for the other environment's rows. TextArenaEnv and OpenSpielEnv are OpenEnv clients (network):
# local stand-ins of their shape; the tools' bodies, elided in the docs, are small stand-ins too.

WORDLE_URL = "https://openenv-wordle.hf.space"
CATCH_URL = "https://openenv-openspiel-env.hf.space"


class _Message:
    def __init__(self, content: str):
        self.content = content


class _ArenaObservation:
    def __init__(self):
        self.messages = [_Message("Guess the 5-letter word.")]


class _SpielObservation:
    def __init__(self):
        self.done = False
        self.info_state = [0.0, 1.0, 0.0]


class _Reset:
    def __init__(self, observation):
        self.observation = observation


class TextArenaEnv:  # stand-in for the TextArena (Wordle) OpenEnv client
    def __init__(self, base_url: str):
        self.base_url = base_url

    def reset(self):
        return _Reset(_ArenaObservation())

    def close(self):
        pass


class OpenSpielEnv:  # stand-in for the OpenSpiel (Catch) OpenEnv client
    def __init__(self, base_url: str):
        self.base_url = base_url

    def reset(self):
        return _Reset(_SpielObservation())

    def close(self):
        pass


def _format_catch_obs(info_state) -> str:
    return f"Catch the ball. State: {info_state}"


class MultiEnv:
    def __init__(self):
        self._wordle_client = None
        self._catch_client = None
        self.active = None
        self.reward = 0.0
        self.done = False

    def reset(self, **kwargs) -> str | None:
        self.active = kwargs.get("env", "wordle")
        self.reward = 0.0
        self.done = False

        if self.active == "wordle":
            if self._wordle_client is not None:
                try:
                    self._wordle_client.close()
                except Exception:
                    pass
            self._wordle_client = TextArenaEnv(base_url=WORDLE_URL)
            result = self._wordle_client.reset()
            self._last_full_feedback = result.observation.messages[0].content
            self.reward = 0.0
            return self._last_full_feedback
        elif self.active == "catch":
            if self._catch_client is not None:
                try:
                    self._catch_client.close()
                except Exception:
                    pass
            self._catch_client = OpenSpielEnv(base_url=CATCH_URL)
            result = self._catch_client.reset()
            self.done = result.observation.done
            return _format_catch_obs(result.observation.info_state)

    # Wordle tool
    def guess(self, guess: str) -> str:
        """Make a guess in the Wordle environment.

        Args:
            guess: A 5-letter word.
        """
        if self.active != "wordle":
            raise ValueError("guess is a Wordle tool")
        self.reward = float(guess == "crane")
        return "feedback"

    # Catch tools
    def move(self, direction: str) -> str:
        """Move the paddle left or right.

        Args:
            direction: "left" or "right".
        """
        if self.active != "catch":
            raise ValueError("move is a Catch tool")
        self.done, self.reward = True, 1.0
        return "moved"

    def stay(self) -> str:
        """Do nothing and let the ball fall one step."""
        if self.active != "catch":
            raise ValueError("stay is a Catch tool")
        return "stayed"


def wordle_reward(environments, **kwargs) -> list[float | None]:
    return [env.reward if env.active == "wordle" else None for env in environments]


def catch_reward(environments, **kwargs) -> list[float | None]:
    rewards = []
    for env in environments:
        if env.active != "catch":
            rewards.append(None)
        elif env.done:
            rewards.append(max(env.reward, 0.0))
        else:
            rewards.append(0.0)
    return rewards


def multi_env_dataset(n: int) -> dict:
    wordle_prompt, catch_prompt = "Play Wordle.", "Play Catch."
    return {
        "prompt": (
            [[{"role": "user", "content": wordle_prompt}]] * n + [[{"role": "user", "content": catch_prompt}]] * n
        ),
        "env": ["wordle"] * n + ["catch"] * n,
    }
