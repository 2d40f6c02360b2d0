"""The package's import graph: acyclic, and the kernels import nothing outside ``_kernels``.

Every import of every module under ``src/treeboost`` counts, those inside functions
included (a function-level import that dodges a cycle at import time is still a
dependency in both directions). Imports of a package are edges to its ``__init__``.
"""

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
ROOT = "treeboost"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts)  # a package's __init__ keeps its "__init__" part


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted((SRC / ROOT).rglob("*.py"))}


def _resolve(name: str, modules) -> str | None:
    """The module (or package ``__init__``) that the dotted ``name`` is, else None."""
    if name in modules:
        return name
    if f"{name}.__init__" in modules:
        return f"{name}.__init__"
    return None


def _imports(module: str, path: Path, modules) -> set[str]:
    """The treeboost modules ``module`` imports anywhere in its source."""
    package = module.rsplit(".", 1)[0]  # the package a module (or __init__) sits in
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module
            # "from x import y": y is a submodule of x, or a name defined in x
            names = [f"{prefix}.{alias.name}" for alias in node.names]
            names = [n if _resolve(n, modules) else prefix for n in names]
        else:
            continue
        for name in names:
            # "import a.b.c" also imports a and a.b: walk up to the first known module
            while name and not _resolve(name, modules):
                name = name.rpartition(".")[0]
            target = _resolve(name, modules) if name else None
            if target is not None and target != module:
                out.add(target)
    return out


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {m: _imports(m, p, modules) for m, p in modules.items()}


def _find_cycle(graph) -> list[str] | None:
    """One cycle of ``graph`` as [a, b, ..., a], or None (iterative depth-first search)."""
    state = dict.fromkeys(graph, 0)  # 0 new, 1 on the current path, 2 done
    for start in sorted(graph):
        if state[start]:
            continue
        path, stack = [start], [iter(sorted(graph[start]))]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state[nxt] == 1:
                return path[path.index(nxt):] + [nxt]
            elif state[nxt] == 0:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(graph[nxt])))
    return None


def test_graph_sees_the_package():
    graph = _graph()
    assert "treeboost.sklearn" in graph
    assert "treeboost.__init__" in graph
    assert "treeboost.booster" in graph["treeboost.sklearn"]  # relative "from .booster import"


def test_no_import_cycle():
    cycle = _find_cycle(_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_kernels_import_only_kernels():
    kernels = f"{ROOT}._kernels"
    bad = {m: sorted(t for t in targets if not t.startswith(kernels + "."))
           for m, targets in _graph().items() if m.startswith(kernels + ".")}
    bad = {m: t for m, t in bad.items() if t}
    assert not bad, f"kernel modules import treeboost modules outside _kernels: {bad}"


def _reachable(graph, start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for nxt in graph[todo.pop()] - seen:
            seen.add(nxt)
            todo.append(nxt)
    return seen


@pytest.mark.parametrize("engine", ["treeboost.serialization", "treeboost.booster"])
def test_engine_does_not_import_the_estimators(engine):
    # the Booster owns its model file; the estimators are its clients, never the reverse
    api = {f"{ROOT}.sklearn", f"{ROOT}._estimator_io", f"{ROOT}._continued",
           f"{ROOT}.__init__"}
    reached = _reachable(_graph(), engine) & api
    assert not reached, f"{engine} depends on the estimator layer through {sorted(reached)}"


@pytest.mark.parametrize(("graph", "expected"), [
    ({"a": {"b"}, "b": {"c"}, "c": set()}, None),
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, ["a", "b", "c", "a"]),
    ({"a": {"b"}, "b": {"b2"}, "b2": {"b"}}, ["b", "b2", "b"]),
])
def test_find_cycle(graph, expected):
    assert _find_cycle(graph) == expected
