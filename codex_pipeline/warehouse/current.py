"""The current corpus of a dataset: one live version of every document.

A partition is what landed on a day. What users query by default is the *current
corpus*: for each document, the rows of its latest landing **by partition date**
(backfilling an older day never makes an older version current), minus documents
retracted by a tombstone or, for a ``snapshot`` dataset (full exports), missing from
the newest snapshot.

That is computed here, once per materialization, into two small files under
``warehouse/<dataset>/index/``:

``landings.parquet``
    The event log: one row per (document, day) it landed on (a day whose chunks are
    published) and per tombstone. Each materialization replaces one day's events of
    one kind, so days can be (re)run in any order.
``documents.parquet``
    Folded from the log: one row per document ever landed, with the day of its
    current version (``partition_date``), every day it landed on and, for a retracted
    document, when and how (``deleted_on``, ``deleted_by``). The current views of
    :mod:`codex_pipeline.warehouse.storage` semi-join every partition with it on
    ``(doc_id, partition_date)``: a read costs one small file more than the history.

Both are rewritten whole (temp file, then rename) under a per-dataset file lock, so
concurrent backfill runs of different days of one dataset serialize here for a few
milliseconds and never lose each other's events. Alongside, two derived files keep
the rest of the catalog honest: ``redirects/deleted.parquet`` gives every chunk id of a
retracted document a redirect row (``match = 'deleted'``; the row goes when the
document lands again), and ``rejects/unknown_tombstones.parquet`` lists tombstones
naming a document that never landed on or before the tombstone's day.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from codex_pipeline.core.contract import REJECT_SCHEMA
from codex_pipeline.warehouse.atomic_files import file_lock
from codex_pipeline.warehouse.catalog_views import SCHEMA, current_chunk_keys_sql, documents_view_sql
from codex_pipeline.warehouse.redirect_table import DELETED, REDIRECT_SCHEMA
from codex_pipeline.warehouse.storage import Warehouse, write_parquet_atomic

__all__ = [
    "DOCUMENTS_SCHEMA",
    "LANDINGS_SCHEMA",
    "TOMBSTONES_SCHEMA",
    "IndexChange",
    "UniqueIds",
    "check_unique_chunk_ids",
    "ensure_index",
    "landed_from_raw",
    "tombstones_table",
    "update_index",
]

LANDED = "landed"
TOMBSTONE = "tombstone"
BY_SNAPSHOT = "snapshot"
LANDINGS_FILE = "landings.parquet"
DELETED_REDIRECTS = "deleted"
"""``redirects/deleted.parquet``: not a day, so per-day redirect bookkeeping never sees it."""
UNKNOWN_TOMBSTONES = "unknown_tombstones"
"""``rejects/unknown_tombstones.parquet``, derived from the event log on every update."""
TOMBSTONE_STAGE = "tombstone"

LANDINGS_SCHEMA = pa.schema(
    [
        pa.field("record_id", pa.string(), nullable=False),  # what tombstones name
        pa.field("doc_id", pa.string(), nullable=True),  # the reader's id for it (null on a tombstone)
        pa.field("partition_date", pa.date32(), nullable=False),
        pa.field("event", pa.string(), nullable=False),  # landed | tombstone
        pa.field("source_file", pa.string(), nullable=True),
        pa.field("recorded_at", pa.timestamp("us", tz="UTC"), nullable=False),
    ]
)

DOCUMENTS_SCHEMA = pa.schema(
    [
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("record_id", pa.string(), nullable=False),
        pa.field("partition_date", pa.date32(), nullable=False),  # the day of the current version
        pa.field("source_file", pa.string(), nullable=True),
        pa.field("landed_on", pa.list_(pa.date32()), nullable=False),  # every landing day, ascending
        pa.field("deleted_on", pa.date32(), nullable=True),  # null: live
        pa.field("deleted_by", pa.string(), nullable=True),  # tombstone | snapshot
    ]
)

TOMBSTONES_SCHEMA = pa.schema(
    [
        pa.field("record_id", pa.string(), nullable=False),
        pa.field("partition_date", pa.date32(), nullable=False),
        pa.field("source_file", pa.string(), nullable=False),
        pa.field("line", pa.int32(), nullable=False),
    ]
)
"""``warehouse/<dataset>/tombstones/<day>.parquet``: the accepted tombstones of a landing day."""


@dataclass(frozen=True)
class IndexChange:
    """What one update did to the current corpus."""

    documents: int  # live documents
    deleted: int  # retracted documents
    newly_deleted: tuple[str, ...]
    restored: tuple[str, ...]  # were deleted, live again
    deleted_chunk_ids: int  # rows of redirects/deleted.parquet
    unknown_tombstones: int

    def as_metadata(self) -> dict[str, int]:
        """Counts for a step's ``current`` metadata: id lists as their lengths, ``deleted_chunk_ids`` left out."""
        return {
            "current_documents": self.documents,
            "deleted_documents": self.deleted,
            "newly_deleted": len(self.newly_deleted),
            "restored": len(self.restored),
            "unknown_tombstones": self.unknown_tombstones,
        }


class TombstoneLike(Protocol):
    """What :func:`tombstones_table` reads (``sources.tombstones.Tombstone``; warehouse imports no reader)."""

    @property
    def record_id(self) -> str: ...
    @property
    def source_file(self) -> str: ...
    @property
    def line(self) -> int: ...


def tombstones_table(day: dt.date, tombstones: Iterable[TombstoneLike]) -> pa.Table:
    """Accepted tombstones of a landing day as a :data:`TOMBSTONES_SCHEMA` table."""
    rows = [
        {"record_id": t.record_id, "partition_date": day, "source_file": t.source_file, "line": t.line}
        for t in tombstones
    ]
    return pa.Table.from_pylist(rows, schema=TOMBSTONES_SCHEMA)


def landed_from_raw(raw: pa.Table) -> pa.Table:
    """The columns of a ``raw`` partition a landing event needs."""
    return raw.select(["doc_id", "record_id", "source_file"])


def _index_lock(wh: Warehouse, dataset: str) -> contextlib.AbstractContextManager[None]:
    return file_lock(wh.index_dir(dataset) / ".lock")


def update_index(
    wh: Warehouse,
    dataset: str,
    day: dt.date,
    *,
    landed: pa.Table | None = None,
    tombstones: pa.Table | None = None,
    snapshot: bool = False,
    now: dt.datetime | None = None,
) -> IndexChange:
    """Replace ``day``'s landing events (``landed``) and/or tombstones, then refold.

    ``landed``: the documents that landed on ``day`` and are published (``doc_id``,
    ``record_id``, ``source_file``; an empty table when the day's chunks are not
    published); ``tombstones``: the day's accepted tombstones (``record_id``,
    ``source_file``), matched to documents by record id. ``None`` leaves that kind of
    event as it is. ``snapshot``: the dataset's landings are full exports.
    """
    now = now or dt.datetime.now(dt.UTC)
    with _index_lock(wh, dataset):
        log = _read_landings(wh, dataset)
        for kind, table in ((LANDED, landed), (TOMBSTONE, tombstones)):
            if table is None:
                continue
            keep = pc.invert(
                pc.and_(pc.equal(log.column("partition_date"), pa.scalar(day, pa.date32())),
                        pc.equal(log.column("event"), kind))
            )
            log = pa.concat_tables([log.filter(keep), _events(table, day, kind, now)])
        write_parquet_atomic(log, wh.index_dir(dataset) / LANDINGS_FILE, use_dictionary=False)
        return _refold(wh, dataset, log, snapshot, now)


def ensure_index(wh: Warehouse, dataset: str, snapshot: bool = False) -> bool:
    """Build the index from the warehouse files if it is missing (a data dir from before it existed).

    Returns True when it was built.
    """
    if wh.documents_path(dataset).exists() and (wh.index_dir(dataset) / LANDINGS_FILE).exists():
        return False
    with _index_lock(wh, dataset):
        if wh.documents_path(dataset).exists() and (wh.index_dir(dataset) / LANDINGS_FILE).exists():
            return False
        log = _read_landings(wh, dataset)
        write_parquet_atomic(log, wh.index_dir(dataset) / LANDINGS_FILE, use_dictionary=False)
        _refold(wh, dataset, log, snapshot, dt.datetime.now(dt.UTC))
        return True


# -- the event log --------------------------------------------------------------------


def _events(table: pa.Table, day: dt.date, kind: str, now: dt.datetime) -> pa.Table:
    n = table.num_rows
    names = table.column_names
    return pa.Table.from_pydict(
        {
            "record_id": table.column("record_id"),
            "doc_id": table.column("doc_id") if "doc_id" in names else pa.nulls(n, pa.string()),
            "partition_date": pa.array([day] * n, pa.date32()),
            "event": pa.array([kind] * n, pa.string()),
            "source_file": table.column("source_file") if "source_file" in names else pa.nulls(n, pa.string()),
            "recorded_at": pa.array([now] * n, pa.timestamp("us", tz="UTC")),
        },
        schema=LANDINGS_SCHEMA,
    )


def _read_landings(wh: Warehouse, dataset: str) -> pa.Table:
    path = wh.index_dir(dataset) / LANDINGS_FILE
    if path.exists():
        return pq.read_table(path).cast(LANDINGS_SCHEMA)
    return _rebuild_landings(wh, dataset)


def _rebuild_landings(wh: Warehouse, dataset: str) -> pa.Table:
    """The event log from the partitions on disk: raw documents of every day with published chunks, and tombstones."""
    parts = [LANDINGS_SCHEMA.empty_table()]
    raw = wh.partitions(dataset, "raw")
    for day, path in sorted(wh.partitions(dataset, "chunks").items()):
        if day in raw:
            when = dt.datetime.fromtimestamp(path.stat().st_mtime, dt.UTC)
            parts.append(_events(landed_from_raw(pq.read_table(raw[day])), day, LANDED, when))
    for day, path in sorted(wh.partitions(dataset, "tombstones").items()):
        when = dt.datetime.fromtimestamp(path.stat().st_mtime, dt.UTC)
        parts.append(_events(pq.read_table(path), day, TOMBSTONE, when))
    return pa.concat_tables(parts)


# -- folding the log into the document index -------------------------------------------


def _fold(log: pa.Table, snapshot: bool) -> tuple[pa.Table, pa.Table]:
    """(documents table, unknown tombstone events) from the event log; vectorized, no SQL engine.

    Per record: the latest landing is current; it is deleted by the first tombstone
    dated after it or, in snapshot mode, by the first snapshot (a day with at least one
    landing) after it. A tombstone is unknown when no landing of its record precedes it.
    """
    is_landed = pc.equal(log.column("event"), LANDED)
    landed = log.filter(is_landed)
    tombs = log.filter(pc.invert(is_landed))
    n = landed.num_rows
    enc = pc.dictionary_encode(landed.column("record_id")).combine_chunks()
    codes = enc.indices.to_numpy(zero_copy_only=False)
    days = landed.column("partition_date").combine_chunks().cast(pa.int32()).to_numpy(zero_copy_only=False)
    order = np.lexsort((days, codes))  # by record, then day
    sorted_codes = codes[order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]]) if n else np.zeros(0, np.int64)
    ends = np.r_[starts[1:], n].astype(np.int64)
    last = landed.take(pa.array(order[ends - 1])) if n else landed
    sorted_days = days[order].astype(np.int64)
    latest = sorted_days[ends - 1] if n else sorted_days
    first = sorted_days[starts] if n else sorted_days

    never = np.iinfo(np.int64).max
    by_tomb = np.full(len(starts), never)
    unknown = np.zeros(tombs.num_rows, bool)
    if tombs.num_rows:
        where = pc.index_in(tombs.column("record_id"), value_set=enc.dictionary).to_pylist()
        rank = np.empty(len(starts), np.int64)  # dictionary code -> position in the fold
        rank[sorted_codes[starts]] = np.arange(len(starts))
        t_day = tombs.column("partition_date").cast(pa.int32()).to_numpy(zero_copy_only=False).astype(np.int64)
        for k, (w, d) in enumerate(zip(where, t_day.tolist())):
            if w is None or d <= first[rank[w]]:
                unknown[k] = True
            elif d > latest[rank[w]]:
                by_tomb[rank[w]] = min(by_tomb[rank[w]], d)
    by_snap = np.full(len(starts), never)
    if snapshot and n:
        snaps = np.unique(days).astype(np.int64)
        nxt = np.searchsorted(snaps, latest, side="right")
        has = nxt < len(snaps)
        by_snap[has] = snaps[nxt[has]]
    gone = np.minimum(by_tomb, by_snap)
    deleted = gone != never
    deleted_on = pa.array(np.where(deleted, gone, 0).astype(np.int32), pa.int32(), mask=~deleted).cast(pa.date32())
    deleted_by = pa.array(np.where(by_tomb <= by_snap, TOMBSTONE, BY_SNAPSHOT), pa.string(), mask=~deleted)
    offsets = pa.array(np.r_[starts, n].astype(np.int32))
    docs = pa.Table.from_pydict(
        {
            "doc_id": last.column("doc_id"),
            "record_id": last.column("record_id"),
            "partition_date": pa.array(latest.astype(np.int32), pa.int32()).cast(pa.date32()),
            "source_file": last.column("source_file"),
            "landed_on": pa.ListArray.from_arrays(offsets, pa.array(sorted_days.astype(np.int32)).cast(pa.date32())),
            "deleted_on": deleted_on,
            "deleted_by": deleted_by,
        },
        schema=DOCUMENTS_SCHEMA,
    )
    return docs, tombs.filter(pa.array(unknown)).sort_by([("partition_date", "ascending"), ("record_id", "ascending")])


def _refold(wh: Warehouse, dataset: str, log: pa.Table, snapshot: bool, now: dt.datetime) -> IndexChange:
    docs, unknown = _fold(log, snapshot)
    before = _deleted_docs(wh, dataset)
    write_parquet_atomic(docs, wh.documents_path(dataset), use_dictionary=False)
    gone = docs.filter(pc.is_valid(docs.column("deleted_on"))).select(["doc_id", "partition_date"])
    after = dict(zip(gone.column("doc_id").to_pylist(), gone.column("partition_date").to_pylist()))
    redirect_rows = _update_deleted_redirects(wh, dataset, after, now)
    _write_unknown_tombstones(wh, dataset, unknown)
    return IndexChange(
        documents=docs.num_rows - len(after),
        deleted=len(after),
        newly_deleted=tuple(sorted(set(after) - set(before))),
        restored=_still_there(docs, set(before) - set(after)),
        deleted_chunk_ids=redirect_rows,
        unknown_tombstones=unknown.num_rows,
    )


def _still_there(docs: pa.Table, doc_ids: set[str]) -> tuple[str, ...]:
    """The ``doc_ids`` the index still holds (a document whose only landing was undone is gone, not restored)."""
    ids = pa.array(sorted(doc_ids), pa.string())
    return tuple(ids.filter(pc.is_in(ids, value_set=docs.column("doc_id").combine_chunks())).to_pylist())


def _deleted_docs(wh: Warehouse, dataset: str) -> set[str]:
    path = wh.documents_path(dataset)
    if not path.exists():
        return set()
    docs = pq.read_table(path, columns=["doc_id", "deleted_on"])
    return set(docs.filter(pc.is_valid(docs.column("deleted_on"))).column("doc_id").to_pylist())


# -- derived files ---------------------------------------------------------------------


def _update_deleted_redirects(wh: Warehouse, dataset: str, deleted: dict[str, dt.date], now: dt.datetime) -> int:
    """``redirects/deleted.parquet``: every chunk id of each retracted document's current version.

    Rows of documents still deleted at the same version are kept as they are (with the
    time the id first disappeared); only newly deleted documents cost a read of their
    chunks file, filtered to those documents.
    """
    path = wh.table_dir(dataset, "redirects") / f"{DELETED_REDIRECTS}.parquet"
    stored = pq.read_table(path) if path.exists() else REDIRECT_SCHEMA.empty_table()
    keys = list(zip(stored.column("doc_id").to_pylist(), stored.column("partition_date").to_pylist()))
    keep = pa.array([deleted.get(doc) == day for doc, day in keys], pa.bool_())
    kept = stored.filter(keep) if stored.num_rows else stored
    have = set(kept.column("doc_id").to_pylist())
    missing: dict[dt.date, list[str]] = {}
    for doc, day in deleted.items():
        if doc not in have:
            missing.setdefault(day, []).append(doc)
    parts = [kept]
    chunk_files = wh.partitions(dataset, "chunks")
    for day, docs in sorted(missing.items()):
        if day not in chunk_files:
            continue
        rows = pq.read_table(
            chunk_files[day], columns=["doc_id", "chunk_id", "section_id", "chunking_version"],
            filters=[("doc_id", "in", docs)],
        )
        n = rows.num_rows
        parts.append(
            pa.Table.from_pydict(
                {
                    "dataset": pa.array([dataset] * n, pa.string()),
                    "partition_date": pa.array([day] * n, pa.date32()),
                    "doc_id": rows.column("doc_id"),
                    "old_chunk_id": rows.column("chunk_id"),
                    "old_section_id": rows.column("section_id"),
                    "old_chunking_version": rows.column("chunking_version"),
                    "new_chunk_id": pa.nulls(n, pa.string()),
                    "new_section_id": pa.nulls(n, pa.string()),
                    "new_chunking_version": rows.column("chunking_version"),
                    "match": pa.array([DELETED] * n, pa.string()),
                    "overlap": pa.nulls(n, pa.float64()),
                    "created_at": pa.array([now] * n, pa.timestamp("us", tz="UTC")),
                },
                schema=REDIRECT_SCHEMA,
            )
        )
    table = pa.concat_tables([p.cast(REDIRECT_SCHEMA) for p in parts])
    if table.num_rows == stored.num_rows and table.num_rows == kept.num_rows:
        return table.num_rows  # nothing changed: leave the file (or its absence) alone
    # once written, the file stays (empty if need be): it may be all the redirects view's glob matches
    write_parquet_atomic(table.sort_by([("doc_id", "ascending"), ("old_chunk_id", "ascending")]), path)
    return table.num_rows


def _write_unknown_tombstones(wh: Warehouse, dataset: str, unknown: pa.Table) -> None:
    path = wh.table_dir(dataset, "rejects") / f"{UNKNOWN_TOMBSTONES}.parquet"
    if unknown.num_rows == 0:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        return
    rows = [
        {
            "dataset": dataset,
            "partition_date": r["partition_date"],
            "stage": TOMBSTONE_STAGE,
            "source_file": r["source_file"] or "",
            "record_ref": r["record_id"],
            "reason": f"unknown record id {r['record_id']!r}: no document with this record id landed "
            f"before {r['partition_date'].isoformat()}, so there is nothing to delete",
            "excerpt": None,
            "rejected_at": r["recorded_at"],
        }
        for r in unknown.to_pylist()
    ]
    write_parquet_atomic(pa.Table.from_pylist(rows, schema=REJECT_SCHEMA), path)


# -- the uniqueness proof ----------------------------------------------------------------


@dataclass(frozen=True)
class UniqueIds:
    """Result of :func:`check_unique_chunk_ids` on the current chunks view."""

    rows: int
    duplicates: int  # chunk ids on more than one row
    examples: tuple[tuple[str, int, tuple[str, ...]], ...]  # (chunk_id, rows, doc_ids)

    @property
    def passed(self) -> bool:
        """No chunk id is on more than one row."""
        return self.duplicates == 0


def check_unique_chunk_ids(wh: Warehouse, dataset: str, examples: int = 10) -> UniqueIds:
    """Count duplicate ``chunk_id`` values among the rows ``codex.<dataset>_chunks`` serves.

    Runs the view's own semi-join (:func:`~codex_pipeline.warehouse.catalog_views.current_chunk_keys_sql`)
    on the ids alone, on an in-memory DuckDB, so the check never takes the catalog file's
    lock away from readers or concurrent runs. The view's one other join, the embedding
    model and version of each row, matches at most one row (an embeddings partition has
    one row per chunk), so it cannot add a duplicate; leaving it out makes the check
    read three narrow columns instead of the chunk and embedding hashes.
    """
    if not (wh.has_files(dataset, "chunks") and wh.documents_path(dataset).exists()):
        return UniqueIds(0, 0, ())
    con = duckdb.connect()
    try:
        con.execute(f"CREATE SCHEMA {SCHEMA}")
        con.execute(documents_view_sql(wh, dataset))
        keys = current_chunk_keys_sql(wh, dataset)
        rows, dups = con.execute(
            f"SELECT coalesce(sum(n), 0), count(*) FILTER (WHERE n > 1) "
            f"FROM (SELECT chunk_id, count(*) AS n FROM ({keys}) GROUP BY chunk_id)"
        ).fetchall()[0]
        found = []
        if dups:  # only then: which ids, in which documents
            found = con.execute(
                f"SELECT chunk_id, count(*) AS n, list(DISTINCT doc_id ORDER BY doc_id) FROM ({keys}) "
                f"GROUP BY chunk_id HAVING count(*) > 1 ORDER BY n DESC, chunk_id LIMIT {int(examples)}"
            ).fetchall()
    finally:
        con.close()
    return UniqueIds(int(rows), int(dups), tuple((c, int(n), tuple(d)) for c, n, d in found))
