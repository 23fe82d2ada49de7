"""An opened index version: wide columns read per row (never mapped), the scanned ones held in memory."""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from codex_pipeline.retrieval import Filters, Retriever, build_search_index, index_build, index_root, searcher
from codex_pipeline.retrieval.index_format import DOCS_FILE, ROWS_FILE, _live_dir
from codex_pipeline.retrieval.searcher import SearchIndex
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.retrieval.conftest import Tables

DATASET = "permit_signals"


def _on_disk(path: Path) -> pa.Table:
    return pa.ipc.open_file(pa.OSFile(str(path))).read_all()


@pytest.fixture(scope="module")
def opened(sample_tables: dict[str, Tables], tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SearchIndex, pa.Table, pa.Table]]:
    """The permits index written in batches of 7 rows and 3 documents, 2 batches cached: reads cross batches."""
    t = sample_tables[DATASET]
    root = tmp_path_factory.mktemp("small-batches")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(index_build, "ROWS_PER_BATCH", 7)
        mp.setattr(index_build, "DOCS_PER_BATCH", 3)
        mp.setattr(searcher, "CACHED_BATCHES", 2)
        build_search_index(root, DATASET, t.chunks, t.raw, t.embeddings)
        live = _live_dir(root)
        assert live is not None
        yield SearchIndex(live), _on_disk(live / ROWS_FILE), _on_disk(live / DOCS_FILE)


def test_every_row_reads_back_exactly(opened: tuple[SearchIndex, pa.Table, pa.Table]) -> None:
    index, rows, docs = opened
    assert rows.num_rows == len(index) and len(rows.to_batches()) > 3 and len(docs.to_batches()) > 3
    expected = rows.to_pylist()
    for i in np.random.default_rng(1).permutation(rows.num_rows).tolist():  # any order: batches come and go
        assert index.row(i) == expected[i]
        for name in ("doc_id", "partition_date", "chunk_id", "metadata"):
            assert index.rows.column(name)[i].as_py() == expected[i][name]
        doc_row = expected[i]["doc_row"]
        assert index.canonical_text(doc_row) == (docs.column("canonical_text")[doc_row].as_py() if doc_row >= 0 else None)
    assert index.rows.column("chunk_id").to_pylist() == rows.column("chunk_id").to_pylist()
    assert np.array_equal(index.keys, rows.column("key").to_numpy())


def test_row_of_finds_every_chunk_id(opened: tuple[SearchIndex, pa.Table, pa.Table]) -> None:
    index, rows, _ = opened
    for i, cid in enumerate(rows.column("chunk_id").to_pylist()):
        assert index.row_of(cid) == i
    assert index.row_of("urn:aprs:chunk:0000000000000000") is None


def test_filter_mask_equals_a_scan_of_the_columns(opened: tuple[SearchIndex, pa.Table, pa.Table]) -> None:
    index, rows, _ = opened
    types = sorted(set(rows.column("chunk_type").to_pylist()))
    day = rows.column("partition_date")[0].as_py()
    cases = [
        (Filters(chunk_types=frozenset(types[:1])), pc.is_in(rows.column("chunk_type"), pa.array(types[:1]))),
        (Filters(date_from=day), pc.greater_equal(rows.column("partition_date"), pa.scalar(day))),
        (Filters(date_to=day - dt.timedelta(days=1)), pc.less_equal(rows.column("partition_date"), pa.scalar(day - dt.timedelta(days=1)))),
        (Filters(chunk_types=frozenset({"no such type"})), pa.chunked_array([[False] * rows.num_rows])),
    ]
    for filters, scan in cases:
        mask = index.mask(filters)
        assert mask is not None and mask.tolist() == scan.to_pylist(), filters
    assert index.mask(Filters()) is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")
def test_searching_maps_neither_rows_nor_documents(indexed: Warehouse, retriever: Retriever) -> None:
    """Mapped pages a query touches count in the process's RSS; rows and documents are read, not mapped."""
    for mode in ("bm25", "vector", "hybrid"):
        assert retriever.search("permit conditions for the retaining wall", k=5, mode=mode)
    maps = Path("/proc/self/maps").read_text()
    live = _live_dir(index_root(indexed, DATASET))
    assert live is not None and str(live) in maps  # the HNSW view is mapped (its file is in the same folder)
    assert str(live / ROWS_FILE) not in maps and str(live / DOCS_FILE) not in maps
