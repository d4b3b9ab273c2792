"""``module.path:attribute`` targets (rewards, tools, environments): one importer with one set of errors."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

PLUGIN_MODULE_PREFIX = "grpo_trl_plugin_"  # the module name of each file under plugins: (grpo_trl.registry)
_FILES: dict[str, ModuleType] = {}  # plugin files already executed, by resolved path


def remember_file(path: str | Path, module: ModuleType) -> None:
    """``module`` is the plugin file at ``path``: a ``module:attr`` naming that file gets it, not a second run."""
    _FILES[str(Path(path).resolve())] = module


def file_module(path: str | Path) -> ModuleType | None:
    """The module already executed from the file at ``path`` (a plugin, or a module imported by name), if any."""
    key = str(Path(path).resolve())
    if key in _FILES:
        return _FILES[key]
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if isinstance(file, str) and file.endswith(".py") and Path(file).name == Path(key).name:
            try:
                if str(Path(file).resolve()) == key:
                    return module
            except (OSError, RuntimeError, ValueError):
                continue
    return None


def _already_run(mod_name: str) -> None:
    """Bind ``mod_name`` to the plugin module executed from the same file, so that importing it runs nothing."""
    if mod_name in sys.modules or not _FILES:
        return
    try:
        spec = importlib.util.find_spec(mod_name)
    except Exception:  # noqa: BLE001 - the import below reports what is wrong
        return
    origin = getattr(spec, "origin", None)
    if isinstance(origin, str):
        module = _FILES.get(str(Path(origin).resolve()))
        if module is not None:
            sys.modules[mod_name] = module


def import_target(
    name: str, what: str, error: Callable[..., Exception], form: str = "function", **error_kwargs: Any
) -> Any:
    """The object ``module.path:attribute`` names, else ``error(message, **error_kwargs)`` saying why (``form``: what
    the attribute should be); a module raising or calling ``exit()`` while importing is one error."""
    mod_name, _, attr = name.partition(":")
    if not mod_name or not attr or not all(p.isidentifier() for p in [*mod_name.split("."), attr]):
        raise error(f"{what} {name!r} is neither a registered name nor module.path:{form}", **error_kwargs)
    try:
        _already_run(mod_name)
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
    """What went wrong while importing user code, in one line."""
    return (
        f"exit({exc.code!r}) called while importing"
        if isinstance(exc, SystemExit)
        else f"{type(exc).__name__}: {_message(exc)}"
    )


def _message(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:  # noqa: BLE001 - a hostile __str__
        return "(unprintable message)"
