"""The Dagster layer stays thin: no function in ``codex_pipeline/defs/`` is over 40 lines.

The work of a step lives in the library (``codex_pipeline.pipeline`` and below), where it
runs and is tested without Dagster; an asset, check or sensor only wires it up and
translates its result. A long function in ``defs/`` is pipeline logic in the wrong place.
"""

import ast
from pathlib import Path

import pytest

import codex_pipeline.defs

DEFS_DIR = Path(codex_pipeline.defs.__file__).parent
MAX_LINES = 40


def long_functions(source: str, max_lines: int = MAX_LINES) -> list[str]:
    """``name (N lines, line L)`` for every function or method, nested ones included, over ``max_lines``.

    A function's lines run from its ``def`` to its last line; decorators are not counted,
    an inner function's lines count for the function around it too.
    """
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            if lines > max_lines:
                found.append(f"{node.name} ({lines} lines, line {node.lineno})")
    return found


@pytest.mark.parametrize("path", sorted(DEFS_DIR.glob("*.py")), ids=lambda p: p.name)
def test_no_function_in_defs_is_over_40_lines(path: Path) -> None:
    long = long_functions(path.read_text())
    assert not long, (f"defs/{path.name}: move the work into the library (codex_pipeline.pipeline) and keep "
                      f"the Dagster function a translation, at most {MAX_LINES} lines: " + ", ".join(long))


def test_the_walk_finds_a_long_inner_function() -> None:
    """The rule can fail: an asset body nested in its factory is measured, and so is the factory."""
    body = "\n".join(f"        x{i} = {i}" for i in range(45))
    source = f"def build():\n    @decorator\n    def asset():\n{body}\n    return asset\n"
    assert [f.split(" ")[0] for f in long_functions(source)] == ["build", "asset"]
    assert long_functions("def short():\n    return 1\n") == []
