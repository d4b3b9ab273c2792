"""The layout holds: no import circles and no import that climbs from a lower floor to a higher one, counting the
imports inside functions and ``importlib.import_module("grpo_trl...")`` calls (see ARCHITECTURE.md, "Floors").

The scan reads each module's syntax tree; nothing is imported. ``FLOORS`` is the one list of floors: a module may
import from its own floor (without a circle) or a lower one. What a module's ``if __name__ == "__main__":`` block
imports (``python -m grpo_trl.train`` handing over to the CLI) is the program's entry point, not the module's: it is
counted as a module ``<name>.__main__`` on the top floor.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "grpo_trl"

# Bottom to top. A name is a module or a package (everything under it); the longest match wins.
FLOORS: list[list[str]] = [
    ["grpo_trl.errors"],
    [
        "grpo_trl.tables",
        "grpo_trl.trl_adapter",
        "grpo_trl.timeouts",
        "grpo_trl.io",
    ],
    ["grpo_trl._sandbox_boot", "grpo_trl._sandbox_host", "grpo_trl._sandbox_ns"],
    # shared mechanisms: one registry type, field helpers, clients
    [
        "grpo_trl.registry",
        "grpo_trl.fields",
        "grpo_trl.sandbox",
        "grpo_trl.endpoint",
        "grpo_trl.endpoint_http",
        "grpo_trl.generation",
    ],
    ["grpo_trl.vllm_cpu", "grpo_trl.rollout"],
    # capabilities, each one folder, in the order they may use each other
    ["grpo_trl.rewards"],
    ["grpo_trl.tools"],
    ["grpo_trl.environments"],
    ["grpo_trl.data"],
    ["grpo_trl.models"],
    ["grpo_trl.monitor"],
    ["grpo_trl.recipe"],
    ["grpo_trl.run"],
    ["grpo_trl.check"],
    ["grpo_trl.eval", "grpo_trl.importer"],
    ["grpo_trl.report"],
    ["grpo_trl.train"],
    ["grpo_trl.cli", "grpo_trl", "grpo_trl.testing"],
]


def module_files() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the package modules it imports anywhere in its body (``from p import m`` counts ``p.m``)."""

    def resolve(name: str) -> str:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name

    edges: dict[str, set[str]] = defaultdict(set)
    for mod, path in modules.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        main = [n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "__name__ == '__main__'"]
        body = [n for n in tree.body if n not in main]
        for owner, nodes in ((mod, body), (f"{mod}.__main__", main)):
            _collect(owner, mod, package, nodes, modules, resolve, edges)
    return edges


def _collect(owner, mod, package, nodes, modules, resolve, edges) -> None:
    for top in nodes:
        for node in ast.walk(top):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(up + ([node.module] if node.module else []))
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            elif isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name)):
                func = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
                arg = node.args[0] if node.args else None
                if func in ("import_module", "__import__") and isinstance(arg, ast.Constant):
                    names = [str(arg.value)]
            for name in names:
                if name == "grpo_trl" or name.startswith("grpo_trl."):
                    target = resolve(name)
                    if target and target != mod:
                        edges[owner].add(target)


def floor_of(mod: str) -> int:
    if mod.endswith(".__main__"):
        return len(FLOORS) - 1
    best, floor = -1, -1
    for i, names in enumerate(FLOORS):
        for name in names:
            if (mod == name or mod.startswith(name + ".")) and len(name) > best:
                best, floor = len(name), i
    return floor


def circles(edges: dict[str, set[str]], nodes: list[str]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found = []
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    top = stack.pop()
                    on.discard(top)
                    comp.append(top)
                    if top == node:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_every_module_has_a_floor():
    assert [m for m in module_files() if floor_of(m) < 0] == []


def test_no_import_circles():
    modules = module_files()
    assert circles(imports(modules), sorted(modules)) == []


def test_no_import_climbs_to_a_higher_floor():
    modules = module_files()
    climbs = [
        f"{src} (floor {floor_of(src)}) -> {dst} (floor {floor_of(dst)})"
        for src, targets in sorted(imports(modules).items())
        for dst in sorted(targets)
        if floor_of(dst) > floor_of(src)
    ]
    assert climbs == []


def test_the_library_never_imports_its_testing_module():
    users = [src for src, targets in imports(module_files()).items() if "grpo_trl.testing" in targets]
    assert users == []


def test_the_scan_sees_imports_inside_functions(tmp_path):
    pkg = tmp_path / "grpo_trl"
    (pkg / "a").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a" / "__init__.py").write_text("")
    (pkg / "a" / "x.py").write_text("def f():\n    from grpo_trl.a import y\n")
    (pkg / "a" / "y.py").write_text("import importlib\nimportlib.import_module('grpo_trl.a.x')\n")
    files = {
        "grpo_trl": pkg / "__init__.py",
        "grpo_trl.a": pkg / "a" / "__init__.py",
        "grpo_trl.a.x": pkg / "a" / "x.py",
        "grpo_trl.a.y": pkg / "a" / "y.py",
    }
    assert circles(imports(files), sorted(files)) == [["grpo_trl.a.x", "grpo_trl.a.y"]]
