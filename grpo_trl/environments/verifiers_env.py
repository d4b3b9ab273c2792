"""verifiers (0.4, ``verifiers.v1``) tasksets as GRPO data (a row per task, its index in ``vf_task``), rewards (each
``@vf.reward`` scored by the task's own ``score()``) and tools (the toolsets' ``@vf.tool`` methods as an
``environment_factory``), loaded by verifiers' own ``load_taskset``."""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import typing
from typing import Any

from grpo_trl.errors import GrpoTrlError

COLUMN = "vf_task"  # the dataset column naming each row's task (its index in the taskset)


@functools.lru_cache(maxsize=8)
def _tasks(taskset: str, args_json: str) -> tuple:
    try:
        import verifiers.v1 as vf

        loaded = vf.load_taskset(vf.TasksetConfig(id=taskset, **json.loads(args_json)))
    except (ImportError, AttributeError, TypeError, ValueError) as exc:  # verifiers' own loader says what is wrong
        fix = "pip install 'grpo-trl[verifiers]' and the environment's package (or a module on PYTHONPATH)"
        raise GrpoTrlError(f"cannot load verifiers taskset {taskset!r}: {exc}", key="taskset", fix=fix) from exc
    if not loaded.bounded:
        raise ValueError(f"verifiers taskset {taskset!r} is infinite; bound it with its own config (args)")
    return tuple(loaded)


def tasks(taskset: str, args: dict | None = None) -> tuple:
    """The tasks of verifiers taskset ``taskset`` (a module or Hub package id) built with ``args``."""
    return _tasks(taskset, json.dumps(args or {}, sort_keys=True))


def reward_names(taskset: str, args: dict | None = None) -> dict[str, float]:
    """The taskset's reward functions (``@vf.reward`` methods and plugged rewards) with their weights."""
    task = tasks(taskset, args)[0]
    return {fn.__name__: float(getattr(fn, "_vf_weight", 1.0)) for fn in task.hooks("reward")}


def rows(taskset: str, args: dict | None = None, limit: int | None = None) -> dict[str, list]:
    """Dataset columns: ``prompt`` (conversational, the task's system prompt first) and ``vf_task``."""
    prompts, index = [], []
    for i, task in enumerate(tasks(taskset, args)[:limit]):
        data = task.data
        turns = [{"role": "system", "content": data.system_prompt}] if data.system_prompt else []
        if isinstance(data.prompt, str) or data.prompt is None:
            turns.append({"role": "user", "content": data.prompt or ""})
        else:
            turns += [m.model_dump(exclude_none=True) if hasattr(m, "model_dump") else dict(m) for m in data.prompt]
        prompts.append(turns)
        index.append(i)
    return {"prompt": prompts, COLUMN: index}


def _text(completion: Any) -> str:
    if isinstance(completion, list):  # conversational (tool turns too): the last assistant turn's text
        replies = [m for m in completion if isinstance(m, dict) and m.get("role", "assistant") == "assistant"]
        return str(replies[-1].get("content") or "") if replies else ""
    return str(completion)


def score(task: Any, completion: Any) -> dict[str, float | None]:
    """Every reward of ``task`` for ``completion``, from the task's own ``score()`` on a one-reply trace."""
    from verifiers.v1 import AgentConfig
    from verifiers.v1.trace import AgentInfo, Trace, TraceTask

    trace = Trace(
        task=TraceTask(type=type(task).__name__, data=task.data),
        agent=AgentInfo(config=AgentConfig()),
        root_reply=_text(completion),
    )
    asyncio.run(task.score(trace))
    return {name: (None if r is None else r.score) for name, r in trace.rewards.items()}


def reward(
    completions: list,
    vf_task: list[int],
    *,
    taskset: str = "",
    rubric: str = "",
    taskset_args: dict | None = None,
    **_: Any,
) -> list[float | None]:
    """One reward of a verifiers taskset as a TRL reward function (``vf_task``: the dataset column); recipes name it
    ``grpo_trl.environments.verifiers_env:reward`` with ``args: {taskset, rubric}`` (``reward_specs`` writes them)."""
    if not taskset or not rubric:
        raise ValueError("a verifiers reward needs args: {taskset: ID, rubric: REWARD_NAME}")
    args_json = json.dumps(taskset_args or {}, sort_keys=True)
    return [_scores(taskset, args_json, i, _text(c)).get(rubric) for c, i in zip(completions, vf_task)]


@functools.lru_cache(maxsize=4096)
def _scores(taskset: str, args_json: str, index: int, text: str) -> dict[str, float | None]:
    """All rewards of one task for one reply, once: the other rubric functions of the same step reuse them."""
    return score(_tasks(taskset, args_json)[index], text)


def reward_specs(taskset: str, args: dict | None = None) -> list[dict[str, Any]]:
    """The ``rewards:`` entries for every reward of the taskset: one per function, logged under its own name."""
    bound = {"taskset": taskset, **({"taskset_args": args} if args else {})}
    return [
        {"name": f"{__name__}:reward", "alias": name, "weight": weight, "args": {**bound, "rubric": name}}
        for name, weight in reward_names(taskset, args).items()
    ]


class VerifiersTools:
    """TRL's environment for a taskset with toolsets: ``reset(vf_task=i)`` builds task i's toolsets afresh (state per
    rollout); ``tools(taskset)`` makes the subclass whose methods are the ``@vf.tool`` s TRL offers the model."""

    taskset, args_json = "", "{}"

    def __init__(self) -> None:
        self.task: Any = None
        self.toolsets: list = []

    def reset(self, vf_task: int = 0, **row: Any) -> None:
        self.task = _tasks(self.taskset, self.args_json)[int(vf_task)]
        self.toolsets = list(type(self.task).toolsets(self.task.config))


def tools(taskset: str, args: dict | None = None) -> VerifiersTools:
    """``environment: {factory: grpo_trl.environments.verifiers_env:tools, args: {taskset: ID}}``: one instance."""
    return _tools_class(taskset, json.dumps(args or {}, sort_keys=True))()


@functools.lru_cache(maxsize=8)
def _tools_class(taskset: str, args_json: str) -> type:
    from verifiers.v1.utils.decorators import discover_decorated

    task = _tasks(taskset, args_json)[0]
    methods: dict[str, Any] = {}
    for index, toolset in enumerate(type(task).toolsets(task.config)):
        for fn in discover_decorated(toolset, "tool"):
            method = _tool_method(index, fn)
            methods[method.__name__] = method
    if not methods:
        raise GrpoTrlError(
            f"verifiers taskset {taskset!r} has no @vf.tool in its tasks' toolsets",
            key="environment",
            fix="leave out environment: (its rewards score single replies), or give the task toolsets()",
        )
    return type("VerifiersTools", (VerifiersTools,), {**methods, "taskset": taskset, "args_json": args_json})


def _tool_method(index: int, fn: Any) -> Any:
    """A method calling ``fn`` on this rollout's toolset ``index``, with ``fn``'s name, parameters and docstring (an
    ``Args:`` section is added for parameters the docstring leaves out: TRL's schema needs one per parameter)."""
    attr, signature, hints = fn.__name__, inspect.signature(fn), typing.get_type_hints(fn)
    if inspect.iscoroutinefunction(fn):

        async def method(self: Any, **kwargs: Any) -> Any:
            return await getattr(self.toolsets[index], attr)(**kwargs)
    else:

        def method(self: Any, **kwargs: Any) -> Any:
            return getattr(self.toolsets[index], attr)(**kwargs)

    doc = inspect.cleandoc(fn.__doc__ or f"The {attr} tool.")
    lines = "".join(f"    {p}: {p}.\n" for p in signature.parameters if f"{p}:" not in doc.partition("Args:")[2])
    if lines:
        doc = doc.replace("Args:\n", "Args:\n" + lines, 1) if "Args:\n" in doc else f"{doc}\n\nArgs:\n{lines}"
    self_param = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    method.__name__ = method.__qualname__ = getattr(fn, "tool_name", None) or attr
    method.__doc__ = doc
    method.__signature__ = signature.replace(parameters=[self_param, *signature.parameters.values()])
    method.__annotations__ = hints
    return method
