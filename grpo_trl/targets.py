"""``module.path:attribute`` targets (rewards, tools, environments): one importer with one set of errors.

Example:
    >>> import_target("os.path:join", "tool", ValueError).__name__
    'join'
    >>> import_target("os.path:nope", "tool", ValueError)
    Traceback (most recent call last):
    ...
    ValueError: tool 'os.path:nope': module 'os.path' has no attribute 'nope'
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def import_target(
    name: str, what: str, error: Callable[..., Exception], form: str = "function", **error_kwargs: Any
) -> Any:
    """The object ``module.path:attribute`` names; ``error(message, **error_kwargs)`` is raised for a malformed
    name (``form`` says what the attribute should be: function, Class), a module that cannot be imported or fails
    while importing (an exception, ``exit()``; Ctrl-C still stops), or an attribute missing or failing to read."""
    mod_name, _, attr = name.partition(":")
    if not mod_name or not attr or not all(p.isidentifier() for p in [*mod_name.split("."), attr]):
        raise error(f"{what} {name!r} is neither a registered name nor module.path:{form}", **error_kwargs)
    try:
        module = importlib.import_module(mod_name)
    except ImportError as exc:
        why = f"cannot import module {mod_name!r} ({_message(exc)}); is it on PYTHONPATH?"
        raise error(f"{what} {name!r}: {why}", **error_kwargs) from exc
    except KeyboardInterrupt:
        raise  # Ctrl-C while a slow module imports still stops the program
    except BaseException as exc:  # noqa: BLE001 - the user's module fails, or calls exit(), while importing
        why = f"module {mod_name!r} failed to import: {import_failure(exc)}"
        raise error(f"{what} {name!r}: {why}", **error_kwargs) from exc
    try:
        return getattr(module, attr)
    except AttributeError:
        raise error(f"{what} {name!r}: module {mod_name!r} has no attribute {attr!r}", **error_kwargs) from None
    except Exception as exc:  # noqa: BLE001 - a module __getattr__ or property of the user's that raises
        raise error(f"{what} {name!r}: reading {attr!r} failed: {import_failure(exc)}", **error_kwargs) from exc


def import_failure(exc: BaseException) -> str:
    """What went wrong while importing user code, in one line: ``exit(3) called while importing``, or the error."""
    if isinstance(exc, SystemExit):
        return f"exit({exc.code!r}) called while importing"
    return f"{type(exc).__name__}: {_message(exc)}"


def _message(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:  # noqa: BLE001 - a hostile __str__
        return "(unprintable message)"
