"""Nothing in the library prints: output belongs to the command line (``codex_pipeline/cli/``)."""

from __future__ import annotations

import ast
from pathlib import Path

import codex_pipeline

PACKAGE = Path(codex_pipeline.__file__).parent


def test_no_print_call_outside_the_cli() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] == "cli":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
                found.append(f"{rel}:{node.lineno}")
    assert not found, "print() outside codex_pipeline/cli/: " + ", ".join(found)


def test_the_check_sees_a_print() -> None:
    tree = ast.parse("def f():\n    print('x')\n")
    assert any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "print" for n in ast.walk(tree))
