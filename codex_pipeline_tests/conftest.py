"""Shared test helpers: a throw-away data directory, Dagster materializations into it, and the lanes.

Lanes. ``slow`` marks tests that need the real embedding model, a browser (``ui/``),
PostgreSQL and Redis servers (``deploy/``'s server fixtures), the shared corpora beside
the checkout, or that take more than a few seconds for other reasons. ``pytest`` runs
the quick lane (``-m 'not slow'`` in pyproject's addopts: a developer's default run);
``pytest -m "slow or not slow"`` runs everything (CI). The rules are here
(:func:`pytest_collection_modifyitems`: by folder, by fixtures declared with
:func:`slow_fixture` / :func:`real_model_fixture`, by :func:`needs_corpus`); a test
file marks a test itself only where no rule fits.

Shared corpora. A test that reads ``../shared/corpora`` (real documents beside the
checkout, not in the repository) says so with ``@needs_corpus(path, …)``: it is slow, and
when a path is missing it skips, or, under ``CI=true``, fails saying which path is missing
(:func:`require_corpus`), so CI never passes without having run it.

Token histograms. Every chunks step draws a PNG histogram (matplotlib) for its
materialization's metadata, a third of the step's time. In the quick lane a step reports it
as the Markdown table it falls back to without matplotlib (:func:`pytest_runtest_protocol`);
the PNG itself is tested in ``explore/`` and ``cli/``, a test marked ``png_histogram`` gets
it from the step too, and so does every slow test.

Embedder. Dagster wiring tests embed with the deterministic
:class:`~codex_pipeline_tests.fakes.FakeEmbedder` (``materialize_dataset``'s
default resource, the ``fake_embedding`` / ``fake_code_location`` fixtures); the
real all-MiniLM-L6-v2 only where vectors are what a test checks, through the
fixtures declared with :func:`real_model_fixture` (and so in the slow lane).
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import signal
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import dagster as dg
import pytest

from codex_pipeline.warehouse.storage import Warehouse

TESTS = Path(__file__).parent
FIXTURES = TESTS / "fixtures"
SAMPLE_LANDING = Path(__file__).resolve().parents[1] / "codex_pipeline" / "sample_landing"

#: Test folders whose every test is slow: the Dagster UI in a real browser.
SLOW_FOLDERS = frozenset({"ui"})
#: The shared corpora: real documents kept beside the checkout, not in the repository.
CORPORA = Path(__file__).resolve().parents[1].parent / "shared" / "corpora"
#: The marker :func:`needs_corpus` puts on a test.
CORPUS_MARKER = "needs_corpus"

_F = TypeVar("_F", bound=Callable[..., object])


def slow_fixture(reason: str) -> Callable[[_F], _F]:
    """Declare a fixture (apply before ``@pytest.fixture``) slow: every test that uses it,
    directly or through another fixture, is in the slow lane."""

    def declare(fixture: _F) -> _F:
        fixture._codex_slow = reason  # type: ignore[attr-defined]
        return fixture

    return declare


#: A fixture that loads the real embedding model (all-MiniLM-L6-v2): its tests are slow.
real_model_fixture = slow_fixture("real embedding model")


def _active_fixturedefs(info, name: str) -> list:  # type: ignore[no-untyped-def]
    """The definitions of ``name`` a test really runs: the closest override, and the ones it
    requests in turn by its own name (a module that overrides a fixture replaces it)."""
    chain = list(info.name2fixturedefs.get(name, ()))
    active = []
    while chain:
        fixturedef = chain.pop()
        active.append(fixturedef)
        if name not in fixturedef.argnames:
            break
    return active


def _slow_fixture_reason(item: pytest.Item) -> str | None:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    for name in info.names_closure:
        for fixturedef in _active_fixturedefs(info, name):
            reason = getattr(fixturedef.func, "_codex_slow", None)
            if reason:
                return f"fixture {name}: {reason}"
    return None


def needs_corpus(*paths: Path) -> pytest.MarkDecorator:
    """Mark a test that reads ``paths`` (files or folders under :data:`CORPORA`): it is in the slow
    lane, and :func:`require_corpus` runs before it."""
    return getattr(pytest.mark, CORPUS_MARKER)(*paths)


def in_ci(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the suite runs in CI (``CI=true``, as CI services set it)."""
    return environ.get("CI", "").strip().lower() in {"true", "1", "yes"}


def require_corpus(*paths: Path, ci: bool | None = None) -> None:
    """Skip the running test when one of ``paths`` is missing; under ``CI=true`` fail it instead."""
    missing = [p for p in paths if not Path(p).exists()]
    if not missing:
        return
    where = ", ".join(str(Path(p).relative_to(CORPORA)) if Path(p).is_relative_to(CORPORA) else str(p)
                      for p in missing)
    message = f"shared corpora not present: {where} (under {CORPORA})"
    if in_ci() if ci is None else ci:
        pytest.fail(f"{message}; CI=true, so a corpus test fails instead of skipping: put the shared "
                    "corpora beside the checkout", pytrace=False)
    pytest.skip(message)


def _reads_shared_corpora(item: pytest.Item) -> bool:
    return item.get_closest_marker(CORPUS_MARKER) is not None


def slow_reason(item: pytest.Item) -> str | None:
    """Why a rule puts ``item`` in the slow lane (None: no rule does)."""
    rel = Path(str(item.path)).resolve().relative_to(TESTS.resolve())
    if rel.parts[0] in SLOW_FOLDERS:
        return f"folder {rel.parts[0]}/"
    by_fixture = _slow_fixture_reason(item)
    if by_fixture is not None:
        return by_fixture
    if _reads_shared_corpora(item):
        return "shared corpora"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("slow") is None and slow_reason(item) is not None:
            item.add_marker(pytest.mark.slow)


#: The marker of a quick test whose chunks steps draw the PNG token histogram.
PNG_HISTOGRAM_MARKER = "png_histogram"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Quick tests (fixtures included) see matplotlib as absent where the histogram Markdown is made."""
    from codex_pipeline.explore import inspector

    table_only = item.get_closest_marker("slow") is None and item.get_closest_marker(PNG_HISTOGRAM_MARKER) is None
    with pytest.MonkeyPatch.context() as patch:
        if table_only:
            patch.setattr(inspector, "_have_matplotlib", lambda: False)
        yield


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Without ``CI=true`` a corpus test whose corpus is missing skips before its fixtures run."""
    if not in_ci():
        for marker in item.iter_markers(CORPUS_MARKER):
            require_corpus(*marker.args, ci=False)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    """Under ``CI=true`` it fails (a failed test, not a setup error) naming what is missing."""
    if in_ci():
        for marker in item.iter_markers(CORPUS_MARKER):
            require_corpus(*marker.args, ci=True)


#: Modules whose import means the real local model was loaded.
_MODEL_MODULES = ("sentence_transformers", "torch", "openvino")
_quick_loaded_model: list[str] = []


@pytest.fixture(autouse=True)
def _watch_for_the_real_model(request: pytest.FixtureRequest) -> Iterator[None]:
    """Notes the first quick-lane test after which the model's runtime (OpenVINO or torch) is imported:
    the quick lane should never pay for the real model (see the terminal summary)."""
    before = any(m in sys.modules for m in _MODEL_MODULES)
    yield
    if not before and not _quick_loaded_model and request.node.get_closest_marker("slow") is None \
            and any(m in sys.modules for m in _MODEL_MODULES):
        _quick_loaded_model.append(request.node.nodeid)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:  # type: ignore[no-untyped-def]
    if _quick_loaded_model:
        terminalreporter.write_line(
            f"note: a test outside the slow lane loaded the real embedding model: {_quick_loaded_model[0]}; "
            "use the fake embedder (codex_pipeline_tests/fakes.py) or mark it slow", yellow=True)


def pytest_configure(config: pytest.Config) -> None:
    """Register :func:`needs_corpus`'s marker.

    Handle SIGINT as a suite started from a terminal does. One started in the background (CI,
    ``nohup``) begins with SIGINT ignored, and every in-process Dagster run points SIGTERM at SIGINT's
    handler when it ends: SIGTERM would be ignored from then on, by this process and by every process
    a later test starts (a process pool's exit, which terminates its workers, waited forever)."""
    config.addinivalue_line("markers", f"{CORPUS_MARKER}(*paths): reads these paths of the shared corpora "
                            "(slow; skips without them, fails under CI=true)")
    config.addinivalue_line("markers", f"{PNG_HISTOGRAM_MARKER}: chunks steps draw the PNG token histogram "
                            "(quick tests get its Markdown table)")
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture
def warehouse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Warehouse:
    """An empty data directory, also exported as CODEX_DATA_DIR for the commands a test runs (the CLI reads it)."""
    root = tmp_path / "data"
    monkeypatch.setenv("CODEX_DATA_DIR", str(root))
    return Warehouse(root)


def land(warehouse: Warehouse, dataset: str, day: str, source: Path) -> Path:
    """Copy a folder (or single file) into ``landing/<dataset>/<day>/``."""
    dest = warehouse.landing_dir(dataset, dt.date.fromisoformat(day))
    dest.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        shutil.copytree(source, dest, dirs_exist_ok=True)
    else:
        shutil.copy(source, dest / source.name)
    return dest


def query_catalog(warehouse: Warehouse, sql: str) -> list[tuple]:
    """The rows of ``sql`` over the ``codex`` views of ``warehouse`` (a read-only catalog connection, closed after)."""
    from codex_pipeline.warehouse.catalog import connect_catalog

    con = connect_catalog(warehouse)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def materialize_mapped(
    tmp_path: Path, dataset: str, mapping: str, files: Mapping[str, str], day: dt.date,
) -> tuple[dg.ExecuteInProcessResult, Warehouse]:
    """Land ``files`` for the mapped ``dataset`` (its mapping's YAML in a mappings folder under ``tmp_path``) and
    materialize its raw and chunks steps through Dagster, from the definitions a deployment builds (fake embedder)."""
    from codex_pipeline.defs.definitions import build_definitions
    from codex_pipeline.settings import CodexSettings
    from codex_pipeline_tests.fakes import FakeEmbedding

    folder = tmp_path / "mappings"
    folder.mkdir(exist_ok=True)
    (folder / f"{dataset}.yaml").write_text(mapping)
    wh = Warehouse(tmp_path / "data")
    landing = wh.landing_dir(dataset, day)
    landing.mkdir(parents=True)
    for name, text in files.items():
        (landing / name).write_text(text)
    defs = build_definitions(CodexSettings(data_dir=wh.root, mapping_folders=(folder,)))
    assets = [a for a in defs.assets or [] if isinstance(a, dg.AssetsDefinition)
              and any(k.path[0] == dataset and k.path[1] in ("raw", "chunks") for k in a.keys)]
    result = dg.materialize(assets, partition_key=day.isoformat(), instance=dg.DagsterInstance.ephemeral(),
                            resources={"warehouse": defs.resources["warehouse"], "embedding": FakeEmbedding()},
                            raise_on_error=False)
    return result, wh


def materialize_dataset(
    warehouse: Warehouse,
    dataset: str,
    day: str,
    instance: dg.DagsterInstance | None = None,
    embedding: dg.ConfigurableResource | None = None,
) -> dg.ExecuteInProcessResult:
    """Materialize every asset of one dataset for one day through Dagster (checks included).

    Embeds with the fake embedder unless ``embedding`` says otherwise (``EmbeddingSettings()``
    for the real model); the warehouse resource carries ``warehouse``'s step settings."""
    from codex_pipeline.datasets.registry import get_dataset
    from codex_pipeline.defs.assets import build_dataset_assets
    from codex_pipeline.defs.resources import CodexWarehouse
    from codex_pipeline.settings import CodexSettings
    from codex_pipeline_tests.fakes import FakeEmbedding

    resource = CodexWarehouse.from_settings(CodexSettings(data_dir=warehouse.root, steps=warehouse.steps))
    return dg.materialize(
        build_dataset_assets(get_dataset(dataset)),
        partition_key=day,
        resources={"warehouse": resource, "embedding": embedding or FakeEmbedding()},
        instance=instance or dg.DagsterInstance.ephemeral(),
        raise_on_error=False,
    )


@pytest.fixture
def fake_embedding():
    """The Dagster embedding resource of wiring tests (deterministic hashed vectors, no model)."""
    from codex_pipeline_tests.fakes import FakeEmbedding

    return FakeEmbedding()


@pytest.fixture
def fake_embedder():
    """The fake embedder itself, for tests that call the library directly."""
    from codex_pipeline_tests.fakes import FakeEmbedder

    return FakeEmbedder()


@pytest.fixture
def fake_code_location(monkeypatch: pytest.MonkeyPatch) -> Iterator[dg.Definitions]:
    """``codex_pipeline.defs.defs``, and every definitions ``build_definitions`` makes (what ``codex materialize``
    / ``demo`` run through ``cli.main``), with the fake embedding resource."""
    import codex_pipeline.defs as location
    from codex_pipeline.defs import definitions
    from codex_pipeline_tests.fakes import with_fake_embedding

    real = definitions.build_definitions

    def build_with_fake(*args: Any, **kwargs: Any) -> dg.Definitions:
        return with_fake_embedding(real(*args, **kwargs))

    monkeypatch.setattr(definitions, "build_definitions", build_with_fake)
    faked = with_fake_embedding(location.defs)
    monkeypatch.setattr(location, "defs", faked)
    yield faked
