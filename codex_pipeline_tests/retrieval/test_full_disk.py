"""Issue 29, item 10: a full disk in the search-index step says so, naming the file and the fix.

usearch reports a failed write as ``Failed to serialize into stream``. Here the vector graph is
written to ``/dev/full`` (every write fails with ENOSPC, as on a full disk) through a real
Dagster materialization of ``[narrative, search_index]``: the step's error must say "no space
left on device", name the file, and say what to do; the live index is left as it was.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import dagster as dg
import pytest
from usearch.index import Index

from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.defs.resources import CodexWarehouse
from codex_pipeline.defs.search_assets import build_search_index_asset
from codex_pipeline.retrieval import index_build, index_files, index_root, read_manifest, update_dataset_index
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.conftest import materialize_dataset
from codex_pipeline_tests.fakes import FAKE_MODEL, FAKE_VERSION, FakeEmbedding

DAY = dt.date(2026, 11, 3)
FULL = Path("/dev/full")
pytestmark = pytest.mark.skipif(not FULL.exists(), reason="needs /dev/full")


def build_index(wh: Warehouse) -> dg.ExecuteInProcessResult:
    spec = get_dataset("narrative")
    return dg.materialize(
        [build_search_index_asset(spec)], partition_key=DAY.isoformat(), raise_on_error=False,
        resources={"warehouse": CodexWarehouse(data_dir=str(wh.root)), "embedding": FakeEmbedding()},
    )


def test_a_full_disk_in_the_search_index_step_says_no_space(warehouse: Warehouse, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = warehouse.landing_dir("narrative", DAY)
    folder.mkdir(parents=True)
    for n in range(40):  # a graph of some size: usearch's buffered writes reach the disk before it closes the file
        (folder / f"harbor-{n}.txt").write_text(f"Harbor notice {n}: the commission approved dredging of channel {n}. " * 20)
    assert materialize_dataset(warehouse, "narrative", DAY.isoformat()).success
    assert read_manifest(index_root(warehouse, "narrative")) is None
    real = index_build.save_graph

    def onto_a_full_disk(index: Index, path: Path) -> None:
        os.symlink(FULL, path)  # the graph file's writes now fail with ENOSPC, as on a full disk
        real(index, path)

    monkeypatch.setattr(index_build, "save_graph", onto_a_full_disk)
    result = build_index(warehouse)
    assert not result.success
    (failure,) = [e for e in result.all_events if e.event_type == dg.DagsterEventType.STEP_FAILURE]
    message = failure.step_failure_data.error.cause.message  # the step's own error, under Dagster's wrapper
    assert "no space left on device writing" in message and "vectors.usearch" in message
    assert "CODEX_DATA_DIR" in message and "rematerialize" in message
    assert "Failed to serialize into stream" in message  # usearch's own words, kept as the detail
    assert read_manifest(index_root(warehouse, "narrative")) is None  # nothing half-written went live

    monkeypatch.undo()  # space again: the same step succeeds
    assert build_index(warehouse).success


def test_a_full_disk_under_pyarrow_names_the_index_folder(warehouse: Warehouse, monkeypatch: pytest.MonkeyPatch) -> None:
    """pyarrow says ``No space left on device`` without a file: the error names the index folder and the fix."""
    folder = warehouse.landing_dir("narrative", DAY)
    folder.mkdir(parents=True)
    (folder / "harbor.txt").write_text("The harbor commission approved dredging of the north channel. " * 20)
    assert materialize_dataset(warehouse, "narrative", DAY.isoformat()).success
    real = index_files.BatchWriter.__init__

    def onto_a_full_disk(self, path: Path, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        os.symlink(FULL, path)
        real(self, path, *args, **kwargs)

    monkeypatch.setattr(index_files.BatchWriter, "__init__", onto_a_full_disk)
    with pytest.raises(OSError, match=r"no space left on device writing .*search_index/\.tmp-v-.*CODEX_DATA_DIR"):
        update_dataset_index(warehouse, "narrative", FAKE_MODEL, FAKE_VERSION)
