"""The streamed index build (issue 30, item 4): the same index as the in-memory build, whatever the batch size.

The warehouse build reads rows and canonical texts sorted by DuckDB and vectors in any
order, batch by batch; the in-memory build sorts Arrow tables. Both must write identical
files, including across batch boundaries (a key repeated on two days, a document's
rows split between batches), which tiny batches force.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import dagster as dg
import numpy as np
import pyarrow as pa
import pytest

from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.defs.assets import build_dataset_assets
from codex_pipeline.defs.resources import CodexWarehouse
from codex_pipeline.retrieval import corpus, index_root, index_source, update_dataset_index
from codex_pipeline.retrieval.index_build import build_index, build_search_index
from codex_pipeline.retrieval.index_format import (
    BM25_DIR,
    DOCS_FILE,
    ROW_COLUMNS,
    ROWS_FILE,
    UNIT_KEYS_FILE,
    UNITS_FILE,
    _live_dir,
)
from codex_pipeline.retrieval.index_source import TableDocuments, TableRows
from codex_pipeline.warehouse.catalog_views import SCHEMA
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.fakes import FakeEmbedder, FakeEmbedding

NARRATIVE = get_dataset("narrative")
DAYS = (dt.date(2026, 11, 1), dt.date(2026, 11, 2))
TEXTS = {
    "harbor.txt": "The harbor commission approved dredging of the north channel. Boats wait at the pier. " * 12,
    "library.txt": "The library board approved the reading room budget.\n\nOpening hours extend to nine. " * 9,
    "bridge.txt": "The Elm Street bridge reopens on Monday. Crews finished the deck. Detour signs stay. " * 15,
}


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    """Two days of the narrative dataset; day 2 lands one file again, changed, and a new one."""
    wh = Warehouse(tmp_path_factory.mktemp("data"))
    landed = {DAYS[0]: TEXTS, DAYS[1]: {"bridge.txt": TEXTS["bridge.txt"] + "\n\nAddendum: signs moved to Oak.\n",
                                       "pool.txt": "The pool reopens in June after the roof repair. " * 10}}
    for day, files in landed.items():
        folder = wh.landing_dir("narrative", day)
        folder.mkdir(parents=True)
        for name, text in files.items():
            (folder / name).write_text(text)
        result = dg.materialize(
            build_dataset_assets(NARRATIVE), partition_key=day.isoformat(),
            resources={"warehouse": CodexWarehouse(data_dir=str(wh.root)), "embedding": FakeEmbedding()},
        )
        assert result.success
    return wh


def _files(folder: Path) -> dict[str, object]:
    """What a version folder holds, comparable across builds (not its manifest: times and names differ).

    Documents may be stored in any order (a row finds its document by place): rows are compared with the
    ``doc_id`` their ``doc_row`` points to, documents as a set.
    """
    docs = pa.ipc.open_file(pa.memory_map(str(folder / DOCS_FILE))).read_all().to_pylist()
    rows = pa.ipc.open_file(pa.memory_map(str(folder / ROWS_FILE))).read_all().to_pylist()
    for row in rows:
        row["doc_row"] = docs[row["doc_row"]]["doc_id"] if row["doc_row"] >= 0 else None
    out: dict[str, object] = {ROWS_FILE: rows, DOCS_FILE: sorted((d["doc_id"], d["canonical_text"]) for d in docs)}
    for path in sorted((folder / BM25_DIR).glob("*.npy")) + [folder / UNITS_FILE, folder / UNIT_KEYS_FILE]:
        if path.exists():
            out[path.name] = np.load(path).tolist()
    out["terms"] = (folder / BM25_DIR / "terms.json").read_text()
    return out


def _in_memory(wh: Warehouse, root: Path) -> Path:
    """The same corpus read whole into Arrow tables (the views' own SQL) and built in memory."""
    embedder = FakeEmbedder()
    with corpus.open_current_corpus(wh, "narrative", embedder.model, embedder.version) as cur:
        assert isinstance(cur.rows, corpus.WarehouseRows)
        views = cur.rows.views
        chunks = views.table(f"SELECT {', '.join(ROW_COLUMNS)} FROM {SCHEMA}.narrative_chunks")
        raw = views.table(f"SELECT doc_id, canonical_text FROM {SCHEMA}.narrative_raw")
        emb = views.table(f"SELECT * FROM {SCHEMA}.narrative_embeddings")
        units = cur.rows.units(["chunk_id", "partition_date", "unit_index", "input_hash", "embedding_model",
                                "embedding_version", "vector"])
        unit_table = units.read_all() if units is not None else None
    build_search_index(root, "narrative", chunks, raw, emb, unit_table)
    live = _live_dir(root)
    assert live is not None
    return live


@pytest.mark.parametrize("batch_rows", [3, 8192])
def test_the_streamed_build_writes_what_the_in_memory_build_writes(
    warehouse: Warehouse, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch_rows: int
) -> None:
    monkeypatch.setattr(index_source, "BATCH_ROWS", batch_rows)
    monkeypatch.setattr(corpus, "BATCH_ROWS", batch_rows)
    embedder = FakeEmbedder()
    manifest, built = update_dataset_index(warehouse, "narrative", embedder.model, embedder.version, force=True)
    assert built and manifest.chunks > batch_rows or batch_rows > 100
    assert manifest.vectors == manifest.chunks and manifest.documents == 4  # bridge's day-2 version only
    assert manifest.units > 0  # chunks of several evidence units: units.npy is compared too
    streamed = _live_dir(index_root(warehouse, "narrative"))
    assert streamed is not None
    assert _files(streamed) == _files(_in_memory(warehouse, tmp_path / "memory"))


def test_rows_out_of_key_order_stop_the_build_and_keep_the_live_version(tmp_path: Path) -> None:
    """A source whose second pass disagrees with its first (the corpus changed underneath) is an error, not a
    silently wrong index: the live version stays."""
    chunks = pa.table({c: pa.array([f"{c}-{i}" for i in range(4)]) for c in ROW_COLUMNS})
    chunks = chunks.set_column(chunks.schema.get_field_index("chunk_id"), "chunk_id",
                               pa.array([f"urn:aprs:chunk:{i:016x}" for i in range(4)]))
    chunks = chunks.set_column(chunks.schema.get_field_index("evidence_anchor"), "evidence_anchor",
                               pa.array(['{"char_span":[0,5]}'] * 4))
    chunks = chunks.set_column(chunks.schema.get_field_index("metadata"), "metadata", pa.array(["{}"] * 4))
    docs = pa.table({"doc_id": [f"doc_id-{i}" for i in range(4)], "canonical_text": ["hello world"] * 4})
    root = tmp_path / "si"
    live = build_search_index(root, "narrative", chunks, docs).version

    class Shifting(TableRows):
        calls = 0

        def rows(self, columns):  # type: ignore[no-untyped-def]
            Shifting.calls += 1
            table = self.chunks if Shifting.calls == 1 else self.chunks.slice(1)  # a row vanished between passes
            return TableRows(table).rows(columns)

    with pytest.raises(RuntimeError, match="the corpus changed while the index was built; build again"):
        build_index(root, "narrative", Shifting(chunks), TableDocuments(docs))
    assert (root / "CURRENT").read_text().strip() == live
    assert not list(root.glob(".tmp-*"))
