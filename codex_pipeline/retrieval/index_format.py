"""The on-disk format of a dataset's search index: its layout, format version, manifest and version
folders. The build is :mod:`~codex_pipeline.retrieval.index_build`, the file writers
:mod:`~codex_pipeline.retrieval.index_files`, the reader :mod:`~codex_pipeline.retrieval.searcher`.

Layout, under ``warehouse/<dataset>/search_index/``::

    CURRENT                 name of the live version folder (replaced atomically)
    v-<utc stamp>-<rand>/
        manifest.json       what was indexed, with which model and analyzer
        rows.arrow          one row per current chunk, sorted by key (Arrow IPC, uncompressed, batches of 256 rows)
        docs.arrow          canonical text of each current document (spans and context come from it; batches of 32)
        bm25/               term ids per chunk and the BM25 score matrix (.npy; columns read per query)
        vectors.usearch     HNSW graph over f16 vectors, keyed like rows.arrow (opened as a view)
        units.npy           f16 vectors of the evidence units of chunks with several (rows' unit_start/unit_count)
        unit_keys.npy       uint64 key of each unit's embedded text (retrieval.units.unit_key), to verify it
        propositions/       the same files (but docs.arrow) for the dataset's current propositions, when it has any

Propositions (seed 002) are a second collection of the same version: their rows in the
chunk columns (the statement as ``chunk_text``, its spans as the anchor, the parent's
type and metadata), their own BM25 statistics and graph, the version's docs.arrow. One
build writes both and one swap publishes both, so a proposition and its parent chunk are
always read from the same snapshot, and chunk scores never depend on propositions.

A build writes a new version folder next to the live one and then swaps
``CURRENT``: a reader holding the previous version keeps reading it (the previous
folder is kept; older ones are removed), a crash leaves the live version untouched.

**Why HNSW, and why f16.** An exact scan (a float32 mat-vec over a memory-mapped
matrix, or usearch's int8 scan) costs a large part of a second per query at the corpus
sizes the index serves and maps the whole matrix. An HNSW graph (usearch,
connectivity 16) answers in milliseconds and touches a few hundred vectors per
query, so a memory-mapped view keeps the search process small. f16 halves the
file at practically no recall cost against f32; int8 loses more (figures in
``docs/history.md``).

**Keys.** A chunk id is ``urn:aprs:chunk:`` + 16 hex digits: that 64-bit number is
the chunk's key in the graph and the sort order of ``rows.arrow`` (another id
format is hashed to 64 bits). A point lookup by ``chunk_id`` is a binary search.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import secrets
import shutil
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import pyarrow as pa

from codex_pipeline.retrieval.lexical import ANALYZER_VERSION, stemming

FORMAT_VERSION = "6"  # 6: rows' synthetic column (composed chunks are no hits); 5: stored evidence-unit vectors (4: rows/docs in record batches read per hit; 3: BM25 context prefix)
CURRENT_FILE = "CURRENT"
MANIFEST_FILE = "manifest.json"
ROWS_FILE = "rows.arrow"
DOCS_FILE = "docs.arrow"
BM25_DIR = "bm25"
VECTORS_FILE = "vectors.usearch"
UNITS_FILE = "units.npy"
UNIT_KEYS_FILE = "unit_keys.npy"
VECTOR_DTYPE = "f16"
CONNECTIVITY = 16
EXPANSION_ADD = 64
EXPANSION_SEARCH = 128
"""The graph's search depth at the smallest sizes (:func:`expansion_search`)."""
EXPANSION_MAX = 2048


def expansion_search(vectors: int) -> int:
    """The graph's search depth for a collection of ``vectors``: 64 per doubling past 2,000, at least
    :data:`EXPANSION_SEARCH`, at most :data:`EXPANSION_MAX`.

    A fixed depth loses recall as the graph grows (issue 45; ``bench/bench_search.py``, vectors like the
    data, top 10 against an exact scan): at 128, 0.979 at 60,000 vectors and 0.887 at 366,000. This rule
    gives 320 there (0.987 at 256, 0.993 at 512) and 512 at 366,000 (0.993; 12 ms a query under load,
    2 ms at 128), growing with the logarithm of the size as a navigable graph's paths do.
    """
    doublings = math.ceil(math.log2(max(vectors, 2) / 2000)) if vectors > 2000 else 0
    return min(EXPANSION_MAX, max(EXPANSION_SEARCH, 64 * doublings))

ROW_COLUMNS = (
    "chunk_id",
    "doc_id",
    "section_id",
    "chunk_type",
    "parent_chunk_id",
    "seq_index",
    "partition_date",
    "locator",
    "evidence_anchor",
    "metadata",
    "content_hash",
    "chunk_text",
)
PROPOSITION_COLUMNS = ("alignment_score", "extractor")
SYNTHETIC_COLUMN = "synthetic"  # rows.arrow: a chunk a chunker wrote (index_build.synthetic_rows), never a hit unasked
"""Kept beside :data:`ROW_COLUMNS` in the propositions collection (see :mod:`~codex_pipeline.retrieval.proposition_rows`)."""
PROPOSITIONS_DIR = "propositions"
BATCH_ROWS_KEY = b"codex.batch_rows"
NUM_ROWS_KEY = b"codex.num_rows"


@dataclass(frozen=True)
class IndexManifest:
    """What one index version holds, and how it was made."""

    dataset: str
    version: str
    built_at: str
    chunks: int
    documents: int
    vectors: int
    missing_vectors: int  # current chunks with no vector of this model/version for their exact text
    duplicate_chunk_ids: int  # rows dropped because their chunk_id was already indexed
    embedding_model: str | None
    embedding_version: str | None
    dimensions: int
    vectors_reused: int  # taken over from the previous version's graph
    graph: str  # "built" | "updated" | "none"
    build_seconds: float
    analyzer: str
    terms_reused: int = 0  # chunks whose analyzed terms were taken over (not analyzed again)
    units: int = 0  # stored evidence-unit vectors (of chunks with several units)
    propositions: int = 0  # rows of the propositions/ collection (seed 002)
    proposition_vectors: int = 0
    format_version: str = FORMAT_VERSION
    source: Mapping[str, str] = field(default_factory=dict)  # fingerprint of the inputs

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> IndexManifest:
        """Tolerant of other format versions: unknown keys are dropped (check ``format_version``)."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    @property
    def current_format(self) -> bool:
        """Whether this version has the index format and analyzer this code reads (else it is rebuilt)."""
        return self.format_version == FORMAT_VERSION and self.analyzer == analyzer_id()

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, as ``manifest.json`` stores it."""
        out = asdict(self)
        out["source"] = dict(self.source)
        return out


def analyzer_id() -> str:
    """The analyzer's identity (its version and stemmer) as each manifest records it: an index analyzed
    otherwise is out of date (:attr:`IndexManifest.current_format`)."""
    return f"{ANALYZER_VERSION}/{stemming()}"


def read_manifest(root: Path) -> IndexManifest | None:
    """The live version's manifest, or None when the dataset has no index."""
    live = _live_dir(root)
    if live is None:
        return None
    return IndexManifest.from_dict(json.loads((live / MANIFEST_FILE).read_text()))


def _live_dir(root: Path) -> Path | None:
    try:
        name = (root / CURRENT_FILE).read_text().strip()
    except FileNotFoundError:
        return None
    path = root / name
    return path if name and (path / MANIFEST_FILE).exists() else None


def set_current(root: Path, name: str) -> None:
    """Make version folder ``name`` live: ``CURRENT`` is written to a temporary file and renamed over."""
    tmp = root / f".{CURRENT_FILE}.{secrets.token_hex(4)}.tmp"
    tmp.write_text(name + "\n")
    os.replace(tmp, root / CURRENT_FILE)


def collect_versions(root: Path, keep: int) -> None:
    """Remove all but the newest ``keep`` versions (the live one always stays)."""
    live = _live_dir(root)
    versions = sorted((p for p in root.glob("v-*") if p.is_dir()), key=lambda p: p.name, reverse=True)
    for old in versions[max(keep, 1):]:
        if old != live:
            shutil.rmtree(old, ignore_errors=True)
    for tmp in root.glob(".tmp-*"):  # a build that crashed long ago
        with contextlib.suppress(OSError):
            if time.time() - tmp.stat().st_mtime > 24 * 3600:
                shutil.rmtree(tmp, ignore_errors=True)


def open_arrow(path: Path) -> pa.Table:
    """An Arrow IPC file memory-mapped: columns are read from the page cache on demand."""
    return pa.ipc.open_file(pa.memory_map(str(path), "r")).read_all()
