"""The import graph of hiersql: no cycle, and the library never imports its command line.

The graph is read from the source (``ast``), not from ``sys.modules``: every ``import`` and ``from ... import``
of a module counts wherever it stands (module level, inside a function — the lazy imports —, under
``TYPE_CHECKING``), resolved to the most specific module it names (``from .measures import set_based`` is
``hiersql.measures.set_based``, ``from .measures import Options`` is ``hiersql.measures``). A call of
``importlib.import_module`` counts too: a literal name is that module, an f-string every module its literal
prefix starts (``f"hiersql.measures.{name}"``: every family), any other argument every hiersql module named by a
string in that file (the lazy exports of ``hiersql/__init__.py``). An import of a package that contains the
importing module is left out: Python initialises a package before any of its modules, so that import never
loads anything (the family modules read the registry of ``hiersql.measures`` this way).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "hiersql"
CLI = ("hiersql.cli", "hiersql.__main__")


def module_files() -> dict[str, Path]:
    """``{module name: file}`` of every module of the package."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[:len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(module: str, path: Path, modules: set[str]) -> set[str]:
    """The hiersql modules that ``module`` imports anywhere in its file (see the module docstring)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = _absolute(module, path.name == "__init__.py", node)
            for alias in node.names:
                found.add(f"{target}.{alias.name}" if f"{target}.{alias.name}" in modules else target)
        elif isinstance(node, ast.Call) and _is_import_module(node.func) and node.args:
            found.update(_dynamic_targets(node.args[0], tree, modules))
    ancestors = {".".join(module.split(".")[:k]) for k in range(1, module.count(".") + 1)}
    return {name for name in found if name in modules and name != module and name not in ancestors}


def _is_import_module(func: ast.expr) -> bool:
    return (isinstance(func, ast.Attribute) and func.attr == "import_module") or (
        isinstance(func, ast.Name) and func.id == "import_module")


def _dynamic_targets(arg: ast.expr, tree: ast.Module, modules: set[str]) -> set[str]:
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return {arg.value}
    if isinstance(arg, ast.JoinedStr):
        prefix = "".join(v.value for v in arg.values[:1] if isinstance(v, ast.Constant))
        return {name for name in modules if name.startswith(prefix) and name != prefix.rstrip(".")}
    return {node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in modules}


def import_graph() -> dict[str, set[str]]:
    files = module_files()
    return {module: imports_of(module, path, set(files)) for module, path in files.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return out


def test_the_walk_sees_lazy_and_dynamic_imports():
    """The graph holds edges of each kind it claims to read, so that an empty cycle list means something."""
    graph = import_graph()
    assert "hiersql.plan" in graph["hiersql.engines.base"]  # module level
    assert "hiersql.engines.concurrency" in graph["hiersql.analyses.compare"]  # inside a function
    assert "hiersql.inputs.store" in graph["hiersql.engines.base"]  # under TYPE_CHECKING
    assert "hiersql.measures.lca" in graph["hiersql.measures"]  # importlib.import_module(f"hiersql.measures.{name}")
    assert "hiersql.api.evaluator" in graph["hiersql"]  # the lazy exports of hiersql/__init__.py
    assert "hiersql.measures" not in graph["hiersql.measures.lca"]  # its own package: initialised first


@pytest.mark.parametrize(("graph", "expected"), [
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
    ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
])
def test_cycles_finds_a_loop(graph, expected):
    assert cycles(graph) == expected


def test_no_import_cycle():
    graph = import_graph()
    found = cycles(graph)
    detail = ["; ".join(f"{a} -> {b}" for a in cycle for b in sorted(graph[a]) if b in cycle) for cycle in found]
    assert not found, detail


def test_the_library_never_imports_the_command_line():
    graph = import_graph()
    library = {m for m in graph if not any(m == c or m.startswith(c + ".") for c in CLI)}
    wrong = sorted((m, t) for m in library for t in graph[m] if any(t == c or t.startswith(c + ".") for c in CLI))
    assert not wrong


# the packages from the bottom up; a module of one imports only from its own package, those below it and the
# base modules at the top of hiersql (errors, options, option_checks, averages, plan, sqlfiles, files)
LAYERS = ("inputs", "engines", "measures", "analyses", "api", "jobs", "cli")


def test_a_package_imports_only_the_packages_below_it():
    def layer(module: str) -> int | None:
        parts = module.split(".")
        return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else None

    graph = import_graph()
    upward = sorted((m, t) for m in graph for t in graph[m]
                    if layer(m) is not None and layer(t) is not None and layer(t) > layer(m))
    assert not upward
