"""The tool registry: register, look up, check the schema the model will see (transformers' ``get_json_schema``,
as TRL renders it), and bound every call in time and size."""

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
    """A tool could not be found or would not reach the model as intended."""


TOOLS = Registry(
    "tool",
    ToolError,
    duplicate="tool {name!r} is already registered by {prev}; choose another name",
    unknown="unknown tool {name!r}{hint}; built-in tools: {names}; your own can be given as 'module.path:function' "
    "or registered with @register_tool in a file listed under 'plugins:'",
)


register_tool = TOOLS.decorator  # @register_tool(name): what recipes write; the model sees the function's name
lookup_tool = TOOLS.resolve  # the raw function for a registered name or ``module.path:function``


def tool_schema(func: Callable) -> dict:
    """The JSON schema the model will see (transformers' ``get_json_schema``), or ``ToolError`` with the fix."""
    from transformers.utils import get_json_schema
    from transformers.utils.chat_template_utils import DocstringParsingException, TypeHintParsingException

    label = getattr(func, "__name__", repr(func))
    if not callable(func):
        raise ToolError(f"tool {label!r} is not callable")
    try:
        return get_json_schema(func)
    except TypeHintParsingException as exc:
        raise ToolError(f"tool {label!r}: {exc} (add a type hint to every parameter, e.g. `x: int`)") from exc
    except DocstringParsingException as exc:  # the model knows a tool by its docstring only
        fix = "give it a Google-style docstring: a one-line description, and under 'Args:' `name: what it is` each"
        raise ToolError(f"tool {label!r}: {exc} ({fix})") from exc
    except (TypeError, ValueError) as exc:
        raise ToolError(f"tool {label!r}: its schema cannot be built: {exc}") from exc


def bounded(func: Callable, timeout: float | None = DEFAULT_TIMEOUT, max_chars: int = MAX_RESULT_CHARS) -> Callable:
    """``func`` (same schema) with each call bounded to ``timeout`` s (``SIGALRM`` in the main thread, else a worker
    thread or ``wait_for``) and its text to ``max_chars``; a timeout, ``exit()`` or an unprintable result fails that
    call only (TRL reports ``{"error": ...}``). ``.cause``: the first error a call raised."""

    def fail(exc: BaseException) -> Exception:
        if isinstance(exc, (KeyboardInterrupt, asyncio.CancelledError)):
            raise exc
        if not isinstance(exc, Exception):  # exit() in a tool costs that call, not the run
            exc = RuntimeError(f"tool {func.__name__!r} ended with {type(exc).__name__}({exc})")
        if wrapper.cause is None:
            wrapper.cause = f"{type(exc).__name__}: {exc}"[:300]
        return exc

    def content(value: Any) -> Any:
        if isinstance(value, list):
            return value
        try:
            text = str(value)  # a __str__ returning other than text raises TypeError itself
        except Exception as exc:  # noqa: BLE001 - a result that cannot be shown costs the call
            shown = f"returned a value of type {type(value).__name__} that cannot be shown as text"
            raise fail(RuntimeError(f"tool {func.__name__!r} {shown}: {type(exc).__name__}: {exc}")) from exc
        return text[:max_chars] + f"... [cut at {max_chars} characters]" if len(text) > max_chars else value

    late = f"tool {func.__name__!r} did not return within {timeout} s"
    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                value = await asyncio.wait_for(func(*args, **kwargs), timeout)
            except asyncio.TimeoutError:
                raise fail(TimeoutError(late)) from None
            except BaseException as exc:  # noqa: BLE001
                raise fail(exc) from exc
            return content(value)

    else:

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                if threading.current_thread() is threading.main_thread():
                    value = _alarmed(func, args, kwargs, timeout, late)
                else:  # Python cannot stop a thread: a stuck tool goes on, the call fails
                    value = in_thread(
                        lambda: func(*args, **kwargs), timeout, TimeoutError(late), f"tool-{func.__name__}"
                    )
            except BaseException as exc:  # noqa: BLE001
                raise fail(exc) from exc
            return content(value)

    wrapper.cause = None
    return wrapper


def _alarmed(func: Callable, args: tuple, kwargs: dict, timeout: float | None, late: str) -> Any:
    """The call bounded by a ``SIGALRM`` interval timer; an outer timer already armed is re-armed afterwards."""
    outer, interval = signal.getitimer(signal.ITIMER_REAL)
    if timeout is None or 0 < outer <= timeout:  # the outer alarm comes first anyway
        return func(*args, **kwargs)

    def expire(signum: int, frame: Any) -> None:
        raise TimeoutError(late)

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


def get_tool(name: str, timeout: float | None = DEFAULT_TIMEOUT) -> Callable:
    """The tool ``name``, its schema checked, bounded."""
    tool_schema(func := lookup_tool(name))
    return bounded(func, timeout)


def tool_specs(value: Any) -> list[dict]:
    """The recipe's ``tools:`` entries as ``{name, timeout}`` mappings (a bare string is a name)."""
    return [{"name": v} if isinstance(v, str) else v for v in (value or [])]


def tool_problems(tools: Any) -> list[Problem]:
    """What is wrong with a ``tools:`` section the recipe schema accepted (``ToolSpec``): a tool that cannot be found
    or read by the model, or two tools of one name; no model is loaded."""
    problems, seen = [], {}
    for i, spec in enumerate(tool_specs(tools)):
        try:
            tool_schema(func := lookup_tool(spec["name"]))
        except ToolError as exc:
            problems.append(Problem("", f"tools.{i}.name", str(exc)))
            continue
        if func.__name__ in seen:
            message = f"the model would see two tools named {func.__name__!r} (also tools.{seen[func.__name__]})"
            problems.append(Problem("", f"tools.{i}", message))
        seen[func.__name__] = i
    return problems


def build_tools(tools: Any) -> list[Callable]:
    """The recipe's tools, ready for ``GRPOTrainer(tools=...)``."""
    return [get_tool(s["name"], s.get("timeout", DEFAULT_TIMEOUT)) for s in tool_specs(tools)]
