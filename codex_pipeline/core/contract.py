"""The chunk contract: the seed's 14 fields, the chunk types and the Parquet schema.

Every dataset's ``<dataset>_chunks`` table has exactly these columns, in this order.
The first 14 are the seed's schema table and are never dropped or renamed; the rest
are Codex additions.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import pyarrow as pa

from codex_pipeline.core.ids import NORMALIZATION

MAX_CHUNK_TOKENS = 1500
TARGET_MAX_TOKENS = 800


class ChunkType(str, Enum):
    """Seed chunk types; later datasets add members here (the enum is the registry)."""

    EVENT = "event"
    RECORD_VIEW = "record_view"
    AGENDA_ITEM = "agenda_item"
    SPEAKER_TURN = "speaker_turn"
    CONDITION = "condition"
    CONTINGENCY = "contingency"
    PERMIT_SUMMARY = "permit_summary"
    PERMIT_SCOPE_SECTION = "permit_scope_section"
    OSHA_CASE_SUMMARY = "osha_case_summary"
    OSHA_CITATION = "osha_citation"
    NARRATIVE_WINDOW = "narrative_window"
    DOC_SECTION = "doc_section"  # docs: one or more fused Markdown sections, or a part of one
    EMAIL_THREAD = "email_thread"  # email_threads: thread summary (parent of its windows)
    EMAIL_WINDOW = "email_window"  # email_threads: a sliding window of messages, or a part of one
    MOTION = "motion"  # civic_intelligence: a motion in minutes with its vote line (codex.civic_intelligence_votes)
    ITEM_TEXT = "item_text"  # civic_intelligence: a piece of an agenda item's own text in an agenda or minutes
    TRANSCRIPT_SEGMENT = "transcript_segment"  # civic_intelligence: sentence-bounded stretch of a transcript without speakers
    # -- chunk types added by later datasets go above this line --


CHUNK_TYPES: frozenset[str] = frozenset(t.value for t in ChunkType)

SYNTHETIC_CHUNK_TYPES: frozenset[str] = frozenset({ChunkType.EMAIL_THREAD.value})
"""Chunk types whose text a chunker wrote (a thread's subject, counts and participants), not words of the source
file: they are parents for navigation and context, never a search hit unless a filter asks for them by type (their
spans point to no place in the file a user could cite; issue 39: 20 of 230 mail top-5 slots)."""

COMPOSED_ANCHOR_KEY = "composed"
"""An evidence anchor with this key belongs to a chunk whose text a chunker composed (a transcript item's summary:
template words around quotes of the turns below it). Like :data:`SYNTHETIC_CHUNK_TYPES`, such a chunk is a parent for
navigation and context, never a search hit unless a filter asks for its type: its quotes are hits of their own as
the children they come from (issue 41: the item summary and its first segment took two of five slots)."""

@dataclass(frozen=True)
class TypedView:
    """A view that reads one chunk type's metadata as typed columns: SQL users query votes, not JSON.

    ``columns``: (column name, metadata key, DuckDB type) each; lists are ``VARCHAR[]``.
    """

    dataset: str
    name: str  # the view is codex.{dataset}_{name}
    chunk_type: str
    columns: tuple[tuple[str, str, str], ...]


TYPED_VIEWS: tuple[TypedView, ...] = (
    TypedView("civic_intelligence", "votes", "motion", (
        ("meeting_id", "meeting_id", "VARCHAR"), ("record_kind", "record_kind", "VARCHAR"), ("item", "item", "VARCHAR"),
        ("mover", "mover", "VARCHAR"), ("seconder", "seconder", "VARCHAR"), ("result", "result", "VARCHAR"),
        ("ayes", "ayes_count", "INTEGER"), ("noes", "noes_count", "INTEGER"), ("abstentions", "abstain_count", "INTEGER"),
        ("absent", "absent_count", "INTEGER"), ("unanimous", "unanimous", "BOOLEAN"),
        ("aye_names", "ayes", "VARCHAR[]"), ("no_names", "noes", "VARCHAR[]"), ("abstained_names", "abstain", "VARCHAR[]"),
        ("absent_names", "absent", "VARCHAR[]"), ("items_acted_on", "items", "VARCHAR[]"),
    )),
)
"""Typed views over chunk metadata, made beside the dataset's chunks view (``warehouse.catalog_views``)."""

SEED_FIELDS: tuple[str, ...] = (
    "chunk_id",
    "doc_id",
    "section_id",
    "chunk_text",
    "chunk_type",
    "token_count",
    "char_count",
    "seq_index",
    "parent_chunk_id",
    "evidence_anchor",
    "embedding_model",
    "embedding_version",
    "chunked_at",
    "chunking_version",
)

CHUNK_SCHEMA = pa.schema(
    [
        pa.field("chunk_id", pa.string(), nullable=False),
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("section_id", pa.string(), nullable=False),
        pa.field("chunk_text", pa.large_string(), nullable=False),
        pa.field("chunk_type", pa.string(), nullable=False),
        pa.field("token_count", pa.int32(), nullable=False),
        pa.field("char_count", pa.int32(), nullable=False),
        pa.field("seq_index", pa.int32(), nullable=False),
        pa.field("parent_chunk_id", pa.string(), nullable=True),
        pa.field("evidence_anchor", pa.string(), nullable=False),  # JSON text
        pa.field("embedding_model", pa.string(), nullable=True),  # set by the embeddings view
        pa.field("embedding_version", pa.string(), nullable=True),
        pa.field("chunked_at", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("chunking_version", pa.string(), nullable=False),
        # Codex additions
        pa.field("dataset", pa.string(), nullable=False),
        pa.field("partition_date", pa.date32(), nullable=False),
        pa.field("locator", pa.string(), nullable=False),
        pa.field("content_hash", pa.string(), nullable=False),
        pa.field("metadata", pa.string(), nullable=True),  # JSON: header path, speaker, …
    ]
)

REJECT_SCHEMA = pa.schema(
    [
        pa.field("dataset", pa.string(), nullable=False),
        pa.field("partition_date", pa.date32(), nullable=False),
        pa.field("stage", pa.string(), nullable=False),  # ingest | chunk
        pa.field("source_file", pa.string(), nullable=False),
        pa.field("record_ref", pa.string(), nullable=True),  # line number, record id, …
        pa.field("reason", pa.string(), nullable=False),
        pa.field("excerpt", pa.string(), nullable=True),  # first bytes of the bad input
        pa.field("rejected_at", pa.timestamp("us", tz="UTC"), nullable=False),
    ]
)

REVISION_NORMALIZATION_KEY = b"codex.normalization"
"""Metadata of ``raw.revision_digest``: the :data:`~codex_pipeline.core.ids.NORMALIZATION` its digests were made with."""

RAW_SCHEMA = pa.schema(
    [
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("record_id", pa.string(), nullable=False),
        pa.field("dataset", pa.string(), nullable=False),
        pa.field("partition_date", pa.date32(), nullable=False),
        pa.field("source_file", pa.string(), nullable=False),
        pa.field("title", pa.string(), nullable=True),
        pa.field("canonical_text", pa.large_string(), nullable=False),  # offsets point here
        pa.field("payload", pa.large_string(), nullable=True),  # validated record as JSON
        pa.field("xpaths", pa.string(), nullable=True),  # JSON [[offset, xpath], …] for HTML
        pa.field("blocks", pa.large_string(), nullable=True),  # JSON [[kind, start, end, key, meta], …]
        pa.field("content_hash", pa.string(), nullable=False),
        # SHA-1 hex of normalize_text(canonical_text), computed at ingest so a chunk run does not
        # normalize every document again; absent from files written before it (read as null)
        pa.field("revision_digest", pa.string(), nullable=True, metadata={REVISION_NORMALIZATION_KEY: NORMALIZATION}),
    ]
)
