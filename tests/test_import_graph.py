"""The package's import graph has no cycle: every module-level and function-level import of umapviz by umapviz,
relative imports resolved, read from the source with ``ast`` (nothing is imported)."""

from __future__ import annotations

import ast
from pathlib import Path

import umapviz

ROOT = Path(umapviz.__file__).parent


def module_names(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its ``__init__.py``)."""
    names = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


def imported_modules(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules that ``name`` (at ``path``) imports anywhere in its body: for ``from X import y`` the
    module ``X.y`` where it is one, else ``X``; relative imports resolved against ``name``'s package."""
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                package = name.split(".") if is_package else name.split(".")[:-1]
                base = ".".join(package[: len(package) - node.level + 1])
                source = f"{base}.{node.module}" if node.module else base
            else:
                source = node.module or ""
            targets = [
                f"{source}.{alias.name}" if f"{source}.{alias.name}" in known else source for alias in node.names
            ]
        else:
            continue
        for target in targets:
            while target and target not in known:  # `import a.b.c` where c is a name: the deepest module
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
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


def import_graph() -> dict[str, set[str]]:
    names = module_names()
    return {name: imported_modules(name, path, set(names)) for name, path in names.items()}


def test_the_package_has_no_import_cycle():
    graph = import_graph()
    assert len(graph) > 100 and "umapviz.graph.start.lanczos" in graph["umapviz.graph.start.spectral_gpu"]
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle_through_a_function_level_relative_import(tmp_path):
    """The checker itself: a cycle closed by an import inside a function (as spectral_gpu's was) is found, and the
    same modules without that import are not a cycle."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from .a import f\n")
    (pkg / "sub" / "a.py").write_text("from .b import g\n\ndef f():\n    return g()\n")
    (pkg / "sub" / "b.py").write_text("def g():\n    from .a import f\n\n    return f\n")
    (pkg / "c.py").write_text("from .sub import b\n")
    names = module_names(pkg)
    graph = {name: imported_modules(name, path, set(names)) for name, path in names.items()}
    assert graph["pkg.c"] == {"pkg.sub.b"} and graph["pkg.sub"] == {"pkg.sub.a"}
    assert cycles(graph) == [["pkg.sub.a", "pkg.sub.b"]]
    (pkg / "sub" / "b.py").write_text("def g():\n    return 1\n")
    graph = {name: imported_modules(name, path, set(names)) for name, path in names.items()}
    assert cycles(graph) == []
