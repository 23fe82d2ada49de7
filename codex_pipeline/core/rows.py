"""Turn a chunker's drafts into contract rows (ids, counts, anchors, locators)."""

from __future__ import annotations

import bisect
import datetime as dt
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from codex_pipeline.core.contract import CHUNK_SCHEMA, ChunkType
from codex_pipeline.core.documents import SourceDocument
from codex_pipeline.core.ids import (
    RevisionLedger,
    chunk_id_of,
    content_hash,
    locator_uid,
    make_chunk_id,
    revision_digests,
)
from codex_pipeline.core.locators import addresses, pad_width

ROW_FORMAT = "2"
"""Revision of what RowBuffer derives for every dataset (ids, anchors, locators); part of each
dataset's ``chunking_version``. 2: seed-003 locators (section dot path, block index, rev8 of
``normalize_text``)."""


@dataclass(slots=True)
class ChunkDraft:
    """A chunk as a chunker sees it, before ids and bookkeeping.

    ``spans`` are char ranges of the document's canonical text. A single span means
    the chunk is a verbatim slice (``text[start:end] == chunk text``); several spans
    mean the chunk was composed from them (a merged turn, a record view).
    """

    section_id: str
    chunk_type: ChunkType | str
    text: str
    spans: tuple[tuple[int, int], ...]
    token_count: int
    parent_section_id: str | None = None
    page: int | None = None
    block: int = 0
    anchor_extra: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None


@dataclass(frozen=True)
class ChunkRun:
    """What one chunking run stamps on every row."""

    dataset: str
    partition_date: dt.date
    chunking_version: str
    chunked_at: dt.datetime


def evidence_anchor(draft: ChunkDraft, xpath: str | None) -> str:
    """``{page, char_span, spans?, xpath?, …}`` as compact JSON."""
    if len(draft.spans) == 1 and not xpath and not draft.anchor_extra:  # the hot path
        (start, end), page = draft.spans[0], draft.page
        return f'{{"page":{"null" if page is None else int(page)},"char_span":[{start},{end}]}}'
    starts = [s for s, _ in draft.spans]
    ends = [e for _, e in draft.spans]
    anchor: dict[str, Any] = {"page": draft.page, "char_span": [min(starts), max(ends)]}
    if len(draft.spans) > 1:
        anchor["spans"] = [list(s) for s in draft.spans]
    if xpath:
        anchor["xpath"] = xpath
    anchor.update(draft.anchor_extra or {})
    return json.dumps(anchor, separators=(",", ":"), ensure_ascii=False)


_RUN_COLUMNS = ("embedding_model", "embedding_version", "chunked_at", "chunking_version", "dataset", "partition_date")
_ROW_COLUMNS = tuple(name for name in CHUNK_SCHEMA.names if name not in _RUN_COLUMNS)  # what a row tuple holds
_LOCATOR = _ROW_COLUMNS.index("locator")
_TYPE_VALUES: dict[ChunkType | str, str] = {t: t.value for t in ChunkType}  # Enum.value is a Python-level property
_metadata_json = json.JSONEncoder(ensure_ascii=False, sort_keys=True).encode  # one encoder, not one per row


def _xpath_at(doc: SourceDocument, offset: int) -> str | None:
    if not doc.xpaths:
        return None
    k = bisect.bisect_right([o for o, _ in doc.xpaths], offset) - 1
    return doc.xpaths[max(k, 0)][1]


class RowBuffer:
    """Accumulates chunk rows and emits an Arrow table in contract column order."""

    def __init__(self, run: ChunkRun, ledger: RevisionLedger | None = None) -> None:
        self.run = run
        self.rows: list[tuple[Any, ...]] = []  # the locator column holds (document, tail) until to_table
        self.ledger = ledger or RevisionLedger()  # rev8, or rev12 on a collision (seed 003)
        self._heads: list[str] = []  # per document added: "{doc_uid}|r={rev}|s=", once its rev is known
        self._pending: list[tuple[str, SourceDocument]] = []  # (doc_uid, document) whose rev is not yet known

    def add_document(self, doc: SourceDocument, drafts: Iterable[ChunkDraft]) -> int:
        """Append one document's drafts in reading order; returns the number added.

        The document's ``rev`` (and so its locators) is resolved in :meth:`to_table`, for all
        documents added by then, in the order they were added: from the digest stored at ingest
        (``doc.revision_digest``), or else computed, for all documents without one in one pass.

        Ids and locators are ``make_chunk_id`` and ``make_locator`` with what they share
        across the document's rows computed once (the tests compare the two).
        """
        drafts = list(drafts)
        uid = locator_uid(doc.record_id)
        k = len(self._heads) + len(self._pending)  # revisions are computed for all documents at once, in to_table
        self._pending.append((uid, doc))
        addrs = addresses(doc.blocks, drafts)
        width = pad_width(addrs)
        doc_id = doc.doc_id
        if drafts:
            make_chunk_id(doc_id, "")  # refuses a doc_id holding the separator, once
        id_of = chunk_id_of(doc_id)
        xpaths = bool(doc.xpaths)
        append = self.rows.append
        n = 0
        for seq, (d, a) in enumerate(zip(drafts, addrs)):
            text = d.text
            parent = d.parent_section_id
            append(
                (
                    id_of(d.section_id),
                    doc_id,
                    d.section_id,
                    text,
                    _TYPE_VALUES.get(d.chunk_type, d.chunk_type),
                    d.token_count,
                    len(text),
                    seq,
                    id_of(parent) if parent else None,
                    evidence_anchor(d, _xpath_at(doc, d.spans[0][0]) if xpaths else None),
                    (k, f"{a.section}|p={str(a.page).zfill(width)}|b={str(a.block).zfill(width)}"),
                    content_hash(text),
                    _metadata_json(d.metadata) if d.metadata else None,
                )
            )
            n += 1
        return n

    def _resolve_revisions(self) -> None:
        """The rev of every document added since the last call: stored digests, and one
        normalization pass over the documents without one."""
        if not self._pending:
            return
        pending = self._pending
        missing = [doc.text for _, doc in pending if doc.revision_digest is None]
        computed = iter(revision_digests(missing) if missing else ())
        for uid, doc in pending:  # in the order added: the ledger's first text wins
            digest = next(computed) if doc.revision_digest is None else doc.revision_digest
            self._heads.append(f"{uid}|r={self.ledger.revision_of_digest(uid, digest)}|s=")
        self._pending = []

    def to_table(self) -> pa.Table:
        """Every row added so far as a ``CHUNK_SCHEMA`` table, pending revisions resolved first.

        The run's columns are repeated from :class:`ChunkRun`; ``embedding_model`` and
        ``embedding_version`` are null (the embeddings view fills them).
        """
        self._resolve_revisions()
        n = len(self.rows)
        columns: list[tuple[Any, ...]] = list(zip(*self.rows)) if self.rows else [() for _ in _ROW_COLUMNS]
        if self.rows:
            heads = self._heads
            columns[_LOCATOR] = tuple([heads[k] + tail for k, tail in columns[_LOCATOR]])
        run = self.run
        same = {"embedding_model": None, "embedding_version": None,  # filled by the embeddings view
                "chunked_at": run.chunked_at, "chunking_version": run.chunking_version,
                "dataset": run.dataset, "partition_date": run.partition_date}
        by_name = dict(zip(_ROW_COLUMNS, columns))
        arrays = []
        for f in CHUNK_SCHEMA:
            if f.name in same:  # one value for the whole run: repeated by Arrow, not converted row by row
                value = same[f.name]
                arrays.append(pa.nulls(n, f.type) if value is None else pa.repeat(pa.scalar(value, type=f.type), n))
            else:
                arrays.append(pa.array(by_name[f.name], type=f.type))
        return pa.Table.from_arrays(arrays, schema=CHUNK_SCHEMA)
