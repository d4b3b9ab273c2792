"""One registry type for rewards, dataset builders, tools and environments, the one importer of
``module.path:attribute`` targets and the one loader of plugin files (each executed once, however it is named).
A name registered again from the same definition (``module:qualname``) replaces it, from another is an error."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from grpo_trl.errors import GrpoTrlError, RewardError, suggest

PLUGIN_MODULE_PREFIX = "grpo_trl_plugin_"  # the module name of each file under plugins:
_FILES: dict[str, ModuleType] = {}  # plugin files already executed, by resolved path


def file_module(path: Path) -> ModuleType | None:
    """The module already executed from the file at resolved ``path`` (a plugin, or a module imported by name)."""
    for module in [_FILES.get(str(path)), *list(sys.modules.values())]:
        file = getattr(module, "__file__", None)
        if isinstance(file, str) and Path(file).name == path.name and os.path.realpath(file) == str(path):
            return module
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


_REGISTRATIONS = [0]  # every registration in any registry, counted: a plugin file that made none is reported
_UNREGISTERED: dict[str, list[str]] = {}  # plugin file -> its plain functions, when it registered nothing


@dataclass(frozen=True)
class Entry:
    """One registered name: the object, where it is defined (``module:qualname``) and what it declared."""

    name: str
    obj: Any
    source: str
    meta: dict[str, Any] = field(default_factory=dict)


def source_of(obj: Any, name: str = "?") -> str:
    """``module:qualname`` of a definition: the same text for the same code executed twice."""
    return f"{getattr(obj, '__module__', '?')}:{getattr(obj, '__qualname__', name)}"


class Registry:
    """Names -> ``Entry`` for one ``kind``. ``duplicate`` (over ``name``, ``prev``, ``source``) and ``unknown`` (over
    ``name``, ``hint``: the did-you-mean, ``names``) are ``str.format`` messages of ``error``."""

    def __init__(
        self,
        kind: str,
        error: type[GrpoTrlError],
        *,
        duplicate: str,
        unknown: str,
        hint: Callable[[str, list[str]], str] | None = None,
        form: str = "function",
        key: str = "",
    ) -> None:
        self.kind, self.error, self.duplicate, self.unknown = kind, error, duplicate, unknown
        self.hint = hint or suggest
        self.form, self.key = form, key
        self._entries: dict[str, Entry] = {}

    def add(self, name: str, obj: Any, *, source: str | None = None, **meta: Any) -> Any:
        """Register ``obj`` under ``name`` (the duplicate policy above); returns ``obj``."""
        source = source or source_of(obj, name)
        prev = self._entries.get(name)
        if prev is not None and prev.source != source:
            raise self.error(self.duplicate.format(name=name, prev=prev.source, source=source))
        self._entries[name] = Entry(name, obj, source, meta)
        _REGISTRATIONS[0] += 1
        return obj

    def decorator(self, name: str | None = None, **meta: Any) -> Callable[[Any], Any]:
        """``@registry.decorator(name, **meta)``: ``add`` under ``name`` (default: the object's ``__name__``)."""
        return lambda obj: self.add(name or obj.__name__, obj, **meta)

    def remove(self, name: str) -> None:
        self._entries.pop(name, None)

    def get(self, name: str) -> Entry:
        """The entry of a registered ``name``; ``error`` with the did-you-mean and the known names otherwise."""
        if (entry := self._entries.get(name)) is None:
            names = sorted(self._entries)
            hint = self.hint(name, names)
            raise self.error(self.unknown.format(name=name, hint=hint, names=", ".join(names)), key=self.key)
        return entry

    def resolve(self, name: str) -> Any:
        """The object a registered name or a ``module.path:attribute`` names."""
        if not isinstance(name, str) or not name:
            raise self.error(f"{self.kind} names are strings, got {name!r}", key=self.key)
        if ":" in name:
            return import_target(name, self.kind, self.error, form=self.form, key=self.key)
        return self.get(name).obj

    def entry_of(self, obj: Any) -> Entry | None:
        """The entry that registered ``obj`` itself (what a ``module:attr`` name may reach too), if any."""
        return next((e for e in self._entries.values() if e.obj is obj), None)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[Entry]:
        return iter([self._entries[k] for k in sorted(self._entries)])

    def names(self) -> list[str]:
        return sorted(self._entries)


def from_plugin(obj: Any) -> bool:
    """Whether ``obj`` was defined by a file under ``plugins:`` (user code that ``check`` never runs)."""
    return str(getattr(obj, "__module__", "")).startswith(PLUGIN_MODULE_PREFIX)


def add_import_path(folder: str | Path) -> None:
    """Make modules in ``folder`` (the recipe's) importable for ``module:attr`` names; searched last."""
    folder = str(Path(folder).resolve())
    if folder not in sys.path:
        sys.path.append(folder)


def load_plugins(folder: str | Path, files: list[str]) -> None:
    """The recipe's ``plugins:``: ``folder`` on the import path, then each file (relative to it) loaded once."""
    add_import_path(folder)
    for file in files:
        load_plugin(Path(folder) / file)


def load_plugin(path: str | Path) -> None:
    """Execute a Python file that registers rewards, builders, tools or environments, once (not again, nor after it
    was imported as a ``module:attr``)."""
    try:
        p = Path(path).expanduser().resolve()
    except (OSError, RuntimeError, ValueError) as exc:  # a symlink loop, a NUL byte
        raise RewardError(f"plugin file {str(path)!r} cannot be read ({exc}); fix the path under 'plugins:'") from None
    if p.is_file() and file_module(p) is not None:  # loaded already, or imported as a module:attr name: not twice
        return
    if not p.is_file():
        what = "is not a Python file" if p.exists() else "does not exist"  # a folder, a device
        raise RewardError(f"plugin file {str(path)!r} {what}; fix the path under 'plugins:' (relative to the recipe)")
    mod_name = f"{PLUGIN_MODULE_PREFIX}{p.stem}_{abs(hash(str(p))) % 10**8}"
    spec = importlib.util.spec_from_file_location(mod_name, p)
    if spec is None or spec.loader is None:  # Python only imports source files it knows by their suffix
        raise RewardError(f"plugin file {str(path)!r} is not a Python file; name a .py file under 'plugins:'")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module  # lets what the plugin registers pickle by reference
    before = _REGISTRATIONS[0]
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:  # noqa: BLE001 - the plugin fails, or calls exit(), while importing
        sys.modules.pop(mod_name, None)
        if isinstance(exc, KeyboardInterrupt):
            raise  # Ctrl-C while a slow plugin imports still stops the program
        raise RewardError(f"plugin file {str(path)!r} failed to import: {import_failure(exc)}") from exc
    _FILES[str(p)] = module  # a module:attr naming this file gets it, not a second run
    if _REGISTRATIONS[0] == before:  # registered nothing: remember its plain functions for `check` to name
        _UNREGISTERED[str(p)] = [
            n
            for n, v in vars(module).items()
            if inspect.isfunction(v) and v.__module__ == mod_name and not n.startswith("_")
        ]


def plugin_unregistered(path: str | Path) -> list[str]:
    """Public functions of a loaded plugin file that registered nothing at all."""
    try:
        return list(_UNREGISTERED.get(str(Path(path).expanduser().resolve()), []))
    except (OSError, RuntimeError, ValueError):  # a path load_plugin refused
        return []
