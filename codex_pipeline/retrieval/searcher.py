"""One dataset's index version opened for queries: candidates by BM25 or by vector.

**What a search process holds.** Only what every query scans: per chunk its key,
document row, day, type code and whether it has a vector (about 20 bytes a chunk,
15 MB at 730,000 chunks), the BM25 vocabulary and column pointers, and the HNSW
graph as a usearch *view*. Everything wide — chunk text, anchors, metadata, the
canonical texts — stays on disk: ``rows.arrow`` and ``docs.arrow`` are written in
small record batches and a hit reads its batch with one ``pread`` (cheap from the
page cache), a few kept in an LRU. Why not a memory map: a mapped page a query
touches counts in the process's RSS (with the kernel's 64 KB fault-around), so after
a few dozen queries most of both files would be resident (``bench/bench_search.py``;
figures in ``docs/history.md``).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from usearch.index import Index

from codex_pipeline.retrieval.bm25 import Bm25
from codex_pipeline.retrieval.index_format import (
    BATCH_ROWS_KEY,
    BM25_DIR,
    DOCS_FILE,
    FORMAT_VERSION,
    MANIFEST_FILE,
    NUM_ROWS_KEY,
    PROPOSITIONS_DIR,
    ROWS_FILE,
    SYNTHETIC_COLUMN,
    UNIT_KEYS_FILE,
    UNITS_FILE,
    VECTORS_FILE,
    IndexManifest,
    _live_dir,
    analyzer_id,
    expansion_search,
)
from codex_pipeline.retrieval.index_source import chunk_keys
from codex_pipeline.retrieval.types import Filters

EXACT_VECTOR_LIMIT = 20_000
"""A collection, or a filter, leaving at most this many vectors is searched exactly (every vector scored), not
through the graph: on the httpx docs' 805 propositions the graph's top 50 held 96.9 % of the exact top 50, and that
cost 3.5 points of proposition recall in ``codex eval``; an exact scan of 20,000 vectors costs milliseconds."""
CACHED_BATCHES = 64
"""Record batches kept per file (rows: 64 x 256 rows, ~15 MB): a query's hits and their neighbours read once."""
_EPOCH = dt.date(1970, 1, 1)

RowCheck = Callable[[int], bool]


class _Batches:
    """An Arrow IPC file of fixed-size record batches, read with ``pread`` on demand (never mapped)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = pa.OSFile(str(path))
        self._reader = pa.ipc.open_file(self._file)
        self.schema = self._reader.schema
        meta = self.schema.metadata or {}
        self.batch_rows = int(meta[BATCH_ROWS_KEY])
        self.num_rows = int(meta[NUM_ROWS_KEY]) if NUM_ROWS_KEY in meta else self._counted()
        self._cache: OrderedDict[int, pa.RecordBatch] = OrderedDict()

    def _counted(self) -> int:
        """Rows of a file written without its count (docs.arrow): full batches and the last one."""
        n = self._reader.num_record_batches
        return (n - 1) * self.batch_rows + self._reader.get_batch(n - 1).num_rows if n else 0

    def batch_of(self, row: int) -> tuple[pa.RecordBatch, int]:
        """The record batch holding ``row``, and the row's place in it."""
        b, at = divmod(row, self.batch_rows)
        batch = self._cache.get(b)
        if batch is None:
            batch = self._cache[b] = self._reader.get_batch(b)
            if len(self._cache) > CACHED_BATCHES:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(b)
        return batch, at

    def value(self, name: str, row: int) -> Any:
        batch, at = self.batch_of(row)
        return batch.column(name)[at].as_py()

    def read_columns(self, names: Sequence[str]) -> pa.Table:
        """Whole columns, batch by batch, each column copied out of its batch.

        The reader reads a batch's whole body and a column sliced from it keeps the
        body alive; ``read_all`` would hold every column of the file (106 MB for the
        3 MB of per-row arrays of 120,000 chunks).
        """
        fields = [self.schema.get_field_index(n) for n in names]
        reader = pa.ipc.open_file(self._file, options=pa.ipc.IpcReadOptions(included_fields=fields))
        parts: list[list[pa.Array]] = [[] for _ in names]
        for i in range(reader.num_record_batches):
            batch = reader.get_batch(i)
            for j, name in enumerate(names):
                parts[j].append(pa.concat_arrays([batch.column(name)]))  # a copy: the body is freed
        schema = pa.schema([self.schema.field(n) for n in names])
        return pa.Table.from_arrays([pa.chunked_array(p, schema.field(j).type) for j, p in enumerate(parts)], schema=schema)


class _NpyRows:
    """Rows of a ``.npy`` file read with ``pread``: a hit's few unit vectors, without mapping the file.

    Mapped, the 1.6 GB of unit vectors at 730,000 chunks put 835 MB into a search
    process's RSS after 180 queries (page faults read ahead around each hit's rows).
    """

    def __init__(self, path: Path) -> None:
        with open(path, "rb") as fh:
            version = np.lib.format.read_magic(fh)
            read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, fortran, dtype = read_header(fh)
            self.offset = fh.tell()
        if fortran:
            raise ValueError(f"{path}: Fortran-ordered array")
        self.path, self.dtype, self.shape = path, np.dtype(dtype), tuple(shape)
        self.row_bytes = int(np.prod(self.shape[1:], dtype=np.int64)) * self.dtype.itemsize
        self._fd = os.open(path, os.O_RDONLY)

    def __len__(self) -> int:
        return self.shape[0]

    def rows(self, start: int, count: int) -> np.ndarray:
        data = os.pread(self._fd, count * self.row_bytes, self.offset + start * self.row_bytes)
        return np.frombuffer(data, self.dtype).reshape((count, *self.shape[1:]))

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            os.close(self._fd)


class _Column:
    """One column of :class:`RowTable`: ``column[i].as_py()`` reads one value, ``to_pylist()`` the whole column."""

    def __init__(self, table: RowTable, name: str) -> None:
        self.table, self.name = table, name
        self.type = table.schema.field(name).type

    def __len__(self) -> int:
        return self.table.num_rows

    def __getitem__(self, row: int) -> pa.Scalar:
        return pa.scalar(self.table.value(self.name, int(row)), self.type)

    def to_pylist(self) -> list[Any]:
        return self.table.read_columns([self.name]).column(0).to_pylist()


class RowTable:
    """The rows of an index version: scanned columns in memory, the rest read per row.

    ``column(name)[i].as_py()``, ``row(i)`` and ``num_rows`` behave as on the Arrow
    table they replace; ``doc_id`` and ``partition_date`` of a row come from memory.
    """

    MEMORY_COLUMNS = ("key", "doc_row", "partition_date", "has_vector", "chunk_type", SYNTHETIC_COLUMN)

    def __init__(self, path: Path, doc_ids: pa.Array) -> None:
        self._batches = _Batches(path)
        self.schema = self._batches.schema
        self.column_names = self.schema.names
        self.num_rows = self._batches.num_rows
        held = self._batches.read_columns(self.MEMORY_COLUMNS)
        self.keys = held.column("key").to_numpy()  # sorted by build
        self.doc_row = held.column("doc_row").to_numpy().astype(np.int32, copy=False)
        self.days = pc.cast(held.column("partition_date"), pa.int32()).to_numpy()
        self.has_vector = held.column("has_vector").to_numpy(zero_copy_only=False)
        types = held.column("chunk_type").combine_chunks().dictionary_encode()
        self.type_codes = types.indices.to_numpy(zero_copy_only=False)
        self.type_names = types.dictionary.to_pylist()
        self.synthetic = held.column(SYNTHETIC_COLUMN).to_numpy(zero_copy_only=False)
        self._doc_ids = doc_ids

    def column(self, name: str) -> _Column:
        """Column ``name``, read lazily (KeyError when the rows have none)."""
        if name not in self.column_names:
            raise KeyError(name)
        return _Column(self, name)

    def value(self, name: str, row: int) -> Any:
        """Column ``name`` of row ``row`` as a Python value: ``partition_date`` (and ``doc_id``, when the row has a
        document) from memory, the rest from its record batch."""
        if name == "partition_date":
            return _EPOCH + dt.timedelta(days=int(self.days[row]))
        if name == "doc_id" and self.doc_row[row] >= 0:
            return self._doc_ids[int(self.doc_row[row])].as_py()
        return self._batches.value(name, row)

    def row(self, i: int) -> dict[str, Any]:
        """Every column of row ``i``, from its record batch."""
        batch, at = self._batches.batch_of(i)
        return {name: batch.column(name)[at].as_py() for name in self.column_names}

    def read_columns(self, names: Iterable[str]) -> pa.Table:
        """Whole columns ``names``, read from the file batch by batch."""
        return self._batches.read_columns(list(names))

class IndexOutdated(RuntimeError):
    """The live index was written by another index format or analyzer."""


@dataclass(frozen=True)
class Candidate:
    """A row a ranking found, and its score there (BM25, or cosine similarity)."""

    row: int
    score: float


class SearchIndex:
    """A live index version of one dataset, opened read-only: its chunks, and its propositions as a second
    :class:`SearchIndex` (``propositions``, None when the dataset has none) sharing the version's documents."""

    def __init__(self, folder: Path, *, shared: SearchIndex | None = None) -> None:
        self.folder = folder
        self.manifest: IndexManifest = shared.manifest if shared else IndexManifest.from_dict(json.loads((folder / MANIFEST_FILE).read_text()))
        if not self.manifest.current_format:
            raise IndexOutdated(
                f"{folder}: index format {self.manifest.format_version}, analyzer {self.manifest.analyzer}; this "
                f"Codex reads format {FORMAT_VERSION} and analyzes queries with {analyzer_id()} (is PyStemmer installed "
                f"on one side only?): rematerialize [{self.manifest.dataset}, search_index] (a `Retriever` search rebuilds it)"
            )
        self.docs: _Batches = shared.docs if shared else _Batches(folder / DOCS_FILE)
        self.rows = RowTable(folder / ROWS_FILE, self.docs.read_columns(["doc_id"]).column(0).combine_chunks())
        self.keys = self.rows.keys
        self.bm25 = Bm25(folder / BM25_DIR) if (folder / BM25_DIR).exists() else None
        vec = folder / VECTORS_FILE
        self.graph = Index.restore(str(vec), view=True) if vec.exists() else None
        if self.graph is not None:
            self.graph.expansion_search = expansion_search(len(self.graph))  # type: ignore[misc]  # not saved with the file
        self._has_vector = self.rows.has_vector
        have_units = (folder / UNITS_FILE).exists()
        self.units = _NpyRows(folder / UNITS_FILE) if have_units else None  # read per hit, never mapped
        self.unit_keys = _NpyRows(folder / UNIT_KEYS_FILE) if have_units else None
        sub = folder / PROPOSITIONS_DIR
        self.propositions = SearchIndex(sub, shared=self) if shared is None and (sub / ROWS_FILE).exists() else None

    @classmethod
    def open_live(cls, root: Path) -> SearchIndex | None:
        """The version ``root``'s ``CURRENT`` names, or None when there is no live version."""
        live = _live_dir(root)
        return cls(live) if live else None

    @property
    def dataset(self) -> str:
        """The dataset's name, from the manifest."""
        return self.manifest.dataset

    def __len__(self) -> int:
        return self.rows.num_rows

    # -- lookups ----------------------------------------------------------------------

    def row_of(self, chunk_id: str) -> int | None:
        """Row of ``chunk_id`` (binary search on its key), or None."""
        key = chunk_keys(pa.array([chunk_id]))[0]
        i = int(np.searchsorted(self.keys, key))
        if i < len(self.keys) and self.keys[i] == key and self.rows.value("chunk_id", i) == chunk_id:
            return i
        return None

    def knows(self, term: str) -> bool:
        """Whether ``term`` occurs in the indexed text."""
        return self.bm25 is not None and term in self.bm25.vocab

    def row(self, i: int) -> dict[str, Any]:
        """Every column of row ``i``."""
        return self.rows.row(i)

    def stored_units(self, row: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The stored evidence-unit vectors of ``row`` as ``(keys, f32 vectors)``, or None (one unit, or none stored)."""
        if self.units is None or self.unit_keys is None:
            return None
        start, count = int(self.rows.value("unit_start", row)), int(self.rows.value("unit_count", row))
        if start < 0 or count == 0:
            return None
        return self.unit_keys.rows(start, count), self.units.rows(start, count).astype(np.float32)

    def canonical_text(self, doc_row: int) -> str | None:
        """The canonical text of the document at ``doc_row`` of docs.arrow (a row's ``doc_row``); None for -1."""
        return self.docs.value("canonical_text", doc_row) if doc_row >= 0 else None

    # -- filters ----------------------------------------------------------------------

    def mask(self, filters: Filters) -> np.ndarray | None:
        """Rows allowed by the vectorizable filters (types, dates); None when all are. Synthetic rows (a synthetic
        chunk type or a composed anchor: :func:`~codex_pipeline.retrieval.index_build.synthetic_rows`) only when the
        filter names their type."""
        rows = self.rows
        out: np.ndarray | None = None
        if filters.chunk_types:
            wanted = [i for i, name in enumerate(rows.type_names) if name in filters.chunk_types]
            out = np.isin(rows.type_codes, wanted)
        elif rows.synthetic.any():
            out = ~rows.synthetic
        if filters.date_from:
            after = rows.days >= (filters.date_from - _EPOCH).days
            out = after if out is None else out & after
        if filters.date_to:
            before = rows.days <= (filters.date_to - _EPOCH).days
            out = before if out is None else out & before
        return out

    # -- candidates -------------------------------------------------------------------

    def bm25_coverage(self, terms: list[str], row: int) -> float:
        """How fully ``row`` holds the query's words (:meth:`Bm25.coverage`; 0 without a BM25 index)."""
        return self.bm25.coverage(terms, row) if self.bm25 is not None and terms else 0.0

    def phrase_rows(self, sequence: Sequence[str], mask: np.ndarray | None, accept: RowCheck) -> list[int]:
        """Rows holding ``sequence`` as a phrase (:meth:`Bm25.rows_holding`) that pass ``mask`` and ``accept``."""
        if self.bm25 is None or not sequence:
            return []
        return [r for r in self.bm25.rows_holding(sequence).tolist() if (mask is None or mask[r]) and accept(r)]

    def bm25_scores(self, terms: list[str], rows: Sequence[int]) -> list[float]:
        """The BM25 score of each of ``rows`` for ``terms`` (0 without a BM25 index)."""
        if self.bm25 is None or not terms or not rows:
            return [0.0] * len(rows)
        scores = self.bm25.scores(terms)
        return [float(scores[r]) for r in rows]

    def bm25_candidates(
        self, terms: list[str], limit: int, mask: np.ndarray | None, accept: RowCheck
    ) -> list[Candidate]:
        """Up to ``limit`` rows by BM25 score (> 0), best first, passing ``mask`` and ``accept``."""
        if self.bm25 is None or not terms:
            return []
        scores = self.bm25.scores(terms)
        if mask is not None:
            scores = np.where(mask, scores, 0.0)
        positive = int((scores > 0).sum())
        return _take_best(scores, min(limit, positive), positive, accept)

    def vector_candidates(
        self, query: np.ndarray, limit: int, mask: np.ndarray | None, accept: RowCheck
    ) -> list[Candidate]:
        """Up to ``limit`` rows by cosine similarity, best first, passing ``mask`` and ``accept``."""
        if self.graph is None or len(self.graph) == 0:
            return []
        allowed = self._has_vector if mask is None else (mask & self._has_vector)
        n_allowed = int(allowed.sum()) if mask is not None else len(self.graph)
        if n_allowed == 0:
            return []
        if n_allowed <= EXACT_VECTOR_LIMIT:
            rows = np.flatnonzero(allowed)
            vecs = np.asarray(self.graph.get(self.keys[rows]), np.float32)
            sims = vecs @ (query / (np.linalg.norm(query) or 1.0))
            sims /= np.maximum(np.linalg.norm(vecs, axis=1), 1e-12)
            scores = np.full(len(self.keys), -np.inf, np.float32)
            scores[rows] = sims
            return _take_best(scores, min(limit, n_allowed), n_allowed, accept)
        want = limit
        while True:
            count = min(max(want, 1), len(self.graph))
            matches = self.graph.search(query, count)
            rows = np.searchsorted(self.keys, matches.keys.astype(np.uint64))
            out = []
            for r, dist in zip(rows.tolist(), matches.distances.tolist()):
                if (mask is None or mask[r]) and accept(r):
                    out.append(Candidate(r, 1.0 - float(dist)))
                    if len(out) == limit:
                        return out
            if count >= len(self.graph):
                return out
            want = count * 8  # the filter rejected too many: ask the graph for more


def _take_best(scores: np.ndarray, limit: int, available: int, accept: RowCheck) -> list[Candidate]:
    """Best-first rows by ``scores``, growing the window while ``accept`` rejects rows."""
    out: list[Candidate] = []
    if limit <= 0:
        return out
    seen = 0
    want = limit
    while True:
        want = min(want, available)
        top = np.argpartition(-scores, want - 1)[:want] if want < len(scores) else np.arange(len(scores))
        top = top[np.lexsort((top, -scores[top]))]  # score desc, then row: deterministic
        for r in top[seen:].tolist():
            if accept(r):
                out.append(Candidate(r, float(scores[r])))
                if len(out) == limit:
                    return out
        seen = want
        if want >= available:
            return out
        want *= 8

