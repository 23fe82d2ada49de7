"""Chunks and documents read from the catalog in a sandboxed, read-only DuckDB session.

Each lookup opens :func:`~codex_pipeline.warehouse.catalog_sandbox.open_query_session` (the
catalog attached read-only, no file outside ``warehouse/`` readable, settings locked) and
closes it: a session held open would keep the pipeline from rewriting the catalog. Ids come
from the URL, so they are validated here and only ever bound as SQL parameters; dataset
names must be plain identifiers and views the catalog actually has.

A stored chunk id that vanished (its section renamed or re-cut) is followed through
``codex.<dataset>_redirects`` to the chunk that holds its text now, and the answer says
so; an id whose document was retracted, or whose text no chunk holds any more, is gone
(HTTP 410), one the catalog never saw is not found (404).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import duckdb

from codex_pipeline.core.ids import CHUNK_ID_PATTERN
from codex_pipeline.explore.navigation import Chunk, ChunkCollection
from codex_pipeline.serve.damage import damaged_datasets, from_error
from codex_pipeline.warehouse.catalog_sandbox import open_query_session
from codex_pipeline.warehouse.catalog_views import HISTORY_SUFFIX, IDENTIFIER, SCHEMA
from codex_pipeline.warehouse.storage import Warehouse

CHUNK_ID = re.compile(CHUNK_ID_PATTERN)
MAX_DOC_ID_CHARS = 1024
MAX_REDIRECT_HOPS = 16


class LookupFailed(LookupError):
    """A chunk or document the catalog does not serve: ``status`` 400 (bad id), 404 (never seen), 410 (gone) or 503
    (its dataset has a damaged Parquet file)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def check_chunk_id(chunk_id: str) -> str:
    """``chunk_id`` unchanged; :class:`LookupFailed` (400) when it is not shaped like a chunk id."""
    if not CHUNK_ID.match(chunk_id):
        raise LookupFailed(400, f"chunk id {chunk_id[:80]!r} is not a chunk id: they look like urn:aprs:chunk:<16 hex>")
    return chunk_id


def check_doc_id(doc_id: str) -> str:
    """``doc_id`` unchanged; :class:`LookupFailed` (400) when empty, too long or holding control characters."""
    if not doc_id or len(doc_id) > MAX_DOC_ID_CHARS or any(ord(c) < 32 for c in doc_id):
        raise LookupFailed(400, f"document id {doc_id[:80]!r} is not a document id: they look like "
                                f"urn:aprs:<dataset>:<record id>, at most {MAX_DOC_ID_CHARS} printable characters")
    return doc_id


@dataclass(frozen=True)
class Redirect:
    """One hop of ``codex.<dataset>_redirects``: ``old`` now lives at ``new``."""

    old: str
    new: str
    match: str
    partition_date: dt.date
    chunking_version: str


@dataclass(frozen=True)
class Located:
    """A chunk of the current corpus, its document loaded, and the redirects followed to reach it."""

    dataset: str
    chunk: Chunk
    collection: ChunkCollection
    redirects: tuple[Redirect, ...] = ()


@dataclass(frozen=True)
class Document:
    """A document: its current (or last) version's text and chunks, every day it landed, its retraction."""

    dataset: str
    doc_id: str
    partition_date: dt.date
    title: str | None
    canonical_text: str
    landed_on: tuple[dt.date, ...]
    deleted_on: dt.date | None
    deleted_by: str | None
    chunks: tuple[Chunk, ...] = field(default_factory=tuple)
    source_file: str = ""
    pages: dict[int, tuple[float, float]] = field(default_factory=dict)  # PDF page number -> (width, height) in points


Locate = Callable[[str, list[str]], "tuple[str, str] | None"]
"""``(chunk_id, datasets) -> (dataset, doc_id)`` from a faster source than a scan of the chunk views (the open
search indexes: a binary search), or None to scan."""


class Catalog:
    """Read-only lookups on one data directory's catalog; ``locate`` finds a chunk's document without a scan."""

    def __init__(self, warehouse: Warehouse, locate: Locate | None = None) -> None:
        self.warehouse = warehouse
        self.locate = locate

    @contextmanager
    def session(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A sandboxed read-only session on the catalog, closed on exit: an open one keeps the pipeline from
        rewriting the catalog, so hold it no longer than a lookup."""
        con = open_query_session(self.warehouse)
        try:
            yield con
        except duckdb.Error as exc:  # a truncated partition: 503 for its dataset, naming the file and the fix
            line = from_error(self.warehouse, exc)
            if line is None:
                raise
            raise LookupFailed(503, line) from None
        finally:
            con.close()

    def damaged(self) -> dict[str, str]:
        """Dataset -> one line, for every chunk dataset with a damaged Parquet file (``/ready``)."""
        try:
            with self.session() as con:
                names = _chunk_datasets(con)
        except (duckdb.Error, OSError, RuntimeError):
            return {}
        return damaged_datasets(self.warehouse, names)

    def readable(self) -> tuple[bool, str]:
        """Whether the catalog opens and lists its views (``/ready``), and how many chunk views it has."""
        try:
            with self.session() as con:
                return True, f"{len(_chunk_datasets(con))} chunk view(s)"
        except (duckdb.Error, OSError, RuntimeError) as exc:
            return False, " ".join(str(exc).split())[:300]

    # -- chunks ---------------------------------------------------------------------------

    def chunk(self, chunk_id: str, dataset: str | None = None) -> Located:
        """The chunk ``chunk_id`` stands for now, following redirects."""
        check_chunk_id(chunk_id)
        with self.session() as con:
            names = _datasets(con, dataset)
            hops: list[Redirect] = []
            cid = chunk_id
            while True:
                found = self.locate(cid, names) if self.locate else None
                col = ChunkCollection.from_connection(con, found[0], doc_ids=[found[1]]) if found else None
                if col is None or cid not in col:  # not indexed (yet), or no longer current: ask the catalog
                    found = _find_chunk(con, names, cid)
                    col = None
                if found is not None:
                    ds, doc = found
                    col = col or ChunkCollection.from_connection(con, ds, doc_ids=[doc])
                    chunk = col.get(cid)
                    if chunk is not None:
                        return Located(ds, chunk, col, tuple(hops))
                hop = _redirect(con, names, cid)
                if hop is None:
                    via = f" (reached from {chunk_id} through the redirect table)" if hops else ""
                    raise LookupFailed(404, f"no chunk {cid}{via} in the current corpus of "
                                            f"{', '.join(names) or 'any dataset'}, nor in its redirect table")
                ds, row = hop
                if row["match"] == "deleted":
                    raise LookupFailed(410, f"chunk {cid} is gone: its document {row['doc_id']} was retracted; its last "
                                            f"version landed on {row['partition_date'].isoformat()}")
                if row["new_chunk_id"] is None:
                    raise LookupFailed(410, f"chunk {cid} was removed when {ds} {row['partition_date'].isoformat()} was "
                                            f"re-chunked (chunking_version {row['new_chunking_version']}); no chunk "
                                            "holds its text now")
                if len(hops) >= MAX_REDIRECT_HOPS or row["new_chunk_id"] in {h.old for h in hops} | {cid}:
                    raise LookupFailed(404, f"the redirects of chunk {chunk_id} loop back to {row['new_chunk_id']}")
                hops.append(Redirect(cid, row["new_chunk_id"], row["match"], row["partition_date"],
                                     row["new_chunking_version"]))
                names, cid = [ds], row["new_chunk_id"]

    # -- documents ------------------------------------------------------------------------

    def document(self, doc_id: str, dataset: str | None = None) -> Document:
        """The current version of ``doc_id`` (the last one landed, if it was retracted) with its chunks."""
        check_doc_id(doc_id)
        with self.session() as con:
            for ds in _datasets(con, dataset):
                doc = _document(con, ds, doc_id)
                if doc is not None:
                    return doc
        raise LookupFailed(404, f"no document {doc_id[:200]!r} in "
                                f"{'dataset ' + dataset if dataset else 'any dataset of the catalog'}")


def _views(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {n for (n,) in con.execute("SELECT view_name FROM duckdb_views() WHERE schema_name = ?", [SCHEMA]).fetchall()}


def _chunk_datasets(con: duckdb.DuckDBPyConnection) -> list[str]:
    views = _views(con)
    return sorted(v[: -len("_chunks")] for v in views if v.endswith("_chunks") and IDENTIFIER.fullmatch(v))


def _datasets(con: duckdb.DuckDBPyConnection, dataset: str | None) -> list[str]:
    have = _chunk_datasets(con)
    if dataset is None:
        return have
    if dataset not in have:
        raise LookupFailed(404, f"dataset {dataset[:80]!r} has no chunk table in the catalog; "
                                f"it has: {', '.join(have) or 'none (materialize a day first)'}")
    return [dataset]


def _find_chunk(con: duckdb.DuckDBPyConnection, names: list[str], chunk_id: str) -> tuple[str, str] | None:
    for ds in names:
        row = con.execute(f"SELECT doc_id FROM {SCHEMA}.{ds}_chunks WHERE chunk_id = ? LIMIT 1", [chunk_id]).fetchone()
        if row is not None:
            return ds, str(row[0])
    return None


def _redirect(con: duckdb.DuckDBPyConnection, names: list[str], chunk_id: str) -> tuple[str, dict[str, Any]] | None:
    views = _views(con)
    for ds in names:
        if f"{ds}_redirects" not in views:
            continue
        cur = con.execute(
            f"SELECT doc_id, new_chunk_id, match, partition_date, new_chunking_version FROM {SCHEMA}.{ds}_redirects "
            "WHERE old_chunk_id = ? ORDER BY partition_date DESC, match = 'deleted' DESC LIMIT 1", [chunk_id])
        row = cur.fetchone()
        if row is not None:
            return ds, dict(zip([d[0] for d in cur.description], row))
    return None


def _document(con: duckdb.DuckDBPyConnection, ds: str, doc_id: str) -> Document | None:
    views = _views(con)
    landed: tuple[dt.date, ...] = ()
    deleted_on = deleted_by = None
    day = None
    if f"{ds}_documents" in views:
        row = con.execute(f"SELECT partition_date, landed_on, deleted_on, deleted_by FROM {SCHEMA}.{ds}_documents "
                          "WHERE doc_id = ?", [doc_id]).fetchone()
        if row is None:
            return None
        day, landed, deleted_on, deleted_by = row[0], tuple(row[1] or ()), row[2], row[3]
    raw = f"{SCHEMA}.{ds}_raw{HISTORY_SUFFIX}" if f"{ds}_raw{HISTORY_SUFFIX}" in views else f"{SCHEMA}.{ds}_raw"
    if f"{ds}_raw" not in views:
        return None
    where, params = ("doc_id = ? AND partition_date = ?", [doc_id, day]) if day else ("doc_id = ?", [doc_id])
    text_row = con.execute(f"SELECT partition_date, title, canonical_text, source_file, blocks FROM {raw} WHERE {where} "
                           "ORDER BY partition_date DESC LIMIT 1", params).fetchone()
    if text_row is None:
        return None
    if not landed:
        landed = tuple(d for (d,) in con.execute(f"SELECT DISTINCT partition_date FROM {raw} WHERE doc_id = ? "
                                                  "ORDER BY 1", [doc_id]).fetchall())
    col = ChunkCollection.from_connection(con, ds, doc_ids=[doc_id], history=deleted_on is not None)
    chunks = col.document_chunks(doc_id) if doc_id in col.documents else ()
    return Document(ds, doc_id, text_row[0], text_row[1], str(text_row[2]), landed, deleted_on, deleted_by, chunks,
                    str(text_row[3] or ""), _page_sizes(text_row[4]))


def _page_sizes(blocks: str | None) -> dict[int, tuple[float, float]]:
    """PDF page number -> (width, height) in points, from the raw row's ``page`` blocks (none for other files)."""
    if not blocks or '"page"' not in blocks:
        return {}
    try:
        rows = json.loads(blocks)
    except json.JSONDecodeError:
        return {}
    out = {}
    for kind, _start, _end, key, meta in (r for r in rows if isinstance(r, list) and len(r) == 5):
        if kind == "page" and str(key).isdigit() and isinstance(meta, dict):
            out[int(key)] = (float(meta.get("width") or 0), float(meta.get("height") or 0))
    return out


def anchor_page(chunk: Chunk) -> int | None:
    """The page number of a chunk's evidence anchor (PDF pages; None elsewhere)."""
    try:
        page = json.loads(chunk.evidence_anchor or "{}").get("page")
    except json.JSONDecodeError:
        return None
    return int(page) if isinstance(page, int) else None

