"""The ``<dataset>_propositions`` table: schema, ids and rows."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

import pyarrow as pa

from codex_pipeline.core.ids import make_chunk_id
from codex_pipeline.core.tokens import count_tokens
from codex_pipeline.propositions.base import Statement

TABLE = "propositions"
EMBEDDINGS_TABLE = "proposition_embeddings"
QUARANTINE_TABLE = "propositions_quarantine"

SPAN_TYPE = pa.struct([pa.field("start", pa.int64(), nullable=False), pa.field("end", pa.int64(), nullable=False)])

PROPOSITIONS_SCHEMA = pa.schema(
    [
        pa.field("proposition_id", pa.string(), nullable=False),
        pa.field("parent_chunk_id", pa.string(), nullable=False),
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("ordinal", pa.int32(), nullable=False),  # 0-based within the parent
        pa.field("text", pa.large_string(), nullable=False),
        pa.field("token_count", pa.int32(), nullable=False),  # exact cl100k
        pa.field("spans", pa.list_(SPAN_TYPE), nullable=True),  # canonical_text ranges; null: not aligned
        pa.field("alignment_score", pa.float64(), nullable=True),
        pa.field("extractor", pa.string(), nullable=False),
        pa.field("extractor_version", pa.string(), nullable=False),
        pa.field("prompt_version", pa.string(), nullable=False),
        pa.field("created_at", pa.timestamp("us", tz="UTC"), nullable=False),
        # Codex additions: the cache key and the current-corpus join
        pa.field("parent_content_hash", pa.string(), nullable=False),
        pa.field("parent_offset", pa.int64(), nullable=False),  # parent's first source offset when extracted
        pa.field("partition_date", pa.date32(), nullable=False),
    ]
)


def make_proposition_id(parent_chunk_id: str, ordinal: int) -> str:
    """``urn:aprs:chunk:`` + 16 hex of SHA-256(parent chunk id, ``proposition.{ordinal}``).

    The chunk-id URN form, minted the way chunk ids are (``core.ids``) with the parent
    in the place of the document: no text, time or version in it, so a re-extraction
    of an unchanged chunk keeps every id.
    """
    return make_chunk_id(parent_chunk_id, f"proposition.{ordinal}")


@dataclass(frozen=True)
class PropositionRow:
    """One statement of a parent chunk, with what :func:`build_table` needs to make its row."""

    parent_chunk_id: str
    doc_id: str
    ordinal: int
    statement: Statement
    extractor: str
    extractor_version: str
    prompt_version: str
    created_at: dt.datetime
    parent_content_hash: str
    parent_offset: int


def build_table(rows: Iterable[PropositionRow], day: dt.date) -> pa.Table:
    """The partition's table, ids minted and tokens counted here (never by an extractor)."""
    out = []
    for r in rows:
        s = r.statement
        out.append(
            {
                "proposition_id": make_proposition_id(r.parent_chunk_id, r.ordinal),
                "parent_chunk_id": r.parent_chunk_id,
                "doc_id": r.doc_id,
                "ordinal": r.ordinal,
                "text": s.text,
                "token_count": count_tokens(s.text),
                "spans": None if s.spans is None else [{"start": a, "end": b} for a, b in s.spans],
                "alignment_score": s.score,
                "extractor": r.extractor,
                "extractor_version": r.extractor_version,
                "prompt_version": r.prompt_version,
                "created_at": r.created_at,
                "parent_content_hash": r.parent_content_hash,
                "parent_offset": r.parent_offset,
                "partition_date": day,
            }
        )
    return pa.Table.from_pylist(out, schema=PROPOSITIONS_SCHEMA)


def spans_of(value: list[dict[str, int]] | None) -> tuple[tuple[int, int], ...] | None:
    """A ``spans`` cell as Python tuples."""
    return None if value is None else tuple((int(d["start"]), int(d["end"])) for d in value)
