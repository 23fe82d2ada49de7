"""The redirect table: where a chunk id went after its partition was re-chunked.

``chunk_id`` hashes (doc_id, section_id), so it survives an edited section but not a
renamed one (a new heading, a new chunking version that cuts differently). Anyone
who stored an id (an eval set, a citation) can look it up in
``codex.<dataset>_redirects``: one row per id that existed in an earlier version of
the partition and no longer does, pointing at the newest id that holds the same
content, or saying the id is gone. Matching stays inside one document:

1. ``content_hash`` — a chunk with the identical text (a pure rename or move);
2. ``span_overlap`` — the document's canonical text is unchanged (same ``rev8`` in
   the locator), so offsets are comparable: the chunk whose ``char_span`` best
   overlaps the old one (intersection over union, so a parent spanning the whole
   document does not beat the chunk cut at the same place);
3. ``removed`` — no target, so a lookup answers "gone" rather than nothing.

Rows accumulate over re-chunks and always point at ids of the current table.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["INPUT_COLUMNS", "REDIRECT_SCHEMA", "compute_redirects"]

CONTENT_HASH = "content_hash"
SPAN_OVERLAP = "span_overlap"
REMOVED = "removed"
_STRENGTH = {REMOVED: 0, SPAN_OVERLAP: 1, CONTENT_HASH: 2}  # a chain is as weak as its weakest hop

# The chunk-table columns matching reads (never chunk_text: it may be large).
INPUT_COLUMNS = (
    "chunk_id", "doc_id", "section_id", "seq_index", "evidence_anchor",
    "chunking_version", "locator", "content_hash",
)

REDIRECT_SCHEMA = pa.schema(
    [
        pa.field("dataset", pa.string(), nullable=False),
        pa.field("partition_date", pa.date32(), nullable=False),
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("old_chunk_id", pa.string(), nullable=False),
        pa.field("old_section_id", pa.string(), nullable=False),
        pa.field("old_chunking_version", pa.string(), nullable=False),
        pa.field("new_chunk_id", pa.string(), nullable=True),  # null: the id is gone
        pa.field("new_section_id", pa.string(), nullable=True),
        pa.field("new_chunking_version", pa.string(), nullable=False),  # version this row was resolved against
        pa.field("match", pa.string(), nullable=False),  # content_hash | span_overlap | removed
        pa.field("overlap", pa.float64(), nullable=True),  # IoU of char spans, only for span_overlap
        pa.field("created_at", pa.timestamp("us", tz="UTC"), nullable=False),  # when the old id disappeared
    ]
)

_REV8 = re.compile(r"\|r=([0-9a-f]{8})\|s=")
_CHAR_SPAN = re.compile(r'"char_span":\[(\d+),(\d+)\]')


@dataclass(frozen=True, slots=True)
class _Row:
    """The parts of a chunk row matching needs, parsed once."""

    chunk_id: str
    doc_id: str
    section_id: str
    seq_index: int
    chunking_version: str
    content_hash: str
    rev8: str | None
    span: tuple[int, int]


@dataclass(frozen=True, slots=True)
class _Redirect:
    """One row of :data:`REDIRECT_SCHEMA` (same fields, same order)."""

    dataset: str
    partition_date: dt.date
    doc_id: str
    old_chunk_id: str
    old_section_id: str
    old_chunking_version: str
    new_chunk_id: str | None
    new_section_id: str | None
    new_chunking_version: str
    match: str
    overlap: float | None
    created_at: dt.datetime


def _span(anchor: str) -> tuple[int, int]:
    m = _CHAR_SPAN.search(anchor)
    if m is None:  # not the compact form RowBuffer writes: parse it properly
        s, e = json.loads(anchor)["char_span"]
        return int(s), int(e)
    return int(m.group(1)), int(m.group(2))


def _rows(table: pa.Table | None) -> list[_Row]:
    if table is None or table.num_rows == 0:
        return []
    c = {name: table.column(name).to_pylist() for name in INPUT_COLUMNS}
    out = []
    for cid, doc, sid, seq, anchor, version, locator, chash in zip(*(c[n] for n in INPUT_COLUMNS)):
        rev = _REV8.search(locator)
        out.append(_Row(cid, doc, sid, seq, version, chash, rev.group(1) if rev else None, _span(anchor)))
    return out


def _iou(a: tuple[int, int], b: tuple[int, int]) -> float:
    inter = min(a[1], b[1]) - max(a[0], b[0])
    if inter <= 0:
        return 0.0
    return inter / (max(a[1], b[1]) - min(a[0], b[0]))


def _match(old: _Row, candidates: list[_Row], old_ids: set[str], same_text: bool) -> tuple[_Row | None, str, float | None]:
    """The best target for one vanished chunk among its document's new chunks."""
    def closeness(c: _Row) -> tuple[int, int]:
        return abs(c.seq_index - old.seq_index), c.seq_index

    same = [c for c in candidates if c.content_hash == old.content_hash]
    if same:  # prefer an id that is new in this run over one that already existed
        return min(same, key=lambda c: (c.chunk_id in old_ids, *closeness(c))), CONTENT_HASH, None
    if same_text and candidates:
        span = old.span
        scored = [(_iou(span, c.span), c) for c in candidates]
        best, target = min(scored, key=lambda sc: (-sc[0], *closeness(sc[1])))
        if best > 0:
            return target, SPAN_OVERLAP, round(best, 6)
    return None, REMOVED, None


def _is_in(values: pa.ChunkedArray, among: pa.ChunkedArray) -> pa.ChunkedArray:
    return pc.is_in(values.cast(pa.string()), value_set=among.cast(pa.string()).combine_chunks())


def _fresh(previous: pa.Table | None, current: pa.Table, base: dict[str, Any]) -> dict[str, _Redirect]:
    """One hop: every id of ``previous`` missing from ``current``, matched within its document.

    Only the vanished rows and the current rows of their documents become Python
    objects: re-running unchanged input (the common case) stays a vectorized set test.
    """
    if previous is None or previous.num_rows == 0:
        return {}
    gone_table = previous.filter(pc.invert(_is_in(previous.column("chunk_id"), current.column("chunk_id"))))
    if gone_table.num_rows == 0:
        return {}
    gone = _rows(gone_table)
    old_ids = set(previous.column("chunk_id").to_pylist())
    by_doc: dict[str, list[_Row]] = {}
    for r in _rows(current.filter(_is_in(current.column("doc_id"), gone_table.column("doc_id")))):
        by_doc.setdefault(r.doc_id, []).append(r)
    out: dict[str, _Redirect] = {}
    for old in gone:
        candidates = by_doc.get(old.doc_id, [])
        same_text = bool(candidates) and old.rev8 is not None and candidates[0].rev8 == old.rev8
        target, how, overlap = _match(old, candidates, old_ids, same_text)
        out[old.chunk_id] = _Redirect(
            doc_id=old.doc_id,
            old_chunk_id=old.chunk_id,
            old_section_id=old.section_id,
            old_chunking_version=old.chunking_version,
            new_chunk_id=target.chunk_id if target else None,
            new_section_id=target.section_id if target else None,
            match=how,
            overlap=overlap,
            **base,
        )
    return out


def _chain(earlier: _Redirect, hop: _Redirect, version: str) -> _Redirect:
    """A→B then B→C becomes A→C; the match is the weaker of the two hops."""
    how = min(earlier.match, hop.match, key=_STRENGTH.__getitem__)
    overlap = None
    if how == SPAN_OVERLAP:
        overlap = round((earlier.overlap or 1.0) * (hop.overlap or 1.0), 6)
    return replace(
        earlier, new_chunk_id=hop.new_chunk_id, new_section_id=hop.new_section_id,
        new_chunking_version=version, match=how, overlap=overlap,
    )


def _carried(stored: pa.Table | None, current_table: pa.Table, fresh: dict[str, _Redirect], version: str) -> list[_Redirect]:
    """Earlier redirect rows re-resolved against the current table."""
    if stored is None or stored.num_rows == 0:
        return []
    current = dict(zip(current_table.column("chunk_id").to_pylist(), current_table.column("section_id").to_pylist()))
    out = []
    for r in stored.to_pylist():
        old = _Redirect(**{f: r.get(f) for f in _Redirect.__dataclass_fields__})
        if old.old_chunk_id in current or old.old_chunk_id in fresh:
            continue  # the id exists again (or was just re-matched): no redirect
        target = old.new_chunk_id
        if target is None:
            out.append(replace(old, new_chunking_version=version))
        elif target in current:
            out.append(replace(old, new_section_id=current[target], new_chunking_version=version))
        elif target in fresh:
            out.append(_chain(old, fresh[target], version))
        else:  # the target vanished without a trace (e.g. its partition was quarantined in between)
            out.append(replace(old, new_chunk_id=None, new_section_id=None, new_chunking_version=version,
                               match=REMOVED, overlap=None))
    return out


def compute_redirects(
    previous: pa.Table | None,
    current: pa.Table,
    *,
    dataset: str,
    partition_date: dt.date,
    chunking_version: str,
    previous_redirects: pa.Table | None = None,
    now: dt.datetime | None = None,
) -> pa.Table:
    """The partition's redirect table after re-chunking ``previous`` into ``current``.

    ``previous`` / ``current`` are chunk tables of one partition (at least
    :data:`INPUT_COLUMNS`); ``previous_redirects`` is the partition's stored redirect
    table, which is merged in so every row points at an id of ``current`` (or is
    ``removed``), and rows for ids present again in ``current`` are dropped.
    ``chunking_version`` is the version that built ``current``. Rows are sorted by
    (doc_id, old_chunk_id), so the same inputs give the same table.
    """
    now = now or dt.datetime.now(dt.timezone.utc)
    base = {"dataset": dataset, "partition_date": partition_date, "new_chunking_version": chunking_version,
            "created_at": now}
    fresh = _fresh(previous, current, base)
    rows = list(fresh.values()) + _carried(previous_redirects, current, fresh, chunking_version)
    rows.sort(key=lambda r: (r.doc_id, r.old_chunk_id))
    columns = {f.name: [getattr(r, f.name) for r in rows] for f in REDIRECT_SCHEMA}
    return pa.Table.from_pydict(columns, schema=REDIRECT_SCHEMA)
