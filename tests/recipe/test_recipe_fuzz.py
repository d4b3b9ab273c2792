"""Property test: the real recipes in recipes/, mutated (wrong types, missing and extra keys, hostile strings, huge
numbers, deleted sections), through the CLI entry point in-process. Every outcome is exit 0, or `error:` lines and
exit 1: never a traceback, never the internal-error line (exit 70).

GRPO_TRL_RECIPE_FUZZ_N sets the number of examples (default 60; `make faults` runs 600)."""

from __future__ import annotations

import contextlib
import copy
import io
import os
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_trl.cli import main as cli_main

pytestmark = pytest.mark.fault  # a fault probe: `make faults` runs it with more examples

ROOT = Path(__file__).resolve().parents[2]
RECIPES = [
    yaml.safe_load(p.read_text()) for p in sorted((ROOT / "recipes").rglob("*.yaml")) if "accelerate" not in p.parts
]
N = int(os.environ.get("GRPO_TRL_RECIPE_FUZZ_N", "60"))
DEBUG = ["--debug"] if os.environ.get("GRPO_TRL_FUZZ_DEBUG") else []  # tracebacks into the failure message

HOSTILE_STRINGS = [
    "",
    " ",
    ":",
    "{",
    "}",
    "[",
    "-",
    "~",
    "null",
    "no",
    "1e-6",
    "８",
    "\x00",
    "é" * 3,
    "{}",
    "{0}",
    "Q: {}",
    "../../etc",
    "a" * 5000,
    "builtin:tiny",
    "os:system",
    "nan",
    "inf",
    "-1",
]
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.sampled_from([0, -1, 1, 2, 3, 10**9, 10**18]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(HOSTILE_STRINGS),
    st.text(max_size=30),
    st.lists(st.sampled_from([1, "a", None, 2.5]), max_size=4),
    st.dictionaries(st.sampled_from(["a", "name", "x", "1"]), st.sampled_from([1, "a", None]), max_size=3),
)


def _paths(node, prefix=()):
    """Every (path) into the recipe: sections, keys, list items."""
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, (*prefix, i))


def _mutate(recipe: dict, path: tuple, action: str, value, extra_key: str) -> dict:
    recipe = copy.deepcopy(recipe)
    if not path:
        recipe[extra_key] = value
        return recipe
    node = recipe
    for part in path[:-1]:
        node = node[part]
    last = path[-1]
    if action == "delete":
        del node[last]
    elif action == "extra" and isinstance(node[last], dict):
        node[last][extra_key] = value
    else:
        node[last] = value
    return recipe


@st.composite
def mutated_recipes(draw):
    recipe = draw(st.sampled_from(RECIPES))
    mutations = draw(st.integers(min_value=1, max_value=3))
    for _ in range(mutations):
        paths = list(_paths(recipe))
        path = draw(st.sampled_from(paths))
        action = draw(st.sampled_from(["set", "set", "delete", "extra"]))
        value = draw(VALUES)
        extra_key = draw(st.sampled_from(["extra", "learning_rat", "nme", "1", "name", "tiny", "seed", "builder"]))
        recipe = _mutate(recipe, path, action, value, extra_key)
    return recipe


TRIED = {"n": 0, "ok": 0, "errors": 0}


@pytest.fixture(scope="module", autouse=True)
def _report_fuzz_count():
    """Prints how many mutated recipes were tried, once the module's tests ran in this process (shown with -s)."""
    yield
    if TRIED["n"]:
        n, ok, errors = TRIED["n"], TRIED["ok"], TRIED["errors"]
        print(f"\nrecipe fuzz: {n} mutated recipes, {ok} passed check, {errors} error exits")


@settings(
    max_examples=N,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=os.environ.get("GRPO_TRL_FUZZ_RANDOM") is None,
)
@given(recipe=mutated_recipes())
def test_mutated_recipes_never_traceback(tmp_path_factory, recipe):
    folder = tmp_path_factory.mktemp("fuzz")
    path = folder / "r.yaml"
    try:
        path.write_text(yaml.safe_dump(recipe, allow_unicode=True))
    except (yaml.YAMLError, UnicodeEncodeError):
        return
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli_main([*DEBUG, "check", str(path)])
    TRIED["n"] += 1
    text = err.getvalue()
    assert "Traceback" not in text and "internal error" not in text, (text[-2000:], recipe)
    assert rc in (0, 1), (rc, text[-2000:])
    if rc == 1:
        TRIED["errors"] += 1
        lines = [line for line in text.splitlines() if line.strip()]
        assert lines and all(line.startswith("error: ") for line in lines), text[-2000:]
    else:
        TRIED["ok"] += 1
        assert "OK" in out.getvalue()
