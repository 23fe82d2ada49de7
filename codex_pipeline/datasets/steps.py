"""The per-partition building blocks of a dataset, as plain functions over Arrow tables.

Nothing here reads or writes the warehouse: the day steps in ``codex_pipeline.pipeline``
put these together with the reading, writing and publishing (and the Dagster assets call
those); the CLI, the address validator, benchmarks and tests call them directly.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import pyarrow as pa

from codex_pipeline.core.contract import RAW_SCHEMA, REJECT_SCHEMA, REVISION_NORMALIZATION_KEY
from codex_pipeline.core.documents import Reject, SourceDocument, blocks_from_json, blocks_to_json
from codex_pipeline.core.ids import NORMALIZATION, content_hash, revision_digests
from codex_pipeline.core.rows import ChunkRun, RowBuffer
from codex_pipeline.core.tokens import encoded_ahead
from codex_pipeline.datasets.registry import DatasetSpec


@dataclass
class StepOutput:
    """A step's table and rejects table, and how many documents it kept (ingest) or chunked (chunk)."""

    table: pa.Table
    rejects: pa.Table
    documents: int


def rejects_table(dataset: str, day: dt.date, rejects: Iterable[Reject]) -> pa.Table:
    """The rejects as a ``REJECT_SCHEMA`` table, all ``rejected_at`` now, excerpts cut to 500 characters."""
    now = dt.datetime.now(dt.UTC)
    rows = [
        {
            "dataset": dataset,
            "partition_date": day,
            "stage": r.stage,
            "source_file": r.source_file,
            "record_ref": r.record_ref,
            "reason": r.reason,
            "excerpt": (r.excerpt or None) and r.excerpt[:500],
            "rejected_at": now,
        }
        for r in rejects
    ]
    return pa.Table.from_pylist(rows, schema=REJECT_SCHEMA)


RAW_BATCH_CHARS = 8_000_000
"""Canonical text per raw row group: what bounds the raw and chunks steps' memory, whatever the day's size."""


class Ingest:
    """Turns a stream of a landing day's documents into ``raw`` row groups.

    Duplicate record ids become rejects (appended to ``rejects`` as they are met);
    ``record_ids`` and ``documents`` say what was kept once the stream is consumed.
    """

    def __init__(self, spec: DatasetSpec, day: dt.date, rejects: list[Reject]) -> None:
        self.spec, self.day, self.rejects = spec, day, rejects
        self.record_ids: list[str] = []
        self.by_file: Counter[str] = Counter()  # documents kept per landing file, for the row accounting
        self._seen: set[str] = set()

    @property
    def documents(self) -> int:
        """Documents kept so far (duplicates not counted)."""
        return len(self.record_ids)

    def tables(self, documents: Iterable[SourceDocument], max_chars: int | None = None) -> Iterator[pa.Table]:
        """One ``raw`` table per run of documents of at most ``max_chars`` text (default :data:`RAW_BATCH_CHARS`).

        ``max_chars=0``: one table. Lazy: ``rejects`` and ``record_ids`` are complete only once it is consumed.
        """
        for batch in _batches(documents, RAW_BATCH_CHARS if max_chars is None else max_chars):
            yield self._table(batch)

    def _table(self, documents: list[SourceDocument]) -> pa.Table:
        kept = []
        for doc in documents:
            if doc.doc_id in self._seen:
                self.rejects.append(
                    Reject(doc.source_file, f"duplicate record id {doc.record_id!r} in this partition", doc.record_id)
                )
                continue
            self._seen.add(doc.doc_id)
            self.record_ids.append(doc.record_id)
            self.by_file[doc.source_file] += 1
            kept.append(doc)
        # computed here, once per document, so a chunk run (one per chunking version) reads it;
        # a raw-only dataset is never chunked and stores none
        digests = revision_digests([doc.text for doc in kept]) if self.spec.chunked else [None] * len(kept)
        rows = [
            {
                "doc_id": doc.doc_id,
                "record_id": doc.record_id,
                "dataset": self.spec.name,
                "partition_date": self.day,
                "source_file": doc.source_file,
                "title": doc.title,
                "canonical_text": doc.text,
                "payload": json.dumps(doc.payload, ensure_ascii=False, sort_keys=True, default=str)
                if doc.payload is not None
                else None,
                "xpaths": json.dumps(doc.xpaths) if doc.xpaths else None,
                "blocks": blocks_to_json(doc.blocks),
                "content_hash": content_hash(doc.text),
                "revision_digest": digest,
            }
            for doc, digest in zip(kept, digests)
        ]
        return pa.Table.from_pylist(rows, schema=RAW_SCHEMA)


def ingest(spec: DatasetSpec, day: dt.date, documents: list[SourceDocument], rejects: list[Reject]) -> StepOutput:
    """Documents from a landing day as one ``raw`` table (duplicates become rejects)."""
    rejected = list(rejects)
    run = Ingest(spec, day, rejected)
    table = pa.concat_tables([RAW_SCHEMA.empty_table(), *run.tables(documents)])
    return StepOutput(table, rejects_table(spec.name, day, rejected), run.documents)


def documents_from_raw(raw: pa.Table) -> list[SourceDocument]:
    """Rebuild the documents a ``raw`` partition holds.

    A file written before ``raw.revision_digest`` existed, or under another
    :data:`~codex_pipeline.core.ids.NORMALIZATION`, gives documents without a digest: the chunk
    step computes theirs.
    """
    stored = _stored_digests(raw)
    docs = []
    for r in raw.to_pylist():
        docs.append(
            SourceDocument(
                doc_id=r["doc_id"],
                record_id=r["record_id"],
                text=r["canonical_text"],
                source_file=r["source_file"],
                title=r["title"],
                payload=json.loads(r["payload"]) if r["payload"] else None,
                xpaths=tuple((o, x) for o, x in json.loads(r["xpaths"])) if r["xpaths"] else (),
                blocks=blocks_from_json(r.get("blocks")),
                revision_digest=r.get("revision_digest") if stored else None,
            )
        )
    return docs


def _stored_digests(raw: pa.Table) -> bool:
    """Whether ``raw`` has a ``revision_digest`` column made with the current normalization."""
    i = raw.schema.get_field_index("revision_digest")
    if i < 0:
        return False
    meta = raw.schema.field(i).metadata or {}
    return meta.get(REVISION_NORMALIZATION_KEY) == NORMALIZATION.encode()


def chunk(spec: DatasetSpec, day: dt.date, documents: list[SourceDocument], chunked_at: dt.datetime | None = None) -> StepOutput:
    """Chunk every document; a document the chunker fails on becomes a reject."""
    if spec.chunker is None:
        raise ValueError(f"dataset {spec.name!r} is not chunked")
    run = ChunkRun(spec.name, day, spec.chunking_version, chunked_at or dt.datetime.now(dt.UTC))
    buf = RowBuffer(run)
    rejects: list[Reject] = []
    ok = 0
    for batch in _batches(documents, ENCODE_AHEAD_CHARS if spec.encodes_documents else 0):
        with encoded_ahead([doc.text for doc in batch] if spec.encodes_documents else ()):
            for doc in batch:
                try:
                    drafts = spec.chunker(doc, spec.limits)
                except Exception as exc:  # noqa: BLE001 - one bad record must not sink the partition
                    rejects.append(
                        Reject(doc.source_file, f"chunker failed: {type(exc).__name__}: {exc}", doc.record_id, stage="chunk")
                    )
                    continue
                if not drafts:
                    rejects.append(Reject(doc.source_file, "chunker produced no chunks", doc.record_id, stage="chunk"))
                    continue
                buf.add_document(doc, drafts)
                ok += 1
    return StepOutput(buf.to_table(), rejects_table(spec.name, day, rejects), ok)


ENCODE_AHEAD_CHARS = 4_000_000
"""Text encoded ahead per batch: enough for tiktoken to stay cache-hot, bounded memory."""


def _batches(documents: Iterable[SourceDocument], max_chars: int) -> Iterator[list[SourceDocument]]:
    """Consecutive runs of documents of at most ``max_chars`` text (0: all in one run)."""
    if max_chars <= 0:
        yield list(documents)
        return
    batch: list[SourceDocument] = []
    size = 0
    for doc in documents:
        if batch and size + len(doc.text) > max_chars:
            yield batch
            batch, size = [], 0
        batch.append(doc)
        size += len(doc.text)
    if batch:
        yield batch
