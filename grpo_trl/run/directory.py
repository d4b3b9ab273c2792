"""The output directory is the user's: ``.grpo-trl/manifest.json`` records each entry grpo-trl or the trainer writes
before it is written (or, while the run is alive, once the trainer wrote it); the rest is foreign, never touched. A
run never deletes: ``--overwrite`` moves its entries aside. One run at a time: ``RunLock`` (docs/safety.md)."""

from __future__ import annotations

import logging
import os
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path

from filelock import FileLock, Timeout
from pydantic import BaseModel, ValidationError

from grpo_trl.io import read_json, write_json
from grpo_trl.run.names import STATE, kind_of, predictable
from grpo_trl.trl_adapter import checkpoint_step

logger = logging.getLogger("grpo_trl")


class RunLock:
    """The OS lock, held by the main process; a dead run's ``lock.json`` is taken over with a warning."""

    def __init__(self, folder: str | Path):
        state = Path(folder) / STATE
        state.mkdir(parents=True, exist_ok=True)
        self.info, self._lock = state / "lock.json", FileLock(str(state / "lock"), timeout=0)

    def owner(self, wait_s: float = 0.5) -> dict | None:
        deadline = time.monotonic() + wait_s
        while True:  # the holder writes lock.json right after taking the lock: give it a moment
            try:
                if isinstance(who := read_json(self.info), dict):
                    return who
            except (OSError, ValueError):
                pass
            if time.monotonic() > deadline:
                return None
            time.sleep(0.02)

    def acquire(self) -> str | None:
        """Take the lock; ``None`` on success, else a sentence naming the run that holds it."""
        try:
            self._lock.acquire(timeout=0)
        except Timeout:
            if (who := self.owner()) is None:
                return "is in use by another run (its .grpo-trl/lock.json is unreadable)"
            return f"is in use by another run: PID {who.get('pid')} on {who.get('host')}, started {who.get('started')}"
        if (stale := self.owner(wait_s=0)) and stale.get("pid") != os.getpid():
            logger.warning(
                "taking over the lock of PID %s on %s (started %s): that run is gone (its OS lock was free)",
                stale.get("pid"), stale.get("host"), stale.get("started"),
            )  # fmt: skip
        started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        write_json(self.info, {"pid": os.getpid(), "host": socket.gethostname(), "started": started}, mine=True)
        return None

    def release(self) -> None:
        if self._lock.is_locked:
            try:
                self.info.unlink(missing_ok=True)
            except OSError:  # a read-only folder: the next run takes a lock.json over when the OS lock is free
                pass
            self._lock.release()


class _Shape(BaseModel, strict=True):
    """What ``Manifest.save`` writes; anything else (a hand edit, another tool's file) is trusted not at all."""

    entries: dict[str, dict] | None = None


@dataclass
class Manifest:
    """``<output_dir>/.grpo-trl/manifest.json``: the entries grpo-trl (or the trainer in its run) wrote."""

    folder: Path
    entries: dict[str, dict] = field(default_factory=dict)
    exists: bool = False

    @property
    def path(self) -> Path:
        return self.folder / STATE / "manifest.json"

    @classmethod
    def load(cls, folder: str | Path) -> Manifest:
        empty = cls(Path(folder))
        try:
            _Shape.model_validate(data := read_json(empty.path))
        except FileNotFoundError:
            return empty
        except (OSError, ValueError, ValidationError) as exc:  # a hand edit, another tool's file
            logger.warning("%s is not a grpo-trl manifest (%s): treating every entry as not written by grpo-trl",
                           empty.path, str(exc).splitlines()[0])  # fmt: skip
            return empty
        return cls(empty.folder, dict(data.get("entries") or {}), True)

    def save(self) -> None:
        (self.folder / STATE).mkdir(parents=True, exist_ok=True)
        write_json(self.path, {"version": 3, "entries": self.entries}, mine=True)
        self.exists = True

    def present(self) -> list[str]:
        return sorted(p.name for p in self.folder.iterdir() if p.name != STATE) if self.folder.is_dir() else []

    def record(self, *names: str) -> None:
        """Add ``names``, about to be written by grpo-trl or the trainer."""
        for name in names:
            self.entries.setdefault(name, {"kind": kind_of(name)})

    def foreign(self) -> list[str]:
        """Entries in the directory that grpo-trl did not write."""
        return [n for n in self.present() if n not in self.entries]

    def trained(self) -> list[str]:
        """Entries a run that trained left (checkpoints, logs, final weights): a fresh run would mix with them."""
        return [n for n in self.present() if self.entries.get(n, {}).get("kind") in ("checkpoint", "log", "model")]

    def sync(self, live: bool = False, training: bool = False) -> None:
        """Forget entries that are gone (``training``: only rotated checkpoints), save; ``live``: the run holding
        the lock adopts what the trainer wrote unannounced (a ``predictable`` name)."""
        names = set(self.present())
        keep = {n for n, e in self.entries.items() if n in names or (training and e.get("kind") != "checkpoint")}
        self.entries = {n: e for n, e in self.entries.items() if n in keep}
        if live:
            self.record(*sorted(n for n in names - keep if predictable(n)))
        self.save()

    def remove_own(self, aside: Path | None = None) -> list[str]:
        """``--overwrite``: move the entries grpo-trl wrote (a link as a link) into ``aside``; returns their names."""
        moved = [name for name in self.present() if name in self.entries]
        aside = aside or aside_folder(self.folder)
        for name in moved:
            aside.mkdir(parents=True, exist_ok=True)
            os.replace(self.folder / name, aside / name)
        self.entries = {}
        self.save()
        return moved


def aside_folder(folder: Path) -> Path:
    """The first unused ``.grpo-trl/previous``, ``previous-2``, ...: where ``--overwrite`` moves a run (and
    ``--resume`` the checkpoints it skipped)."""
    state, n = Path(folder) / STATE, 1
    while os.path.lexists(path := state / ("previous" if n == 1 else f"previous-{n}")):
        n += 1
    return path


def record_entries(output_dir: str | Path, *names: str) -> None:
    """Add entries written outside a training run (``grpo-trl report``) to an existing manifest."""
    manifest = Manifest.load(output_dir)
    if not manifest.exists:
        return
    with FileLock(str(manifest.folder / STATE / "manifest.lock"), timeout=10):
        manifest = Manifest.load(output_dir)
        manifest.record(*names)
        manifest.save()


def describe(names: list[str], folder: Path, limit: int = 12) -> str:
    shown = [n + ("/" if (folder / n).is_dir() else "") for n in names[:limit]]
    return ", ".join(shown) + (f" and {len(names) - limit} more" if len(names) > limit else "")


def output_dir_problems(output_dir: str | None, recipe_dir: str | Path | None = None, cwd: Path | None = None) -> list:
    """What is wrong with ``output_dir`` for checkpoints: empty, the root, home, the current directory, the project,
    the recipe's directory or a folder holding one, inside another run (``[]``: nothing)."""
    if output_dir is None:
        output_dir = "trainer_output"  # transformers' default for a null output_dir
    text = str(output_dir).strip()
    if not text:
        return ["is empty: name a folder for checkpoints and logs, e.g. outputs/NAME"]
    if "\0" in text:
        return ["holds a NUL byte, which no file name can: write the folder's name without it"]
    cwd = (cwd or Path.cwd()).resolve()
    try:
        target = (cwd / os.path.expanduser(text)).resolve(strict=False)
        target.exists()  # raises on a name too long; a loop raises in resolve
    except (OSError, RuntimeError) as exc:  # a symlink loop, a name too long
        why = getattr(exc, "strerror", None) or str(exc).split(":")[0]
        return [f"cannot be used as a folder ({why}): name a plain folder such as outputs/NAME"]
    places = {Path("/"): "the filesystem root", Path.home().resolve(): "your home directory"}
    places[cwd] = "the current directory"
    if (root := next((p for p in (cwd, *cwd.parents) if (p / ".git").exists()), None)) is not None:
        places.setdefault(root, "the project (its git root)")
    if recipe_dir is not None:
        places.setdefault(Path(recipe_dir).resolve(), "the recipe's directory")
    hint = "grpo-trl would write checkpoints among your files; use a subfolder such as outputs/NAME"
    problems = []
    for place, what in places.items():
        if target == place:
            problems.append(f"is {what}: {hint}")
        elif target in place.parents:
            problems.append(f"holds {what} ({place}): {hint}")
    for parent in target.parents:
        is_run = (parent / STATE / "manifest.json").is_file()
        in_run = (parent.parent / STATE / "manifest.json").is_file()
        if checkpoint_step(parent.name) is not None and ((parent / "trainer_state.json").is_file() or in_run):
            problems.append(f"is inside the checkpoint {parent} of another run: choose a folder outside it")
            break
        if is_run:
            problems.append(f"is inside the output_dir {parent} of another run: choose a sibling folder instead")
            break
    return problems
