"""The package layout is the architecture: each layer imports only the layers below it.

Every import statement of every module is checked, including imports inside functions
(a lazy import is still a dependency). Dagster may be imported only by ``defs/`` and by
the CLI, which launches runs.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import codex_pipeline

PACKAGE_DIR = Path(codex_pipeline.__file__).parent

# layer -> the layers it may import (itself included)
ALLOWED: dict[str, set[str]] = {
    "core": {"core"},
    "transport": {"core", "transport"},
    "sources": {"core", "sources"},
    "chunkers": {"core", "chunkers"},
    "warehouse": {"core", "warehouse"},
    "redirects": {"core", "warehouse", "redirects"},
    "embeddings": {"core", "transport", "warehouse", "embeddings"},
    "propositions": {"core", "transport", "warehouse", "embeddings", "propositions"},
    "retrieval": {"core", "warehouse", "embeddings", "propositions", "retrieval"},
    "settings": {"core", "transport", "warehouse", "embeddings", "retrieval", "settings"},
    "datasets": {"core", "sources", "chunkers", "warehouse", "retrieval", "settings", "datasets"},
    "explore": {"core", "warehouse", "explore"},
    "pipeline": {"core", "sources", "chunkers", "warehouse", "redirects", "embeddings", "propositions", "retrieval",
                 "settings", "datasets", "explore", "pipeline"},
    "evaluation": {"core", "sources", "warehouse", "embeddings", "retrieval", "settings", "datasets", "evaluation"},
    "serve": {"core", "warehouse", "retrieval", "explore", "settings", "serve"},
    "cli": {"core", "transport", "sources", "chunkers", "warehouse", "redirects", "embeddings", "datasets", "explore",
            "retrieval", "settings", "evaluation", "propositions", "pipeline", "serve", "cli", "defs"},
    "defs": {"core", "transport", "sources", "chunkers", "warehouse", "redirects", "embeddings", "propositions",
             "settings", "datasets", "explore", "retrieval", "pipeline", "defs"},
}
MAY_IMPORT_DAGSTER = {"defs", "cli"}
ROOT_MODULES = {"__init__"}  # the package root holds only the version


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE_DIR.rglob("*.py") if "sample_landing" not in p.parts)


def _layer(path: Path) -> str:
    rel = path.relative_to(PACKAGE_DIR)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _package(path: Path) -> list[str]:
    """The package a module's relative imports start from."""
    return list(path.relative_to(PACKAGE_DIR.parent).parent.parts)


def _imports(source: str, package: list[str]) -> list[tuple[int, str]]:
    """Absolute names of every module ``source`` imports, with line numbers."""
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                out.append((node.lineno, ".".join(base + ([node.module] if node.module else []))))
            else:
                out.append((node.lineno, node.module or ""))
    return out


def _violations(source: str, layer: str, package: list[str]) -> list[str]:
    bad = []
    for line, name in _imports(source, package):
        top = name.split(".")[0]
        if top == "dagster" or top.startswith("dagster_"):
            if layer not in MAY_IMPORT_DAGSTER:
                bad.append(f"line {line}: {name} (only defs/ and cli/ import Dagster)")
        elif top == "codex_pipeline" and "." in name:
            target = name.split(".")[1]
            if target not in ALLOWED.get(layer, set()):
                bad.append(f"line {line}: {name} ({layer}/ may import only {sorted(ALLOWED.get(layer, set()))})")
    return bad


def test_every_module_belongs_to_a_known_layer() -> None:
    layers = {_layer(p) for p in _modules()}
    assert layers <= set(ALLOWED) | ROOT_MODULES, f"modules outside the known layers: {layers - set(ALLOWED) - ROOT_MODULES}"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE_DIR)))
def test_imports_follow_the_layers(path: Path) -> None:
    bad = _violations(path.read_text(), _layer(path), _package(path))
    assert not bad, f"{path.relative_to(PACKAGE_DIR)} breaks the layering:\n" + "\n".join(bad)


def test_the_check_catches_a_chunker_importing_a_source_or_dagster() -> None:
    """The rule can fail: a chunker importing a reader (absolute or relative) or Dagster is reported."""
    code = "from codex_pipeline.sources.files import text_files\nimport dagster\nfrom ..core import ids\n" \
           "def f():\n    from ..sources import civic\n"
    bad = _violations(code, "chunkers", ["codex_pipeline", "chunkers"])
    assert [b.split(":")[0] for b in bad] == ["line 1", "line 2", "line 5"], bad
