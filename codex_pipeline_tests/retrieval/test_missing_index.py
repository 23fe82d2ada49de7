"""Issue 29, item 9: a dataset whose search index is missing or unreadable is never dropped silently.

Two datasets are indexed; one index is deleted, or damaged. A search of every dataset still answers
from the other, and the results name the left-out dataset (``SearchResults.warnings`` and
``skipped``); ``codex search`` prints the warning and exits 0, or 1 with ``--strict``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import shutil

import pytest

from codex_pipeline.cli import app as cli
from codex_pipeline.retrieval import IndexMissing, Retriever, index_root, read_manifest, update_dataset_index
from codex_pipeline.retrieval.index_format import ROWS_FILE
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.conftest import materialize_dataset
from codex_pipeline_tests.fakes import FAKE_MODEL, FAKE_VERSION

DAY = dt.date(2026, 11, 3)
QUERY = "harbor dredging channel"
TEXT = "The harbor commission approved dredging of the north channel after a long debate. " * 5


@pytest.fixture
def two_indexes(warehouse: Warehouse) -> Warehouse:
    for dataset, name, text in (("narrative", "harbor.txt", TEXT), ("docs", "harbor.md", "# Harbor\n\n" + TEXT)):
        folder = warehouse.landing_dir(dataset, DAY)
        folder.mkdir(parents=True)
        (folder / name).write_text(text)
        assert materialize_dataset(warehouse, dataset, DAY.isoformat()).success
        update_dataset_index(warehouse, dataset, FAKE_MODEL, FAKE_VERSION)
    return warehouse


def codex_search(wh: Warehouse, *flags: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["--data-dir", str(wh.root), "search", QUERY, "--mode", "bm25", "--no-refresh", *flags])
    return code, out.getvalue(), err.getvalue()


def test_a_missing_index_is_a_warning_naming_the_dataset(two_indexes: Warehouse) -> None:
    shutil.rmtree(index_root(two_indexes, "docs"))
    found = Retriever(two_indexes.root, rebuild=False).search(QUERY, k=5, mode="bm25")
    assert {h.dataset for h in found} == {"narrative"}
    assert found.skipped == ("docs",)
    (warning,) = found.warnings
    assert warning.startswith("docs has no search index") and "[docs, search_index]" in warning

    code, out, err = codex_search(two_indexes)
    assert code == 0 and "dataset=narrative" in out
    assert "codex search: warning: docs has no search index" in err
    code, _, err = codex_search(two_indexes, "--strict")
    assert code == 1 and "error: docs not searched" in err
    with pytest.raises(IndexMissing, match="docs has no search index"):  # asked for by name: an error, as before
        Retriever(two_indexes.root, ["docs"], rebuild=False)


def test_an_unreadable_index_is_a_warning_naming_the_dataset(two_indexes: Warehouse) -> None:
    live = index_root(two_indexes, "docs") / read_manifest(index_root(two_indexes, "docs")).version
    (live / ROWS_FILE).write_bytes(b"not an arrow file")
    found = Retriever(two_indexes.root, rebuild=False).search(QUERY, k=5, mode="bm25")
    assert {h.dataset for h in found} == {"narrative"} and found.skipped == ("docs",)
    assert "docs's search index" in found.warnings[0] and "cannot be read" in found.warnings[0]
    code, out, err = codex_search(two_indexes, "--strict")
    assert code == 1 and "dataset=narrative" in out and "cannot be read" in err
    assert "Traceback" not in err


def test_no_warning_when_every_index_is_there(two_indexes: Warehouse) -> None:
    found = Retriever(two_indexes.root, rebuild=False).search(QUERY, k=5, mode="bm25")
    assert {h.dataset for h in found} == {"narrative", "docs"} and not found.warnings and not found.skipped
    code, _, err = codex_search(two_indexes, "--strict")
    assert code == 0 and "warning" not in err
