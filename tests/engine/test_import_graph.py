"""The engine's modules import each other without circles, counting imports inside function bodies too.

A circle closed only by a function-level import still ties the modules together: neither can be read, tested
or moved without the other. Imports under `if TYPE_CHECKING:` are left out (they never run).
"""

import ast
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[2] / "engine"


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules(root: Path) -> dict[str, Path]:
    return {_module_name(p, root): p for p in sorted(root.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_nodes(node: ast.AST):
    """Every import statement anywhere under `node`, except the body of an `if TYPE_CHECKING:`."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child
        elif isinstance(child, ast.If) and _is_type_checking(child.test):
            for other in child.orelse:
                yield from _import_nodes(ast.Module(body=[other], type_ignores=[]))
        else:
            yield from _import_nodes(child)


def _targets(name: str, is_package: bool, node: ast.Import | ast.ImportFrom, modules: dict) -> set[str]:
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    if node.level:
        base = name.split(".") if is_package else name.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)]
        pkg = ".".join(base + ([node.module] if node.module else []))
    else:
        pkg = node.module
    return {f"{pkg}.{alias.name}" if f"{pkg}.{alias.name}" in modules else pkg for alias in node.names}


def import_graph(root: Path = ENGINE) -> dict[str, set[str]]:
    """Each module of the package `root` -> the package's modules it imports anywhere in its body (`from pkg
    import name` imports the module pkg.name when there is one, else pkg)."""
    modules = _modules(root)
    graph = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        targets = set()
        for node in _import_nodes(tree):
            targets |= _targets(name, is_package, node, modules)
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; components of more than one module, each sorted."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def _a_cycle(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """One concrete circle inside a strongly connected component, as a -> b -> ... -> a."""
    members = set(component)
    start = component[0]
    parents, frontier = {start: None}, [start]
    while frontier:  # breadth-first from start until an edge comes back to it
        following = []
        for node in frontier:
            for child in sorted(graph[node] & members):
                if child == start:
                    path = [node]
                    while parents[path[-1]] is not None:
                        path.append(parents[path[-1]])
                    return path[::-1] + [start]
                if child not in parents:
                    parents[child] = node
                    following.append(child)
        frontier = following
    return component


def test_the_graph_counts_imports_in_functions_and_finds_their_circles(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from .b import thing\n")
    (pkg / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .c import C\n"
                              "def f():\n    from .sub import b\n")
    (pkg / "sub" / "b.py").write_text("import os\nthing = 1\ndef g():\n    from ..a import f\n")
    (pkg / "c.py").write_text("from . import a\n")
    graph = import_graph(pkg)
    assert graph == {"pkg": set(), "pkg.sub": {"pkg.sub.b"}, "pkg.a": {"pkg.sub.b"}, "pkg.sub.b": {"pkg.a"},
                     "pkg.c": {"pkg.a"}}
    [component] = _strongly_connected(graph)
    assert component == ["pkg.a", "pkg.sub.b"] and _a_cycle(graph, component) == ["pkg.a", "pkg.sub.b", "pkg.a"]


def test_engine_modules_import_each_other_without_circles():
    graph = import_graph()
    components = _strongly_connected(graph)
    report = "\n".join(" -> ".join(_a_cycle(graph, c)) + f"   (all of: {', '.join(c)})" for c in components)
    assert not components, "import circles among engine modules:\n" + report
