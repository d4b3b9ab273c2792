"""requirements.lock (what `make install` installs) agrees with pyproject.toml: a dependency added or a range changed
without `make lock` fails here, not on a user's machine."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

tomllib = pytest.importorskip("tomllib")  # Python 3.11+ (CI runs 3.11)

ROOT = Path(__file__).resolve().parents[1]
LOCKED_EXTRAS = ("dev", "deepspeed")  # the extras `make lock` resolves


def _pins() -> dict[str, str]:
    text = (ROOT / "requirements.lock").read_text()
    return {canonicalize_name(m[1]): m[2] for m in re.finditer(r"^([A-Za-z0-9._-]+)==(\S+)", text, re.M)}


def test_every_pin_carries_a_hash():
    text = (ROOT / "requirements.lock").read_text()
    entries = re.split(r"\n(?=[A-Za-z0-9])", text.split("\n", 2)[2].strip())
    assert len(entries) == len(_pins()) > 50
    assert all("--hash=sha256:" in entry for entry in entries)


def test_lock_satisfies_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = list(project["dependencies"])
    for extra in LOCKED_EXTRAS:
        wanted += project["optional-dependencies"][extra]
    pins = _pins()
    wrong = []
    for spec in wanted:
        req = Requirement(spec)
        pinned = pins.get(canonicalize_name(req.name))
        if pinned is None or not req.specifier.contains(pinned, prereleases=True):
            wrong.append(f"{spec} (locked: {pinned})")
    assert not wrong, "run make lock: " + ", ".join(wrong)


def test_lock_has_the_cpu_torch_and_uv():
    pins = _pins()
    assert pins["torch"].endswith("+cpu")  # PyPI's torch of the same version is the CUDA build
    assert "uv" in pins  # make install bootstraps uv from this pin
