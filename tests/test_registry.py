"""The one ``Registry`` type, as each of the four registries (rewards, builders, tools, environments) uses it:
one duplicate policy, one did-you-mean, ``module:attr`` targets, plugin files executed once."""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from grpo_trl.data.registry import BUILDERS, DataError, get_builder, register_builder
from grpo_trl.environments.registry import ENVIRONMENTS, EnvError, lookup_environment, register_environment
from grpo_trl.registry import Registry, from_plugin, load_plugin, plugin_unregistered
from grpo_trl.rewards.registry import REWARDS, RewardError, get_reward, register_reward
from grpo_trl.tools.registry import TOOLS, ToolError, lookup_tool, register_tool


@dataclass
class Kind:
    registry: Registry
    register: Any  # the public decorator factory: register(name) -> decorator
    lookup: Any  # the public lookup by name
    error: type[Exception]
    builtin: str  # a built-in's name, and a near miss of it
    near_miss: str
    duplicate: str  # the message for registering ``builtin`` again from another definition (byte-identical)


def _builder_register(name: str) -> Any:
    return register_builder(name)


KINDS = {
    "reward": Kind(
        REWARDS,
        register_reward,
        get_reward,
        RewardError,
        "countdown",
        "countdwn",
        "reward 'countdown' is already registered by grpo_trl.rewards.countdown:countdown; choose another name for "
        "tests.test_registry:{qualname} (register_reward('my_name'))",
    ),
    "builder": Kind(
        BUILDERS,
        _builder_register,
        get_builder,
        DataError,
        "countdown",
        "countdwn",
        "dataset builder 'countdown' is already registered",
    ),
    "tool": Kind(
        TOOLS,
        register_tool,
        lookup_tool,
        ToolError,
        "calculator",
        "calculater",
        "tool 'calculator' is already registered by grpo_trl.tools.calculator:calculator; choose another name",
    ),
    "environment": Kind(
        ENVIRONMENTS,
        register_environment,
        lookup_environment,
        EnvError,
        "countdown",
        "countdwn",
        "environment 'countdown' is already registered; choose another name",
    ),
}


@pytest.fixture(params=sorted(KINDS))
def kind(request, monkeypatch) -> Kind:
    k = KINDS[request.param]
    monkeypatch.setattr(k.registry, "_entries", dict(k.registry._entries))  # what a test registers goes with it
    return k


def thing(completions: list | None = None, **kwargs: Any) -> list:
    """A stand-in every registry takes: a function with a docstring.

    Args:
        completions: Unused.
    """
    return []


def test_a_name_taken_by_another_definition_is_refused_with_the_registrys_message(kind):
    def impostor(completions: list | None = None, **kwargs: Any) -> list:
        return []

    before = kind.registry.get(kind.builtin)
    with pytest.raises(kind.error) as err:
        kind.register(kind.builtin)(impostor)
    assert str(err.value) == kind.duplicate.format(qualname=impostor.__qualname__)
    assert kind.registry.get(kind.builtin) == before  # the built-in is untouched


def test_the_same_definition_registered_again_replaces_itself(kind):
    """A module (or plugin file) executed twice registers the same ``module:qualname``: not a duplicate."""
    for _ in range(2):

        def again(completions: list | None = None, **kwargs: Any) -> list:
            """Registered twice."""
            return []

        kind.register("t_registry_again")(again)
    assert kind.registry.get("t_registry_again").source == f"tests.test_registry:{again.__qualname__}"
    assert "t_registry_again" in kind.registry.names()


def test_an_unknown_name_says_what_is_close(kind):
    with pytest.raises(kind.error, match=f"unknown .*'{kind.near_miss}' \\(did you mean '{kind.builtin}'\\?\\)"):
        kind.lookup(kind.near_miss)


def test_module_attr_names_resolve_through_targets(kind):
    assert kind.registry.resolve("tests.test_registry:thing") is thing
    with pytest.raises(kind.error, match="module 'tests.test_registry' has no attribute 'nope'"):
        kind.registry.resolve("tests.test_registry:nope")
    with pytest.raises(kind.error, match="cannot import module 'no_such_module_xyz'"):
        kind.registry.resolve("no_such_module_xyz:thing")


PLUGIN = textwrap.dedent(
    '''
    from grpo_trl.data.registry import register_builder
    from grpo_trl.environments.registry import register_environment
    from grpo_trl.rewards.registry import register_reward
    from grpo_trl.tools.registry import register_tool

    RUNS = globals().get("RUNS", 0) + 1

    def thing(completions=None, **kwargs):
        """Registered by a plugin."""
        return []

    for register in (register_reward, register_builder, register_tool, register_environment):
        register("t_registry_plugin")(thing)
    '''
)


def test_a_plugin_file_is_executed_once_and_registers_in_any_registry(kind, tmp_path):
    import sys

    plugin = tmp_path / "every_kind.py"
    plugin.write_text(PLUGIN)
    for other in KINDS.values():  # every registry: the plugin registers in all four at once
        if other is not kind:
            other.registry.remove("t_registry_plugin")
    load_plugin(plugin)
    load_plugin(plugin)  # not executed again
    entry = kind.registry.get("t_registry_plugin")
    obj = entry.obj.func if kind.registry is BUILDERS else entry.obj
    assert from_plugin(obj)
    assert sys.modules[obj.__module__].RUNS == 1
    assert plugin_unregistered(plugin) == []  # it registered something
    for other in KINDS.values():
        other.registry.remove("t_registry_plugin")


def test_a_plugin_that_registers_nothing_is_named_with_its_functions(tmp_path):
    plugin = tmp_path / "plain.py"
    plugin.write_text("def brevity(completions, **kwargs):\n    return []\n\ndef _helper():\n    pass\n")
    load_plugin(plugin)
    assert plugin_unregistered(plugin) == ["brevity"]


def _imports(path: Path) -> set[str]:
    """Every ``grpo_trl`` module a file imports, at the top or inside functions (``from pkg import submodule``
    imports the submodule, not what ``pkg/__init__.py`` defines)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            folder = ROOT.joinpath(*node.module.split(".")[1:])
            for a in node.names:
                sub = (folder / f"{a.name}.py").exists() or (folder / a.name / "__init__.py").exists()
                out.add(f"{node.module}.{a.name}" if sub else node.module)
    return {m for m in out if m.startswith("grpo_trl")}


ROOT = Path(__file__).parents[1] / "grpo_trl"
CAPABILITIES = ["rewards", "tools", "environments", "data"]  # lowest first: each imports its own folder or lower ones


@pytest.mark.parametrize("folder", CAPABILITIES)
def test_registries_import_no_member_and_members_import_no_package_init(folder):
    package = f"grpo_trl.{folder}"
    members = {f"{package}.{p.stem}" for p in (ROOT / folder).glob("*.py") if p.stem != "__init__"}
    for path in sorted((ROOT / folder).glob("*.py")):
        if path.stem == "__init__":
            continue
        imported, here = _imports(path), f"{package}.{path.stem}"
        assert package not in imported, f"{here} imports its package __init__"
        higher = CAPABILITIES[CAPABILITIES.index(folder) + 1 :]
        climbs = sorted(m for m in imported if m.split(".")[1] in higher)
        assert not climbs, f"{here} imports a higher capability: {climbs}"
        if path.stem == "registry":
            registering = {m for m in members if f"{package}.registry import register_" in _source(m)}
            assert not imported & registering, f"{here} imports its built-ins {sorted(imported & registering)}"


def _source(module: str) -> str:
    return ROOT.joinpath(*module.split(".")[1:]).with_suffix(".py").read_text()


def test_the_shared_floors_import_only_what_is_below_them():
    assert "grpo_trl.rewards.registry" not in _imports(ROOT / "rewards" / "signature.py")  # the circle it closed
    assert _imports(ROOT / "registry.py") == {"grpo_trl.errors"}
    assert _imports(ROOT / "timeouts.py") == set()
