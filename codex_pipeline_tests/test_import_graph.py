"""The modules of ``codex_pipeline`` import each other without a circle, and none is over 800 lines.

The graph has an edge for every import statement (module level, inside functions and
under ``TYPE_CHECKING`` alike: a lazy or type-only import is still a dependency), read by
AST as :mod:`codex_pipeline_tests.test_layers` reads them. ``from package import name``
is an edge to the submodule ``package.name`` when there is one, else to the package's
``__init__``. Importing a submodule also runs its parents' ``__init__``; that implicit
step is not an edge (a package's ``__init__`` gathering its submodules is not a circle).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

from codex_pipeline_tests.test_layers import PACKAGE_DIR, _modules, _package

MAX_LINES = 800


def _name(path: Path) -> str:
    """The dotted module name of a file of the package (``pkg/__init__.py`` is ``pkg``)."""
    parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _targets(source: str, package: list[str], known: set[str]) -> set[str]:
    """The modules of ``known`` that ``source`` imports (``package``: where its relative imports start)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in known}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                if sub in known:
                    out.add(sub)
                elif module in known:
                    out.add(module)
    return out


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports, for every module of ``codex_pipeline``."""
    paths = {_name(p): p for p in _modules()}
    known = set(paths)
    return {name: _targets(path.read_text(), _package(path), known) - {name} for name, path in paths.items()}


def tangles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (each imports all others, directly or not), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(root: str) -> None:  # Tarjan's algorithm, iterative (no recursion limit)
        work = [(root, iter(sorted(graph.get(root, ()))))]
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
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        groups.append(sorted(group))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return sorted(groups)


def circle(graph: Mapping[str, Iterable[str]], group: list[str]) -> list[str]:
    """A shortest path from the group's first module back to it, through the group."""
    start, members = group[0], set(group)
    came: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for nxt in sorted(set(graph.get(node, ())) & members):
                if nxt == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came[path[-1]])
                    return [*reversed(path), start]
                if nxt not in came:
                    came[nxt] = node
                    following.append(nxt)
        frontier = following
    raise AssertionError(f"{group} is not strongly connected")  # pragma: no cover


def test_no_import_circle() -> None:
    graph = import_graph()
    found = tangles(graph)
    assert not found, "import circles in codex_pipeline/:\n" + "\n".join(
        f"{', '.join(group)} (e.g. {' -> '.join(circle(graph, group))})" for group in found
    )


def test_no_module_over_800_lines() -> None:
    lengths = {p.relative_to(PACKAGE_DIR.parent).as_posix(): len(p.read_text().splitlines()) for p in _modules()}
    long = {name: n for name, n in lengths.items() if n > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines (split them by job): " + ", ".join(
        f"{name} ({n} lines)" for name, n in sorted(long.items())
    )


def test_the_check_finds_a_circle_through_a_type_only_or_lazy_import() -> None:
    """The rule can fail: a type-only import back, or a relative import inside a function, closes a circle."""
    known = {"p", "p.a", "p.b", "p.c", "p.d"}
    a = _targets("from p.b import B\n", ["p"], known)
    b = _targets("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from p.a import A\n", ["p"], known)
    c = _targets("def f():\n    from . import d\n", ["p"], known)
    d = _targets("from p import c\nimport p\n", ["p"], known)
    graph = {"p": set(), "p.a": a, "p.b": b, "p.c": c, "p.d": d}
    assert (a, b, c, d) == ({"p.b"}, {"p.a"}, {"p.d"}, {"p.c", "p"})
    assert tangles(graph) == [["p.a", "p.b"], ["p.c", "p.d"]]
    assert circle(graph, ["p.c", "p.d"]) == ["p.c", "p.d", "p.c"]
    assert tangles({"p.a": {"p.b"}, "p.b": {"p.c"}, "p.c": set()}) == []
    three = {"p.a": {"p.b"}, "p.b": {"p.c"}, "p.c": {"p.a", "p.b"}}
    assert tangles(three) == [["p.a", "p.b", "p.c"]] and circle(three, ["p.a", "p.b", "p.c"]) == ["p.a", "p.b", "p.c", "p.a"]
