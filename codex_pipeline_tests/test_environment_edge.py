"""Settings are read once at the edge: only ``defs/`` and ``cli/`` read the process environment,
and ``docs/configuration.md`` names every variable the code reads and every resource setting."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import dagster as dg
import pytest

import codex_pipeline
from codex_pipeline.defs.resources import (
    CodexDuckDB,
    CodexWarehouse,
    EmbeddingSettings,
    OpenAIConnectionSettings,
    PropositionSettings,
)

PACKAGE_DIR = Path(codex_pipeline.__file__).parent
DOCS = PACKAGE_DIR.parent / "docs" / "configuration.md"
EDGE = {"defs", "cli"}
READERS = {"environ", "environb", "getenv", "getenvb"}
VARIABLE = re.compile(r"(CODEX|OPENAI)_[A-Z0-9_]+")


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE_DIR.rglob("*.py") if "sample_landing" not in p.parts)


def _environment_reads(source: str) -> list[str]:
    """``line: what`` for every use of ``os.environ`` / ``os.getenv`` (under any alias) in ``source``."""
    tree = ast.parse(source)
    os_names = {"os"}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            os_names |= {a.asname or a.name for a in node.names if a.name == "os"}
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            out += [f"line {node.lineno}: from os import {a.name}" for a in node.names if a.name in READERS]
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr in READERS and isinstance(node.value, ast.Name)
                and node.value.id in os_names):
            out.append(f"line {node.lineno}: {node.value.id}.{node.attr}")
    return out


def test_only_the_edge_reads_the_environment() -> None:
    bad = []
    for path in _modules():
        rel = path.relative_to(PACKAGE_DIR)
        if rel.parts[0] in EDGE:
            continue
        bad += [f"{rel} {hit}" for hit in _environment_reads(path.read_text())]
    assert not bad, "read the environment in defs/ or cli/ and pass the value down:\n" + "\n".join(bad)


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("import os\nx = os.environ.get('A')", ["line 2: os.environ"]),
        ("import os as o\nx = o.getenv('A')", ["line 2: o.getenv"]),
        ("from os import environ", ["line 1: from os import environ"]),
        ("import os\nx = os.path.join('a')", []),
    ],
)
def test_the_check_sees_every_spelling(source: str, found: list[str]) -> None:
    assert _environment_reads(source) == found


def _variables_by_module() -> dict[str, set[str]]:
    """Every ``CODEX_*`` / ``OPENAI_*`` string each module holds (outside ``__all__``): the names it reads."""
    out = {}
    for path in _modules():
        tree = ast.parse(path.read_text())
        exported = {
            id(c) for node in ast.walk(tree) if isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
            for c in ast.walk(node.value)
        }
        names = {
            node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and VARIABLE.fullmatch(node.value)
            and id(node) not in exported
        }
        if names:
            out[path.relative_to(PACKAGE_DIR).as_posix()] = names
    return out


def test_only_the_settings_hold_the_variables_names() -> None:
    """One module knows every variable's name (``settings/names.py``); others ask it (``EnvName.DATA_DIR``)."""
    holders = _variables_by_module()
    assert list(holders) == ["settings/names.py"], holders


def test_every_variable_the_code_reads_is_documented() -> None:
    names = set().union(*_variables_by_module().values())
    assert {"CODEX_DATA_DIR", "OPENAI_API_KEY", "CODEX_REDIRECT_THREADS"} <= names  # the scan finds them
    documented = {m.group(0) for m in VARIABLE.finditer(DOCS.read_text())}
    missing = sorted(names - documented)
    assert not missing, f"docs/configuration.md does not describe {', '.join(missing)}"


def _shown(default: object) -> str:
    """A default as the page writes it."""
    if isinstance(default, dg.Config):
        return "see below"
    if isinstance(default, float):
        return f"`{default:g}`"
    return f"`{default}`"


def _rows(name: str) -> dict[str, list[str]]:
    """The table rows, by first cell, of the section headed ``### `key`: `name```."""
    rows: dict[str, list[str]] = {}
    inside = False
    for line in DOCS.read_text().splitlines():
        if line.startswith("#"):
            inside = line.startswith("### ") and f": `{name}`" in line
        elif inside and line.startswith("| `"):
            first, *rest = (c.strip() for c in line.strip().strip("|").split("|"))
            rows[first] = rest
    return rows


@pytest.mark.parametrize("resource", [CodexWarehouse, CodexDuckDB, EmbeddingSettings, PropositionSettings,
                                      OpenAIConnectionSettings])
def test_every_resource_setting_is_documented_with_its_default(resource: type) -> None:
    rows = _rows(resource.__name__)
    for name, field in resource.model_fields.items():
        assert f"`{name}`" in rows, f"docs/configuration.md: {resource.__name__} has no row for `{name}`"
        assert rows[f"`{name}`"][0] == _shown(field.default), (
            f"docs/configuration.md: {resource.__name__}.{name} defaults to {field.default!r}, the page says "
            f"{rows[f'`{name}`'][0]}")
