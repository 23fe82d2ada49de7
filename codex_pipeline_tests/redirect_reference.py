"""The exact redirect matcher: one Python word set per chunk, one row at a time.

This is :mod:`codex_pipeline.redirects.matching` as it was before it was vectorized,
unchanged in what it decides. It is the reference the fast matcher must agree with: the
tests compare both on golden and random partitions, ``bench/bench_redirects.py --check``
on a sample of the benchmark. It is too slow for a large re-key (13-17 s per 100k changed
chunks), so nothing in the pipeline calls it.
"""

from __future__ import annotations

import bisect
import datetime as dt
import json
import re
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from codex_pipeline.redirects.matching import (
    CONTENT_HASH,
    INPUT_COLUMNS,
    MATCH_COLUMNS,
    MIN_SIMILARITY,
    REDIRECT_SCHEMA,
    REMOVED,
    SAME_PLACE_SIMILARITY,
    SIMILAR_TEXT,
    SIMILAR_WINDOW,
    SPAN_OVERLAP,
)

__all__ = ["exact_matches", "exact_redirects"]

_STRENGTH = {REMOVED: 0, SIMILAR_TEXT: 1, SPAN_OVERLAP: 2, CONTENT_HASH: 3}  # a chain is as weak as its weakest hop
_REV8 = re.compile(r"\|r=([0-9a-f]{8}|[0-9a-f]{12})\|s=")
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
    text: str


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


def _extents(table: pa.Table) -> dict[str, int]:
    """Each document's furthest chunk end.

    ``rev8`` hashes the *normalized* text, so a whitespace-only edit keeps it while moving
    every offset after the edit; offsets are compared only where the extent is unchanged too.
    """
    out: dict[str, int] = {}
    for doc, anchor in zip(table.column("doc_id").to_pylist(), table.column("evidence_anchor").to_pylist()):
        out[doc] = max(out.get(doc, 0), _span(anchor)[1])
    return out


def _rows(table: pa.Table | None) -> list[_Row]:
    if table is None or table.num_rows == 0:
        return []
    c = {name: table.column(name).to_pylist() for name in INPUT_COLUMNS}
    out = []
    for cid, doc, sid, seq, anchor, version, locator, chash, text in zip(*(c[n] for n in INPUT_COLUMNS)):
        rev = _REV8.search(locator)
        out.append(_Row(cid, doc, sid, seq, version, chash, rev.group(1) if rev else None, _span(anchor), text))
    return out


def _words(text: str) -> frozenset[str]:
    """Lower-cased whitespace-separated words: crude, but a third of a regex word split's cost."""
    return frozenset(text.lower().split())


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter) if a or b else 0.0


class _Candidates:
    """One document's new chunks, indexed so matching stays near-linear on long documents."""

    def __init__(self, rows: list[_Row]) -> None:
        self.rows = sorted(rows, key=lambda r: r.seq_index)
        self.seqs = [r.seq_index for r in self.rows]
        self.starts = np.array([r.span[0] for r in self.rows], dtype=np.int64)
        self.ends = np.array([r.span[1] for r in self.rows], dtype=np.int64)
        self.by_hash: dict[str, list[_Row]] = {}
        for r in self.rows:
            self.by_hash.setdefault(r.content_hash, []).append(r)
        self._words: dict[int, frozenset[str]] = {}

    def words(self, k: int) -> frozenset[str]:
        if k not in self._words:
            self._words[k] = _words(self.rows[k].text)
        return self._words[k]

    def closest(self, ks: list[int], seq: int) -> int:
        """Of candidate positions ``ks``, the one nearest ``seq`` in reading order (earlier on ties)."""
        return min(ks, key=lambda k: (abs(self.seqs[k] - seq), self.seqs[k]))


def _match(old: _Row, cands: _Candidates, old_ids: set[str], same_text: bool) -> tuple[_Row | None, str, float | None]:
    """The best target for one vanished chunk among its document's new chunks."""
    same = cands.by_hash.get(old.content_hash)
    if same:  # prefer an id that is new in this run over one that already existed
        return min(same, key=lambda c: (c.chunk_id in old_ids, abs(c.seq_index - old.seq_index), c.seq_index)), CONTENT_HASH, None
    if not cands.rows:
        return None, REMOVED, None
    if same_text:
        s, e = old.span
        inter = np.minimum(cands.ends, e) - np.maximum(cands.starts, s)
        iou = np.where(inter > 0, inter / (np.maximum(cands.ends, e) - np.minimum(cands.starts, s)), 0.0)
        best = float(iou.max())
        if best > 0:
            k = cands.closest(np.flatnonzero(iou == best).tolist(), old.seq_index)
            return cands.rows[k], SPAN_OVERLAP, round(best, 6)
    lo = bisect.bisect_left(cands.seqs, old.seq_index - SIMILAR_WINDOW)
    hi = bisect.bisect_right(cands.seqs, old.seq_index + SIMILAR_WINDOW)
    # only chunks new in this run: a deleted chunk must not land on a neighbour that was already there
    fresh = [k for k in range(lo, hi) if cands.rows[k].chunk_id not in old_ids]
    if fresh:
        words = _words(old.text)
        here = bisect.bisect_left(cands.seqs, old.seq_index)
        if here in fresh:  # a renamed or lightly edited section usually keeps its place: try that first
            score = _jaccard(words, cands.words(here))
            if score >= SAME_PLACE_SIMILARITY:
                return cands.rows[here], SIMILAR_TEXT, round(score, 6)
        scores = {k: _jaccard(words, cands.words(k)) for k in fresh}
        best = max(scores.values())
        if best >= MIN_SIMILARITY:
            k = cands.closest([k for k, v in scores.items() if v == best], old.seq_index)
            return cands.rows[k], SIMILAR_TEXT, round(best, 6)
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
    old_extent = _extents(previous.filter(_is_in(previous.column("doc_id"), gone_table.column("doc_id"))))
    rows_by_doc: dict[str, list[_Row]] = {}
    for r in _rows(current.filter(_is_in(current.column("doc_id"), gone_table.column("doc_id")))):
        rows_by_doc.setdefault(r.doc_id, []).append(r)
    by_doc = {doc: _Candidates(rows) for doc, rows in rows_by_doc.items()}
    empty = _Candidates([])
    out: dict[str, _Redirect] = {}
    for old in gone:
        cands = by_doc.get(old.doc_id, empty)
        same_text = (bool(cands.rows) and old.rev8 is not None and cands.rows[0].rev8 == old.rev8
                     and int(cands.ends.max()) == old_extent[old.doc_id])
        target, how, overlap = _match(old, cands, old_ids, same_text)
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
    _moved_documents(out, gone, current, old_ids)
    return out


def _moved_documents(out: dict[str, _Redirect], gone: list[_Row], current: pa.Table, old_ids: set[str]) -> None:
    """Last resort before ``removed``: the identical text under a new id of another document.

    A document whose id changed (a renamed record, a reader that now names it otherwise)
    loses all its chunk ids at once and has no candidates of its own.
    """
    lost = [g for g in gone if out[g.chunk_id].match == REMOVED]
    if not lost:
        return
    hashes = pa.array(sorted({g.content_hash for g in lost}), type=pa.string())
    by_hash: dict[str, list[_Row]] = {}
    for r in _rows(current.filter(_is_in(current.column("content_hash"), pa.chunked_array([hashes])))):
        if r.chunk_id not in old_ids:
            by_hash.setdefault(r.content_hash, []).append(r)
    for g in lost:
        targets = by_hash.get(g.content_hash)
        if targets:
            t = min(targets, key=lambda r: (abs(r.seq_index - g.seq_index), r.doc_id, r.seq_index))
            out[g.chunk_id] = replace(out[g.chunk_id], new_chunk_id=t.chunk_id, new_section_id=t.section_id, match=CONTENT_HASH)


def _chain(earlier: _Redirect, hop: _Redirect, version: str) -> _Redirect:
    """A→B then B→C becomes A→C; the match is the weaker of the two hops."""
    how = min(earlier.match, hop.match, key=_STRENGTH.__getitem__)
    overlap = None
    if how in (SPAN_OVERLAP, SIMILAR_TEXT):  # the hops' scores multiplied (a content_hash hop scores 1)
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
        else:  # the target vanished without a trace (its chunks file was lost, e.g. deleted by hand)
            out.append(replace(old, new_chunk_id=None, new_section_id=None, new_chunking_version=version,
                               match=REMOVED, overlap=None))
    return out


def exact_redirects(
    previous: pa.Table | None,
    current: pa.Table,
    *,
    dataset: str,
    partition_date: dt.date,
    chunking_version: str,
    previous_redirects: pa.Table | None = None,
    now: dt.datetime | None = None,
) -> pa.Table:
    """The partition's redirect table after re-chunking ``previous`` into ``current``: what
    :func:`codex_pipeline.redirects.matching.compute_redirects` must return.

    ``previous`` / ``current`` are chunk tables of one partition (at least
    :data:`INPUT_COLUMNS`); ``previous_redirects`` is the partition's stored redirect
    table, which is merged in so every row points at an id of ``current`` (or is
    ``removed``), and rows for ids present again in ``current`` are dropped.
    ``chunking_version`` is the version that built ``current``. Rows are sorted by
    (doc_id, old_chunk_id), so the same inputs give the same table.
    """
    now = now or dt.datetime.now(dt.UTC)
    base = {"dataset": dataset, "partition_date": partition_date, "new_chunking_version": chunking_version,
            "created_at": now}
    fresh = _fresh(previous, current, base)
    rows = list(fresh.values()) + _carried(previous_redirects, current, fresh, chunking_version)
    rows.sort(key=lambda r: (r.doc_id, r.old_chunk_id))
    columns = {f.name: [getattr(r, f.name) for r in rows] for f in REDIRECT_SCHEMA}
    return pa.Table.from_pydict(columns, schema=REDIRECT_SCHEMA)


def exact_matches(previous: pa.Table | None, current: pa.Table) -> pa.Table:
    """Every id of ``previous`` missing from ``current``, matched: what
    :func:`codex_pipeline.redirects.matching.match_vanished` must return."""
    table = exact_redirects(previous, current, dataset="-", partition_date=dt.date(2000, 1, 1), chunking_version="-")
    table = table.select(list(MATCH_COLUMNS))
    return table.take(pc.sort_indices(table, sort_keys=[("old_chunk_id", "ascending")]))
