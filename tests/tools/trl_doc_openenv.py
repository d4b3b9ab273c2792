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
