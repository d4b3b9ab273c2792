"""The tool registry: register, look up, check the schema the model will see, and bound every call in time.

A tool is a plain Python function with type hints and a Google-style docstring (``Args:`` describing each
parameter): TRL hands it to the chat template through transformers' ``get_json_schema`` and calls it with the
arguments the model wrote. Tools are named in a recipe's ``tools:`` list by registered name, as
``module.path:function``, or registered from a file listed under ``plugins:`` (``grpo_trl.registry`` runs it).

Example:
    >>> from grpo_trl.tools import register_tool, get_tool
    >>> @register_tool("shout_doc")
    ... def shout(text: str) -> str:
    ...     '''Upper-case a text.
    ...
    ...     Args:
    ...         text: The text to shout.
    ...     '''
    ...     return text.upper()
    >>> tool = get_tool("shout_doc", timeout=5)
    >>> tool.__name__, tool(text="hi")
    ('shout', 'HI')
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

from grpo_trl.errors import GrpoTrlError, Problem
from grpo_trl.registry import Registry
from grpo_trl.timeouts import in_thread

DEFAULT_TIMEOUT = 15.0  # seconds one tool call may take before it becomes an error for that call
MAX_RESULT_CHARS = 4000  # longer text results are cut: a tool must not flood the context


class ToolError(GrpoTrlError):
    """A tool could not be found or would not reach the model as intended. The message says what to change."""


TOOLS = Registry(
    "tool",
    ToolError,
    duplicate="tool {name!r} is already registered by {prev}; choose another name",
    unknown="unknown tool {name!r}{hint}; built-in tools: {names}; your own can be given as 'module.path:function' "
    "or registered with @register_tool in a file listed under 'plugins:'",
)


def register_tool(name: str | None = None) -> Callable[[Callable], Callable]:
    """Decorator that registers a tool under ``name`` (default: the function's name). Duplicates are an error.

    The model sees the *function's* name (``__name__``) in its tool schema; ``name`` is what recipes write.
    """
    return TOOLS.decorator(name)


def list_tools() -> dict[str, str]:
    """Registered tool names and the first line of each docstring."""
    return {e.name: (inspect.getdoc(e.obj) or "").split("\n")[0] for e in TOOLS}


def lookup_tool(name: str) -> Callable:
    """The raw function for a registered name or ``module.path:function``; ``ToolError`` says what is wrong."""
    if not isinstance(name, str) or not name:
        raise ToolError(f"a tool is named by a string, got {name!r}")
    return TOOLS.resolve(name)


def tool_schema(func: Callable) -> dict:
    """The JSON schema the model will see (transformers' ``get_json_schema``), or ``ToolError`` with the fix."""
    from transformers.utils import get_json_schema
    from transformers.utils.chat_template_utils import DocstringParsingException, TypeHintParsingException

    label = getattr(func, "__name__", repr(func))
    if not callable(func):
        raise ToolError(f"tool {label!r} is not callable")
    if not inspect.getdoc(func):
        raise ToolError(
            f"tool {label!r} has no docstring; the model only knows a tool by its docstring: add a Google-style "
            "docstring with a one-line description and an 'Args:' section describing every parameter"
        )
    try:
        return get_json_schema(func)
    except TypeHintParsingException as exc:
        raise ToolError(f"tool {label!r}: {exc} (add a type hint to every parameter, e.g. `x: int`)") from exc
    except DocstringParsingException as exc:
        raise ToolError(
            f"tool {label!r}: {exc} (describe each parameter under 'Args:' as `name: what it is`)"
        ) from exc
    except (TypeError, ValueError) as exc:
        raise ToolError(f"tool {label!r}: its schema cannot be built: {exc}") from exc


def bounded(func: Callable, timeout: float | None = DEFAULT_TIMEOUT, max_chars: int = MAX_RESULT_CHARS) -> Callable:
    """``func`` run where TRL runs it, with each call limited to ``timeout`` seconds and its result made text.

    TRL calls sync tools in the training thread and awaits async ones on its event loop; so does this wrapper, so a
    tool that bounds itself with ``signal.alarm`` (TRL's ``grpo_agent.py`` example) works as under plain TRL. The
    time limit is a ``SIGALRM`` interval timer in the main thread (left to the tool when it arms its own alarm, and
    skipped when an outer timer is already armed), ``asyncio.wait_for`` for an async tool, and a worker thread only
    when TRL calls from a thread other than the main one (where signals cannot be used).
    A call that takes longer raises ``TimeoutError``, and one that calls ``exit()`` (or raises another
    ``BaseException``) raises ``RuntimeError``: TRL turns either into ``{"error": ...}`` for that call only (counted in
    ``tools/failure_frequency``). The result becomes the text TRL would make of it (``str()``; a list of content blocks
    stays a list), inside the call: a result ``str()`` cannot render (``2**20000``, a raising ``__str__``) costs that
    call, where TRL's own ``str(result)`` would end the run. Text is cut at ``max_chars``. The signature, hints and
    docstring are kept, so the model sees the same schema. ``call.cause``: the first error a call raised.
    """
    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def acall(*args: Any, **kwargs: Any) -> Any:
            try:
                value = await asyncio.wait_for(func(*args, **kwargs), timeout)
            except asyncio.TimeoutError:
                raise _failed(
                    acall, TimeoutError(f"tool {func.__name__!r} did not return within {timeout} s")
                ) from None
            except Exception as exc:
                raise _failed(acall, exc) from exc
            except BaseException as exc:  # noqa: BLE001 - exit() in a tool costs that call
                if isinstance(exc, (KeyboardInterrupt, asyncio.CancelledError)):
                    raise
                raise _failed(acall, _exited(func, exc)) from exc
            return _content(acall, func, value, max_chars)

        acall.cause = None
        return acall

    @functools.wraps(func)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            if threading.current_thread() is threading.main_thread():
                value = _in_main_thread(func, args, kwargs, timeout)
            else:
                value = _in_worker_thread(func, args, kwargs, timeout)
        except Exception as exc:
            raise _failed(call, exc) from exc
        except BaseException as exc:  # noqa: BLE001 - exit() in a tool costs that call, not the run
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise _failed(call, _exited(func, exc)) from exc
        return _content(call, func, value, max_chars)

    call.cause = None
    return call


def _failed(wrapper: Any, exc: Exception) -> Exception:
    if wrapper.cause is None:
        wrapper.cause = f"{type(exc).__name__}: {exc}"[:300]
    return exc


def _exited(func: Callable, exc: BaseException) -> RuntimeError:
    return RuntimeError(f"tool {func.__name__!r} ended with {type(exc).__name__}({exc})")


def _content(wrapper: Any, func: Callable, value: Any, max_chars: int) -> Any:
    """``value`` once TRL can render it (``value if isinstance(value, list) else str(value)`` in the tool message):
    a result ``str()`` fails on is an error for this call, a text longer than ``max_chars`` is cut, the rest as is."""
    if isinstance(value, list):
        return value
    try:
        text = value if isinstance(value, str) else str(value)
        if not isinstance(text, str):
            raise TypeError(f"__str__ returned {type(text).__name__}")
    except Exception as exc:  # noqa: BLE001 - a result that cannot be shown costs the call
        error = RuntimeError(
            f"tool {func.__name__!r} returned a value of type {type(value).__name__} that cannot be shown as text: "
            f"{type(exc).__name__}: {exc}"
        )
        raise _failed(wrapper, error) from exc
    if len(text) > max_chars:
        return text[:max_chars] + f"... [cut at {max_chars} characters]"
    return value


def _in_main_thread(func: Callable, args: tuple, kwargs: dict, timeout: float | None) -> Any:
    """The call in this (the main) thread, bounded by a ``SIGALRM`` interval timer; an outer timer that was armed
    (the caller's own alarm) is re-armed afterwards with what it had left."""
    outer, interval = signal.getitimer(signal.ITIMER_REAL)
    if timeout is None or 0 < outer <= timeout:  # the outer alarm comes first anyway
        return func(*args, **kwargs)

    def expire(signum: int, frame: Any) -> None:
        raise TimeoutError(f"tool {func.__name__!r} did not return within {timeout} s")

    previous = signal.signal(signal.SIGALRM, expire)
    start = time.monotonic()
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        return func(*args, **kwargs)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer > 0:
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - start), 0.001), interval)


def _in_worker_thread(func: Callable, args: tuple, kwargs: dict, timeout: float | None) -> Any:
    """The call in a daemon thread, waited on for ``timeout`` s (Python cannot stop a thread: a stuck tool goes on)."""
    late = TimeoutError(f"tool {func.__name__!r} did not return within {timeout} s")
    return in_thread(lambda: func(*args, **kwargs), timeout, late, f"tool-{func.__name__}")


def get_tool(name: str, timeout: float | None = DEFAULT_TIMEOUT) -> Callable:
    """The tool ``name``, checked (``tool_schema``) and bounded in time (``bounded``)."""
    func = lookup_tool(name)
    tool_schema(func)
    return bounded(func, timeout)


def tool_specs(value: Any) -> list[dict]:
    """The recipe's ``tools:`` entries as ``{name, timeout}`` mappings (a bare string is a name)."""
    return [{"name": v} if isinstance(v, str) else v for v in (value or [])]


def tool_problems(tools: Any) -> list[Problem]:
    """``(key, message)`` for everything wrong with a ``tools:`` section, without loading a model."""
    if tools is None:
        return []
    if not isinstance(tools, list):
        return [Problem("", "tools", "must be a list of tool names, e.g. tools: [calculator]")]
    problems, seen = [], {}
    for i, spec in enumerate(tool_specs(tools)):
        key = f"tools.{i}"
        if not isinstance(spec, dict) or "name" not in spec:
            problems.append(Problem("", key, "must be a tool name or a mapping {name, timeout}"))
            continue
        extra = [k for k in spec if k not in ("name", "timeout")]
        if extra:
            problems.append(Problem("", f"{key}.{extra[0]}", "unknown key; tool keys: name, timeout"))
        timeout = spec.get("timeout")
        bad_number = isinstance(timeout, bool) or not isinstance(timeout, (int, float))
        if timeout is not None and (bad_number or timeout <= 0):
            problems.append(Problem("", f"{key}.timeout", f"must be a positive number of seconds, got {timeout!r}"))
        try:
            func = lookup_tool(spec["name"])
            tool_schema(func)
        except ToolError as exc:
            problems.append(Problem("", f"{key}.name", str(exc)))
            continue
        if func.__name__ in seen:
            message = f"the model would see two tools named {func.__name__!r} (also tools.{seen[func.__name__]})"
            problems.append(Problem("", key, message))
        seen[func.__name__] = i
    return problems


def build_tools(tools: Any) -> list[Callable]:
    """The recipe's tools, ready for ``GRPOTrainer(tools=...)``."""
    return [get_tool(s["name"], s.get("timeout", DEFAULT_TIMEOUT)) for s in tool_specs(tools)]
