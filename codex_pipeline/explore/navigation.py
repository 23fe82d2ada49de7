"""Navigate a chunk table the way a reader (or a parent-document retriever) does.

A :class:`ChunkCollection` holds the rows of one or more Codex chunk tables as
immutable :class:`Chunk` records, indexed once so every lookup afterwards is a dict
hit or a slice: chunks of a document in reading order, neighbours before/after a
chunk, its parent, children and ancestors, lookup by ``chunk_id`` and by
``content_hash`` (SHA-256 of ``chunk_text``), and :meth:`ChunkCollection.resolve` for an
id stored before its partition was re-chunked (it follows the redirect table).

**Re-landed documents.** A document may appear in several daily partitions (its
file was landed again on a later day). Chunk ids do not depend on the day, so mixing
partitions would duplicate ids and interleave two versions of one document. The
rule is therefore per document: *the latest partition holding the document wins*,
and all of that document's rows come from that one partition (a section dropped in
the newer version is gone, not carried over). Pass ``partition=`` to see the
collection as of one day instead: only rows of that partition are kept. The older
partitions a document was dropped from are listed in :attr:`ChunkCollection.superseded`.

**The current corpus.** :meth:`ChunkCollection.from_catalog` and
:meth:`ChunkCollection.from_warehouse` read a dataset's current corpus by default
(``codex.<dataset>_chunks``: each document's latest landing by partition date, documents
retracted by a tombstone or a full snapshot left out; see
:mod:`codex_pipeline.warehouse.current`), so a deleted document is not there and
:meth:`ChunkCollection.resolve` answers None for its ids. ``history=True`` applies the
latest-partition rule to every partition instead (deleted documents included), and
``partition=`` shows one day as it landed.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import gc
import glob as globlib
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import Any, NamedTuple, overload

import pyarrow as pa
import pyarrow.parquet as pq

from codex_pipeline.core.ids import content_hash as sha256_text

__all__ = ["Chunk", "ChunkCollection", "ChunkContext", "Neighbours", "preview"]

REQUIRED_COLUMNS = ("chunk_id", "doc_id", "chunk_text", "seq_index")
OPTIONAL_COLUMNS = (
    "section_id",
    "chunk_type",
    "token_count",
    "char_count",
    "parent_chunk_id",
    "evidence_anchor",
    "dataset",
    "partition_date",
    "locator",
    "content_hash",
    "metadata",
    "chunking_version",
    "embedding_model",
    "embedding_version",
)
_VIEW_NAME = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*){0,2}$")


def preview(text: str, max_chars: int | None) -> str:
    """Whitespace collapsed to single spaces, clipped to ``max_chars`` with a marker."""
    flat = " ".join(text.split())
    return clip(flat, max_chars)


def clip(text: str, max_chars: int | None) -> str:
    """``text`` cut at ``max_chars`` with ``… [+N chars]`` saying how much was left out."""
    if max_chars is None or len(text) <= max_chars:
        return text
    return f"{text[:max_chars].rstrip()} … [+{len(text) - max_chars} chars]"


class Chunk(NamedTuple):
    """One chunk row, immutable (a NamedTuple: cheap to build by the hundred thousand).

    Field names are the contract's column names; ``metadata`` and
    ``evidence_anchor`` stay the JSON text stored in the table (parsed on demand by
    :attr:`metadata_dict` and :attr:`anchor`).
    """

    chunk_id: str
    doc_id: str
    section_id: str
    chunk_text: str
    chunk_type: str
    token_count: int
    char_count: int
    seq_index: int
    parent_chunk_id: str | None = None
    evidence_anchor: str | None = None  # JSON text, as stored
    dataset: str | None = None
    partition_date: dt.date | None = None
    locator: str | None = None
    content_hash: str | None = None
    metadata: str | None = None  # JSON text, as stored
    chunking_version: str | None = None
    embedding_model: str | None = None
    embedding_version: str | None = None

    @property
    def text(self) -> str:
        """``chunk_text``."""
        return self.chunk_text

    @property
    def is_top_level(self) -> bool:
        """True for a chunk with no parent (a tree root or a flat chunk)."""
        return self.parent_chunk_id is None

    @property
    def anchor(self) -> dict[str, Any]:
        """The evidence anchor parsed: ``{page, char_span, spans?, xpath?, …}``."""
        return json.loads(self.evidence_anchor) if self.evidence_anchor else {}

    @property
    def char_span(self) -> tuple[int, int] | None:
        """``(start, end)`` in the document's canonical text, or None without an anchor.

        A composed chunk's range runs from the least start to the greatest end of its spans.
        """
        span = self.anchor.get("char_span")
        return (int(span[0]), int(span[1])) if span else None

    @property
    def metadata_dict(self) -> dict[str, Any]:
        """``metadata`` parsed; ``{}`` when it is null."""
        return json.loads(self.metadata) if self.metadata else {}

    def get_metadata(self, key: str, default: Any = None) -> Any:
        """One ``metadata`` value, or ``default`` when the key is absent."""
        return self.metadata_dict.get(key, default)

    def header(self) -> str:
        """One line naming the chunk: type, ids, position, size, day."""
        day = f" · {self.partition_date.isoformat()}" if self.partition_date else ""
        return (
            f"[{self.chunk_type}] {self.chunk_id} · {self.doc_id} #{self.seq_index} · "
            f"section {self.section_id} · {self.token_count} tokens{day}"
        )

    def chunk_str(self, max_chars: int | None = 200) -> str:
        """Header, parent and the (optionally truncated) text, for printing."""
        lines = [self.header()]
        if self.parent_chunk_id:
            lines.append(f"parent: {self.parent_chunk_id}")
        lines.append(clip(self.chunk_text, max_chars))
        return "\n".join(lines)


class Neighbours(NamedTuple):
    """Chunks just before and just after one chunk in its document, in reading order."""

    before: tuple[Chunk, ...]
    after: tuple[Chunk, ...]


@dataclass(frozen=True)
class ChunkContext:
    """A chunk with its surroundings: neighbours, parent and children."""

    chunk: Chunk
    before: tuple[Chunk, ...]
    after: tuple[Chunk, ...]
    parent: Chunk | None
    children: tuple[Chunk, ...]
    position: int  # 0-based place in its document's reading order
    document_size: int  # chunks in the document

    def render(self, preview_chars: int = 120, max_chars: int | None = None) -> str:
        """The chunk in full (or clipped at ``max_chars``) between previews of its context."""
        c = self.chunk

        def line(marker: str, other: Chunk) -> str:
            return (
                f"{marker} #{other.seq_index} [{other.chunk_type}] {other.section_id} "
                f"({other.token_count} tok) {other.chunk_id}: {preview(other.chunk_text, preview_chars)}"
            )

        out = [f"document {c.doc_id} · chunk {self.position + 1} of {self.document_size}"]
        out.append(line("parent  ", self.parent) if self.parent else "parent   (none: top-level chunk)")
        out += [line("  before", b) for b in self.before]
        out.append(f"> {c.header()}")
        out += ["  | " + t for t in clip(c.chunk_text, max_chars).split("\n")]
        out += [line("  after ", a) for a in self.after]
        out.append(f"children ({len(self.children)})")
        out += [line("  child ", ch) for ch in self.children]
        return "\n".join(out)

    def __str__(self) -> str:
        return self.render()


ChunkRef = Chunk | str


class ChunkCollection(Sequence[Chunk]):
    """Chunks indexed by document, id, content hash and parent; list-like in reading order.

    Iteration order: documents sorted by ``doc_id``, each in ``seq_index`` order.
    Build it with :meth:`from_table`, :meth:`from_parquet`, :meth:`from_duckdb`,
    :meth:`from_catalog` or :meth:`from_warehouse`; every constructor applies the
    dataset/partition selection described in the module docstring.
    """

    def __init__(
        self,
        chunks: Iterable[Chunk],
        *,
        dataset: str | None = None,
        partition: dt.date | str | None = None,
        superseded: Mapping[str, Sequence[dt.date]] | None = None,
        redirects: pa.Table | None = None,
    ) -> None:
        """Select (dataset, partition / latest per document), sort and index ``chunks``.

        ``superseded`` adds older partitions already dropped upstream (e.g. by SQL).
        ``redirects`` (rows of ``codex.<dataset>_redirects``) lets :meth:`resolve`
        follow ids that vanished when a partition was re-chunked.
        """
        with _no_gc():
            self._build(chunks, dataset, _as_date(partition), superseded)
        self._redirects = _redirect_map(redirects, dataset, _as_date(partition))

    def _build(
        self,
        chunks: Iterable[Chunk],
        dataset: str | None,
        day: dt.date | None,
        superseded: Mapping[str, Sequence[dt.date]] | None,
    ) -> None:
        rows = [  # a row without a dataset / partition_date value is not filtered on it
            c
            for c in chunks
            if (dataset is None or c.dataset in (None, dataset))
            and (day is None or c.partition_date in (None, day))
        ]
        latest: dict[str, dt.date | None] = {}
        seen_days: dict[str, set[dt.date]] = {}
        for c in rows:
            d = c.partition_date
            if d is not None:
                seen_days.setdefault(c.doc_id, set()).add(d)
                cur = latest.get(c.doc_id)
                if cur is None or d > cur:
                    latest[c.doc_id] = d
        rows = [c for c in rows if c.partition_date == latest.get(c.doc_id, c.partition_date)]
        rows.sort(key=attrgetter("doc_id", "seq_index"))

        old: dict[str, set[dt.date]] = {
            doc: days - {latest[doc]} for doc, days in seen_days.items() if len(days) > 1
        }
        for doc, days in (superseded or {}).items():
            old.setdefault(doc, set()).update(days)
        self._superseded = {doc: tuple(sorted(days)) for doc, days in sorted(old.items()) if days}

        self._chunks: tuple[Chunk, ...] = tuple(rows)
        self._by_id: dict[str, int] = {}
        self._doc_range: dict[str, tuple[int, int]] = {}
        self._children: dict[str, list[int]] = {}
        self._by_hash: dict[str, list[int]] = {}
        for i, c in enumerate(self._chunks):
            if c.chunk_id in self._by_id:
                other = self._chunks[self._by_id[c.chunk_id]]
                raise ValueError(
                    f"duplicate chunk_id {c.chunk_id} ({other.doc_id} {other.section_id} and "
                    f"{c.doc_id} {c.section_id}); a chunk table has one row per chunk and partition"
                )
            self._by_id[c.chunk_id] = i
            start, _ = self._doc_range.get(c.doc_id, (i, i))
            self._doc_range[c.doc_id] = (start, i + 1)
            if c.parent_chunk_id is not None:
                self._children.setdefault(c.parent_chunk_id, []).append(i)
            self._by_hash.setdefault(c.content_hash or sha256_text(c.chunk_text), []).append(i)
        self._documents = tuple(self._doc_range)  # sorted: rows are sorted by doc_id

    # -- constructors -------------------------------------------------------

    @classmethod
    def from_table(
        cls,
        table: pa.Table,
        *,
        dataset: str | None = None,
        partition: dt.date | str | None = None,
        redirects: pa.Table | None = None,
    ) -> ChunkCollection:
        """From an Arrow table with (at least) the contract's id, text and order columns."""
        return cls(_chunks_from_table(table), dataset=dataset, partition=partition, redirects=redirects)

    @classmethod
    def from_parquet(
        cls,
        paths: str | Path | Iterable[str | Path],
        *,
        dataset: str | None = None,
        partition: dt.date | str | None = None,
        redirects: pa.Table | None = None,
    ) -> ChunkCollection:
        """From Parquet file(s): paths, a directory (its ``*.parquet``) or a glob pattern."""
        files = _expand_paths(paths)
        if not files:
            raise FileNotFoundError(f"no Parquet files match {paths!s}")
        tables = []
        for f in files:
            schema = pq.read_schema(f)
            cols = [n for n in (*REQUIRED_COLUMNS, *OPTIONAL_COLUMNS) if n in schema.names]
            tables.append(pq.read_table(f, columns=cols).replace_schema_metadata(None))
        table = pa.concat_tables(tables, promote_options="permissive")
        return cls.from_table(table, dataset=dataset, partition=partition, redirects=redirects)

    @classmethod
    def from_duckdb(
        cls,
        con: Any,
        view: str,
        *,
        dataset: str | None = None,
        partition: dt.date | str | None = None,
        doc_ids: Iterable[str] | None = None,
        redirects: pa.Table | None = None,
        latest: bool = True,
        superseded: Mapping[str, Sequence[dt.date]] | None = None,
    ) -> ChunkCollection:
        """From a DuckDB table or view (e.g. ``codex.docs_chunks``) on an open connection.

        Filters and the latest-partition rule run in SQL, so only the rows kept are
        read; ``doc_ids`` restricts the collection to those documents. ``latest=False``
        skips the rule for a view that already holds one version per document (a
        current view); ``superseded`` then says which older days it left out.
        """
        if not _VIEW_NAME.match(view):
            raise ValueError(f"not a table or view name: {view!r}")
        present = [d[0] for d in con.execute(f"SELECT * FROM {view} LIMIT 0").description]
        missing = [c for c in REQUIRED_COLUMNS if c not in present]
        if missing:
            raise ValueError(f"{view} is not a chunk table: no column(s) {', '.join(missing)}")
        cols = [c for c in (*REQUIRED_COLUMNS, *OPTIONAL_COLUMNS) if c in present]
        where: list[str] = []
        params: list[object] = []
        if dataset is not None and "dataset" in present:
            where.append("dataset = ?")
            params.append(dataset)
        day = _as_date(partition)
        if day is not None and "partition_date" in present:
            where.append("partition_date = ?")
            params.append(day)
        if doc_ids is not None:
            where.append("list_contains(?, doc_id)")
            params.append(sorted(set(doc_ids)))
        cond = (" WHERE " + " AND ".join(where)) if where else ""
        older: dict[str, list[dt.date]] = {d: list(days) for d, days in (superseded or {}).items()}
        rule = ""
        if latest and day is None and "partition_date" in present:
            rule = " QUALIFY partition_date = max(partition_date) OVER (PARTITION BY doc_id)"
            for doc, days in con.execute(
                f"SELECT doc_id, list(DISTINCT partition_date ORDER BY partition_date) FROM {view}{cond} "
                "GROUP BY doc_id HAVING count(DISTINCT partition_date) > 1",
                params,
            ).fetchall():
                older[doc] = list(days[:-1])
        table = con.sql(f"SELECT {', '.join(cols)} FROM {view}{cond}{rule}", params=params).to_arrow_table()
        return cls(_chunks_from_table(table), dataset=dataset, partition=day, superseded=older, redirects=redirects)

    @classmethod
    def from_catalog(
        cls,
        warehouse: Any,
        dataset: str,
        *,
        partition: dt.date | str | None = None,
        history: bool = False,
        doc_ids: Iterable[str] | None = None,
    ) -> ChunkCollection:
        """From a data dir's DuckDB catalog, read-only: the current corpus of ``dataset``.

        ``partition=`` reads that day of ``codex.<dataset>_chunks_history`` as it landed;
        ``history=True`` the latest partition of every document ever landed, deleted
        ones included. ``codex.<dataset>_redirects`` feeds :meth:`resolve`.
        """
        from codex_pipeline.warehouse.catalog import connect_catalog

        con = connect_catalog(_warehouse(warehouse), read_only=True)
        try:
            return cls.from_connection(con, dataset, partition=partition, history=history, doc_ids=doc_ids)
        finally:
            con.close()

    @classmethod
    def from_connection(
        cls,
        con: Any,
        dataset: str,
        *,
        partition: dt.date | str | None = None,
        history: bool = False,
        doc_ids: Iterable[str] | None = None,
    ) -> ChunkCollection:
        """:meth:`from_catalog` on a connection already open on the catalog."""
        from codex_pipeline.warehouse.catalog_views import HISTORY_SUFFIX, SCHEMA

        if not _VIEW_NAME.match(f"{SCHEMA}.{dataset}_chunks"):
            raise ValueError(f"not a dataset name: {dataset!r}")
        views = {
            n for (n,) in con.execute(
                "SELECT view_name FROM duckdb_views() WHERE schema_name = ? AND starts_with(view_name, ?)",
                [SCHEMA, dataset + "_"],
            ).fetchall()
        }
        redirects = None
        if f"{dataset}_redirects" in views:
            redirects = con.sql(f"SELECT {', '.join(_REDIRECT_COLUMNS)} FROM {SCHEMA}.{dataset}_redirects").to_arrow_table()
        current = f"{SCHEMA}.{dataset}_chunks"
        if f"{dataset}_chunks{HISTORY_SUFFIX}" not in views:  # no document index (yet): one view over every day
            return cls.from_duckdb(con, current, dataset=dataset, partition=partition, doc_ids=doc_ids, redirects=redirects)
        if partition is not None or history:
            return cls.from_duckdb(
                con, current + HISTORY_SUFFIX, dataset=dataset, partition=partition, doc_ids=doc_ids, redirects=redirects
            )
        superseded = {}
        if f"{dataset}_documents" in views:
            where, params = "deleted_on IS NULL AND len(landed_on) > 1", []
            if doc_ids is not None:
                where += " AND list_contains(?, doc_id)"
                params.append(sorted(set(doc_ids)))
            superseded = {
                doc: [d for d in days if d != day]
                for doc, day, days in con.execute(
                    f"SELECT doc_id, partition_date, landed_on FROM {SCHEMA}.{dataset}_documents WHERE {where}", params
                ).fetchall()
            }
        return cls.from_duckdb(
            con, current, dataset=dataset, doc_ids=doc_ids, redirects=redirects, latest=False, superseded=superseded
        )

    @classmethod
    def from_warehouse(
        cls, warehouse: Any, dataset: str, *, partition: dt.date | str | None = None, history: bool = False
    ) -> ChunkCollection:
        """Straight from a data dir's Parquet partitions (no DuckDB), e.g. inside an asset.

        The current corpus when the dataset has a document index; ``partition=`` and
        ``history=True`` as in :meth:`from_catalog`.
        """
        wh = _warehouse(warehouse)
        day = _as_date(partition)
        index = wh.documents_path(dataset)
        folder = wh.table_dir(dataset, "redirects")
        files = sorted(folder.glob("*.parquet")) if folder.is_dir() else []
        redirects = (
            pa.concat_tables([pq.read_table(f, columns=list(_REDIRECT_COLUMNS)) for f in files]) if files else None
        )
        if day is not None or history or not index.exists():
            src = wh.partition_path(dataset, "chunks", day) if day else wh.glob(dataset, "chunks")
            return cls.from_parquet(src, dataset=dataset, partition=day, redirects=redirects)
        docs = pq.read_table(index, columns=["doc_id", "partition_date", "landed_on", "deleted_on"]).to_pylist()
        live: dict[dt.date, list[str]] = {}
        superseded: dict[str, list[dt.date]] = {}
        for d in docs:
            if d["deleted_on"] is None:
                live.setdefault(d["partition_date"], []).append(d["doc_id"])
                if len(d["landed_on"]) > 1:
                    superseded[d["doc_id"]] = [x for x in d["landed_on"] if x != d["partition_date"]]
        files_by_day = wh.partitions(dataset, "chunks")
        tables = []
        for when, ids in sorted(live.items()):
            if when in files_by_day:
                schema = pq.read_schema(files_by_day[when])
                cols = [n for n in (*REQUIRED_COLUMNS, *OPTIONAL_COLUMNS) if n in schema.names]
                tables.append(
                    pq.read_table(files_by_day[when], columns=cols, filters=[("doc_id", "in", ids)]).replace_schema_metadata(None)
                )
        table = pa.concat_tables(tables, promote_options="permissive") if tables else None
        chunks = _chunks_from_table(table) if table is not None else []
        return cls(chunks, dataset=dataset, superseded=superseded, redirects=redirects)

    # -- list-like ----------------------------------------------------------

    def __len__(self) -> int:
        return len(self._chunks)

    def __iter__(self) -> Iterator[Chunk]:
        return iter(self._chunks)

    @overload
    def __getitem__(self, key: int) -> Chunk: ...
    @overload
    def __getitem__(self, key: slice) -> tuple[Chunk, ...]: ...
    @overload
    def __getitem__(self, key: str) -> Chunk: ...
    def __getitem__(self, key: int | slice | str) -> Chunk | tuple[Chunk, ...]:
        """By position (int or slice) or by ``chunk_id`` (str)."""
        if isinstance(key, str):
            return self._chunks[self._index(key)]
        return self._chunks[key]

    def __contains__(self, item: object) -> bool:
        if isinstance(item, Chunk):
            i = self._by_id.get(item.chunk_id)
            return i is not None and self._chunks[i] == item
        return isinstance(item, str) and item in self._by_id

    def __repr__(self) -> str:
        return f"ChunkCollection({len(self._chunks)} chunks, {len(self._documents)} documents)"

    def index(self, chunk: ChunkRef, start: int = 0, stop: int | None = None) -> int:
        """Position of a chunk (or chunk id) in the collection."""
        i = self._index(chunk)
        if i < start or (stop is not None and i >= stop):
            raise ValueError(f"{_cid(chunk)} is not in positions [{start}, {stop})")
        return i

    # -- what is in it ------------------------------------------------------

    @property
    def documents(self) -> tuple[str, ...]:
        """The top-level documents: every ``doc_id``, sorted."""
        return self._documents

    @property
    def datasets(self) -> tuple[str, ...]:
        """The datasets the rows come from, sorted."""
        return tuple(sorted({c.dataset for c in self._chunks if c.dataset is not None}))

    @property
    def partitions(self) -> tuple[dt.date, ...]:
        """Days the kept rows come from."""
        return tuple(sorted({c.partition_date for c in self._chunks if c.partition_date is not None}))

    @property
    def superseded(self) -> Mapping[str, tuple[dt.date, ...]]:
        """Documents also present in older partitions, and those (dropped) days."""
        return self._superseded

    def top_level_chunks(self, doc_id: str | None = None) -> tuple[Chunk, ...]:
        """Chunks without a parent (tree roots and flat chunks), of one document or all."""
        pool = self.document_chunks(doc_id) if doc_id is not None else self._chunks
        return tuple(c for c in pool if c.parent_chunk_id is None)

    def document_chunks(self, doc_id: str) -> tuple[Chunk, ...]:
        """Every chunk of one document, in reading order (``seq_index``)."""
        start, end = self._doc_slice(doc_id)
        return self._chunks[start:end]

    # -- lookup -------------------------------------------------------------

    def get(self, chunk_id: str, default: Chunk | None = None) -> Chunk | None:
        """The chunk with this id, or ``default``."""
        i = self._by_id.get(chunk_id)
        return default if i is None else self._chunks[i]

    def by_hash(self, content_hash: str) -> tuple[Chunk, ...]:
        """Every chunk whose text has this SHA-256 (identical text may recur), in order."""
        return tuple(self._chunks[i] for i in self._by_hash.get(content_hash, ()))

    def get_by_hash(self, content_hash: str) -> Chunk | None:
        """The first chunk with this text hash, or None."""
        hits = self._by_hash.get(content_hash)
        return self._chunks[hits[0]] if hits else None

    def resolve(self, chunk_id: str) -> Chunk | None:
        """The chunk an id stands for now: itself, or where the redirect table sends it.

        A stored id (an eval set, a citation) vanishes when its section is renamed or
        re-cut; see :mod:`codex_pipeline.redirects`. Returns None when the redirect
        table says the id was removed, and raises KeyError for an id it never saw.
        """
        cid, seen = chunk_id, set()
        while cid not in self._by_id:
            if cid in seen:
                raise KeyError(f"the redirects of chunk {chunk_id} loop back to {cid}")
            if cid not in self._redirects:
                via = "" if cid == chunk_id else f" (reached from {chunk_id} through the redirect table)"
                raise KeyError(f"chunk {cid}{via} is neither in this collection nor in its redirect table")
            seen.add(cid)
            target = self._redirects[cid]
            if target is None:
                return None
            cid = target
        return self._chunks[self._by_id[cid]]

    # -- reading order ------------------------------------------------------

    def position(self, chunk: ChunkRef) -> int:
        """0-based place of a chunk in its document's reading order."""
        i = self._index(chunk)
        return i - self._doc_range[self._chunks[i].doc_id][0]

    def neighbours(self, chunk: ChunkRef, before: int = 1, after: int = 1) -> Neighbours:
        """Up to ``before`` chunks just before and ``after`` just after, same document only."""
        if before < 0 or after < 0:
            raise ValueError("before and after must be >= 0")
        i = self._index(chunk)
        start, end = self._doc_range[self._chunks[i].doc_id]
        return Neighbours(self._chunks[max(start, i - before) : i], self._chunks[i + 1 : min(end, i + 1 + after)])

    def context(self, chunk: ChunkRef, before: int = 1, after: int = 1) -> ChunkContext:
        """The chunk with its neighbours, its parent and its children."""
        i = self._index(chunk)
        c = self._chunks[i]
        start, end = self._doc_range[c.doc_id]
        nb = self.neighbours(c, before, after)
        return ChunkContext(c, nb.before, nb.after, self.parent(c), self.children(c), i - start, end - start)

    # -- tree ---------------------------------------------------------------

    def parent(self, chunk: ChunkRef) -> Chunk | None:
        """The parent chunk, or None for a top-level chunk (or a parent not in the collection)."""
        pid = self._chunks[self._index(chunk)].parent_chunk_id
        return self.get(pid) if pid is not None else None

    def children(self, chunk: ChunkRef) -> tuple[Chunk, ...]:
        """Direct children, in reading order."""
        return tuple(self._chunks[i] for i in self._children.get(_cid(chunk), ()))

    def ancestors(self, chunk: ChunkRef) -> tuple[Chunk, ...]:
        """Parent, grandparent, … up to the root (nearest first); stops on a cycle."""
        out: list[Chunk] = []
        seen = {_cid(chunk)}
        p = self.parent(chunk)
        while p is not None and p.chunk_id not in seen:
            out.append(p)
            seen.add(p.chunk_id)
            p = self.parent(p)
        return tuple(out)

    def descendants(self, chunk: ChunkRef) -> tuple[Chunk, ...]:
        """Children, grandchildren, … depth-first in reading order."""
        out: list[Chunk] = []
        seen = {_cid(chunk)}
        stack = list(reversed(self._children.get(_cid(chunk), ())))
        while stack:
            c = self._chunks[stack.pop()]
            if c.chunk_id in seen:
                continue
            seen.add(c.chunk_id)
            out.append(c)
            stack.extend(reversed(self._children.get(c.chunk_id, ())))
        return tuple(out)

    # -- helpers ------------------------------------------------------------

    def _index(self, chunk: ChunkRef) -> int:
        cid = _cid(chunk)
        i = self._by_id.get(cid)
        if i is None:
            raise KeyError(f"chunk {cid} is not in this collection ({len(self._chunks)} chunks)")
        return i

    def _doc_slice(self, doc_id: str) -> tuple[int, int]:
        try:
            return self._doc_range[doc_id]
        except KeyError:
            raise KeyError(f"document {doc_id} is not in this collection ({len(self._documents)} documents)") from None


_REDIRECT_COLUMNS = ("old_chunk_id", "new_chunk_id", "dataset", "partition_date")


def _redirect_map(table: pa.Table | None, dataset: str | None, day: dt.date | None) -> dict[str, str | None]:
    """old id → newest id (None: removed); of several partitions' rows, the latest day's wins."""
    if table is None or table.num_rows == 0:
        return {}
    rows = table.select(list(_REDIRECT_COLUMNS)).to_pylist()
    rows = [r for r in rows if (dataset is None or r["dataset"] == dataset) and (day is None or r["partition_date"] == day)]
    rows.sort(key=lambda r: r["partition_date"])
    return {r["old_chunk_id"]: r["new_chunk_id"] for r in rows}


def _warehouse(warehouse: Any) -> Any:
    from codex_pipeline.warehouse.storage import Warehouse

    return warehouse if isinstance(warehouse, Warehouse) else Warehouse(warehouse)


def _cid(chunk: ChunkRef) -> str:
    return chunk.chunk_id if isinstance(chunk, Chunk) else chunk


def _as_date(value: dt.date | str | None) -> dt.date | None:
    if value is None or (isinstance(value, dt.date) and not isinstance(value, dt.datetime)):
        return value
    if isinstance(value, dt.datetime):
        return value.date()
    return dt.date.fromisoformat(value)


def _expand_paths(paths: str | Path | Iterable[str | Path]) -> list[Path]:
    items = [paths] if isinstance(paths, (str, Path)) else list(paths)
    out: list[Path] = []
    for item in items:
        p = Path(item)
        if p.is_dir():
            out.extend(sorted(p.glob("*.parquet")))
        elif any(ch in str(item) for ch in "*?["):
            out.extend(Path(m) for m in sorted(globlib.glob(str(item))))
        elif p.exists():
            out.append(p)
        else:
            raise FileNotFoundError(f"{p} does not exist")
    return out


_LOW_CARDINALITY = {"chunk_type", "dataset", "partition_date", "chunking_version", "embedding_model", "embedding_version"}


def _chunks_from_table(table: pa.Table) -> list[Chunk]:
    """Rows to :class:`Chunk` records, column by column in field order (no per-row dicts)."""
    names = set(table.column_names)
    missing = [c for c in REQUIRED_COLUMNS if c not in names]
    if missing:
        raise ValueError(f"not a chunk table: no column(s) {', '.join(missing)}")
    n = table.num_rows
    cols: dict[str, list[Any]] = {}
    for name in Chunk._fields:
        if name not in names:
            continue
        column = table.column(name)
        if name in _LOW_CARDINALITY and n:  # convert each distinct value once (dates are slow)
            encoded = column.dictionary_encode(null_encoding="encode").combine_chunks()
            values = encoded.dictionary.to_pylist()
            cols[name] = [values[i] for i in encoded.indices.to_numpy(zero_copy_only=False).tolist()]
        else:
            cols[name] = column.to_pylist()
    text = cols["chunk_text"]
    cols.setdefault("section_id", [""] * n)
    cols.setdefault("chunk_type", [""] * n)
    cols.setdefault("token_count", [0] * n)
    if "char_count" not in cols:
        cols["char_count"] = [len(t) for t in text]
    if "content_hash" not in cols:
        cols["content_hash"] = [sha256_text(t) for t in text]
    none = [None] * n
    make = Chunk._make
    with _no_gc():
        return [make(row) for row in zip(*(cols.get(f, none) for f in Chunk._fields))]


@contextlib.contextmanager
def _no_gc() -> Iterator[None]:
    """Pause the cyclic GC while building many small acyclic objects.

    Each collection would rescan the ever-growing list of records: with it paused,
    building 200k records is several times faster, and nothing here forms cycles.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
