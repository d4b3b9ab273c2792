"""The tool registry: register, look up, check the schema the model will see, and bound every call in time.

A tool is a plain Python function with type hints and a Google-style docstring (``Args:`` describing each
parameter): TRL hands it to the chat template through transformers' ``get_json_schema`` and calls it with the
arguments the model wrote. Tools are named in a recipe's ``tools:`` list by registered name, as
``module.path:function``, or registered from a file listed under ``plugins:`` (the reward plugin loader runs it).

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

import functools
import inspect
import threading
from collections.abc import Callable
from typing import Any

from grpo_trl.errors import GrpoTrlError, suggest
from grpo_trl.targets import import_target

DEFAULT_TIMEOUT = 15.0  # seconds one tool call may take before it becomes an error for that call
MAX_RESULT_CHARS = 4000  # longer text results are cut: a tool must not flood the context

_REGISTRY: dict[str, tuple[Callable, str]] = {}  # name -> (function, where from)


class ToolError(GrpoTrlError):
    """A tool could not be found or would not reach the model as intended. The message says what to change."""


def register_tool(name: str | None = None) -> Callable[[Callable], Callable]:
    """Decorator that registers a tool under ``name`` (default: the function's name). Duplicates are an error.

    The model sees the *function's* name (``__name__``) in its tool schema; ``name`` is what recipes write.
    """

    def decorator(func: Callable) -> Callable:
        reg = name or func.__name__
        source = f"{getattr(func, '__module__', '?')}:{getattr(func, '__qualname__', reg)}"
        if reg in _REGISTRY and _REGISTRY[reg][1] != source:
            raise ToolError(f"tool {reg!r} is already registered by {_REGISTRY[reg][1]}; choose another name")
        _REGISTRY[reg] = (func, source)
        return func

    return decorator


def _builtins_loaded() -> None:
    from grpo_trl.tools import calculator  # noqa: F401

    try:
        from grpo_trl.tools import python  # noqa: F401
    except ImportError:  # the sandbox module is not there yet
        pass


def list_tools() -> dict[str, str]:
    """Registered tool names and the first line of each docstring."""
    _builtins_loaded()
    return {n: (inspect.getdoc(f) or "").split("\n")[0] for n, (f, _) in sorted(_REGISTRY.items())}


def lookup_tool(name: str) -> Callable:
    """The raw function for a registered name or ``module.path:function``; ``ToolError`` says what is wrong."""
    if not isinstance(name, str) or not name:
        raise ToolError(f"a tool is named by a string, got {name!r}")
    if ":" in name:
        return import_target(name, "tool", ToolError)
    _builtins_loaded()
    if name not in _REGISTRY:
        raise ToolError(
            f"unknown tool {name!r}{suggest(name, list(_REGISTRY))}; built-in tools: {', '.join(sorted(_REGISTRY))}; "
            "your own can be given as 'module.path:function' or registered with @register_tool in a file listed "
            "under 'plugins:'"
        )
    return _REGISTRY[name][0]


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
    """``func`` with each call limited to ``timeout`` seconds and text results cut to ``max_chars``.

    A call that takes longer raises ``TimeoutError``, and one that calls ``exit()`` (or raises another
    ``BaseException``) raises ``RuntimeError``: TRL turns either into ``{"error": ...}`` for that call only
    (counted in ``tools/failure_frequency``). Python cannot kill a thread: a tool stuck in pure Python keeps running in
    the background until it returns, so tools that can hang (code execution) should bound themselves too. The
    signature, hints and docstring are kept, so the model sees the same schema.
    """
    if inspect.iscoroutinefunction(func):
        return func  # TRL awaits async tools itself

    @functools.wraps(func)
    def call(*args: Any, **kwargs: Any) -> Any:
        box: dict[str, Any] = {}

        def target() -> None:
            try:
                box["value"] = func(*args, **kwargs)
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
                box["error"] = exc

        worker = threading.Thread(target=target, name=f"tool-{func.__name__}", daemon=True)
        worker.start()
        worker.join(timeout)
        if worker.is_alive():
            raise TimeoutError(f"tool {func.__name__!r} did not return within {timeout} s")
        if "error" in box:
            error = box["error"]
            if not isinstance(error, Exception):  # exit() or another BaseException: that call fails, not the run
                raise RuntimeError(f"tool {func.__name__!r} ended with {type(error).__name__}({error})") from error
            raise error
        value = box.get("value")
        if isinstance(value, str) and len(value) > max_chars:
            value = value[:max_chars] + f"... [cut at {max_chars} characters]"
        return value

    return call


def get_tool(name: str, timeout: float | None = DEFAULT_TIMEOUT) -> Callable:
    """The tool ``name``, checked (``tool_schema``) and bounded in time (``bounded``)."""
    func = lookup_tool(name)
    tool_schema(func)
    return bounded(func, timeout)


def tool_specs(value: Any) -> list[dict]:
    """The recipe's ``tools:`` entries as ``{name, timeout}`` mappings (a bare string is a name)."""
    return [{"name": v} if isinstance(v, str) else v for v in (value or [])]


def tool_problems(tools: Any) -> list[tuple[str, str]]:
    """``(key, message)`` for everything wrong with a ``tools:`` section, without loading a model."""
    if tools is None:
        return []
    if not isinstance(tools, list):
        return [("tools", "must be a list of tool names, e.g. tools: [calculator]")]
    problems, seen = [], {}
    for i, spec in enumerate(tool_specs(tools)):
        key = f"tools.{i}"
        if not isinstance(spec, dict) or "name" not in spec:
            problems.append((key, "must be a tool name or a mapping {name, timeout}"))
            continue
        extra = [k for k in spec if k not in ("name", "timeout")]
        if extra:
            problems.append((f"{key}.{extra[0]}", "unknown key; tool keys: name, timeout"))
        timeout = spec.get("timeout")
        bad_number = isinstance(timeout, bool) or not isinstance(timeout, (int, float))
        if timeout is not None and (bad_number or timeout <= 0):
            problems.append((f"{key}.timeout", f"must be a positive number of seconds, got {timeout!r}"))
        try:
            func = lookup_tool(spec["name"])
            tool_schema(func)
        except ToolError as exc:
            problems.append((f"{key}.name", str(exc)))
            continue
        if func.__name__ in seen:
            message = f"the model would see two tools named {func.__name__!r} (also tools.{seen[func.__name__]})"
            problems.append((key, message))
        seen[func.__name__] = i
    return problems


def build_tools(tools: Any) -> list[Callable]:
    """The recipe's tools, ready for ``GRPOTrainer(tools=...)``."""
    return [get_tool(s["name"], s.get("timeout", DEFAULT_TIMEOUT)) for s in tool_specs(tools)]
