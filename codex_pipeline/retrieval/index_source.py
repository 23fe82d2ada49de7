"""What an index build reads, as streams of record batches.

A build holds the ids and links of a corpus's rows at once (its *skeleton*: a few
small columns per chunk), and lets chunk texts, canonical texts and vectors pass
through in batches, so its memory is the skeleton, the term table and the graph,
never the corpus itself. Rows arrive sorted by key, because ``rows.arrow`` is written in that order (a point lookup is a binary search);
documents and vectors arrive in any order, documents found again by ``doc_id``, vectors
matched to rows by key, day and text hash.

Two implementations: :class:`TableRows` / :class:`TableDocuments` over Arrow tables
in memory (the tests, small corpora, the propositions of a dataset), and the
warehouse's views on DuckDB, which sorts out of core under a memory limit
(:mod:`~codex_pipeline.retrieval.corpus`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pyarrow as pa

BATCH_ROWS = 8192
"""Rows per streamed batch: big enough for vectorized work, small enough to stay a few MB."""
SKELETON_COLUMNS = ("chunk_id", "doc_id", "parent_chunk_id", "partition_date", "content_hash", "evidence_anchor")
VECTOR_KEY_COLUMNS = ("chunk_id", "partition_date", "input_hash", "embedding_model", "embedding_version")
ROW_ORDER = (("key", "ascending"), ("partition_date", "descending"), ("content_hash", "ascending"))
"""Every row source's order: a repeated key keeps its latest day first (the build keeps the first)."""
_URN_CHUNK = re.compile(r"^urn:aprs:chunk:[0-9a-f]{16}$")


def chunk_keys(chunk_ids: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The 64-bit key of each chunk id (its 16 hex digits; any other format is hashed)."""
    out = np.empty(len(chunk_ids), np.uint64)
    for i, cid in enumerate(chunk_ids.to_pylist()):
        out[i] = int(cid[-16:], 16) if _URN_CHUNK.match(cid) else int.from_bytes(
            hashlib.sha256(cid.encode()).digest()[:8], "big"
        )
    return out


class RowSource(Protocol):
    """One collection (chunks, or propositions) of a dataset's current corpus, readable several times."""

    def rows(self, columns: Sequence[str]) -> pa.RecordBatchReader:
        """``columns`` and ``key`` (uint64, :func:`chunk_keys`) of every row, in :data:`ROW_ORDER`."""
        ...

    def vector_models(self) -> list[tuple[str, str, int]]:
        """``(embedding_model, embedding_version, vectors)`` of the stored vectors; empty without any."""
        ...

    def vectors(self, columns: Sequence[str]) -> pa.RecordBatchReader | None:
        """``columns`` of the vector table (``chunk_id``, ``partition_date``, ``input_hash``, model, version,
        ``vector``), in any order; None without one."""
        ...

    def units(self, columns: Sequence[str]) -> pa.RecordBatchReader | None:
        """``columns`` of the evidence units of chunks with several (the vector columns and ``unit_index``), any order."""
        ...


class DocumentSource(Protocol):
    """The documents an index build reads, for the canonical text of those its rows cite."""

    def documents(self) -> pa.RecordBatchReader:
        """``doc_id``, ``canonical_text`` and (optional) ``partition_date`` of the candidate documents, in any order."""
        ...


def _reader(table: pa.Table) -> pa.RecordBatchReader:
    return pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=BATCH_ROWS))


@dataclass(frozen=True)
class TableRows:
    """A :class:`RowSource` over tables in memory: chunk rows, their vectors, their units."""

    chunks: pa.Table
    embeddings: pa.Table | None = None
    unit_vectors: pa.Table | None = None

    def rows(self, columns: Sequence[str]) -> pa.RecordBatchReader:
        """:meth:`RowSource.rows`, sorted here in memory."""
        sort_cols = [c for c, _ in ROW_ORDER if c != "key"]
        table = self.chunks.select(list(dict.fromkeys([*columns, *sort_cols])))
        table = table.append_column("key", pa.array(chunk_keys(table.column("chunk_id")), pa.uint64()))
        return _reader(table.sort_by(list(ROW_ORDER)).select([*columns, "key"]))

    def vector_models(self) -> list[tuple[str, str, int]]:
        """:meth:`RowSource.vector_models`, counted over ``embeddings``."""
        if self.embeddings is None or self.embeddings.num_rows == 0:
            return []
        counts = self.embeddings.group_by(["embedding_model", "embedding_version"]).aggregate([("chunk_id", "count")])
        return [(r["embedding_model"], r["embedding_version"], r["chunk_id_count"]) for r in counts.to_pylist()]

    def vectors(self, columns: Sequence[str]) -> pa.RecordBatchReader | None:
        """``columns`` of ``embeddings``, or None without them."""
        return None if self.embeddings is None else _reader(self.embeddings.select(list(columns)))

    def units(self, columns: Sequence[str]) -> pa.RecordBatchReader | None:
        """``columns`` of ``unit_vectors``, or None without them."""
        return None if self.unit_vectors is None else _reader(self.unit_vectors.select(list(columns)))


@dataclass(frozen=True)
class TableDocuments:
    """A :class:`DocumentSource` over a table of ``doc_id``, ``canonical_text`` (and ``partition_date``)."""

    table: pa.Table

    def documents(self) -> pa.RecordBatchReader:
        """``doc_id``, ``canonical_text`` and, when the table has it, ``partition_date``."""
        columns = ["doc_id", "partition_date", "canonical_text"]
        return _reader(self.table.select([c for c in columns if c in self.table.column_names]))
