"""`codex inspect …`: look at chunk tables from the DuckDB catalog, read-only.

Registered on the `codex` parser by :func:`add_inspect_commands`; every command
opens ``<data dir>/codex_catalog.duckdb`` read-only (it never blocks the pipeline's
writers) and reads the current corpus (``codex.<dataset>_chunks``: each document's
latest landing, retracted documents left out) unless ``--date`` picks a day as it
landed or ``--history`` takes the latest partition of every document ever landed. A
chunk id that vanished when its partition was re-chunked, or whose document was
retracted, is followed through ``codex.<dataset>_redirects``.

    codex inspect summary    --dataset NAME [--date D | --history]
    codex inspect chunk      CHUNK_ID [--dataset NAME] [--date D | --history] [--max-chars N]
    codex inspect neighbours CHUNK_ID [--before N] [--after N] [--dataset NAME] [--date D | --history]
    codex inspect sample     --dataset NAME [--doc DOC_ID] [--n N] [--seed S] [--date D | --history]
    codex inspect histogram  --dataset NAME --out FILE.png [--date D | --history]
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import duckdb

from codex_pipeline.cli.errors import busy_line, explain
from codex_pipeline.explore.inspector import ChunkInspector, token_histogram_png
from codex_pipeline.explore.navigation import ChunkCollection
from codex_pipeline.warehouse.catalog import CatalogBusy, connect_catalog
from codex_pipeline.warehouse.catalog_views import HISTORY_SUFFIX, SCHEMA
from codex_pipeline.warehouse.storage import Warehouse

if TYPE_CHECKING:
    from codex_pipeline.datasets.registry import DatasetRegistry

__all__ = ["InspectError", "add_inspect_commands"]

_DATASET = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
MATERIALIZE_HINT = "run `codex materialize YYYY-MM-DD` for a landed day (or `codex demo` for the sample data)"


class InspectError(Exception):
    """A problem the user can fix; the message says how."""


def add_inspect_commands(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``inspect`` and its subcommands on the `codex` subparsers action."""
    p = subparsers.add_parser(
        "inspect",
        help="look at chunk tables: summary, one chunk, its neighbours, a sample document, a token histogram",
        description="Look at the chunk tables in the DuckDB catalog (opened read-only): the current corpus (each "
        "document's latest landing, retracted documents left out) unless --date picks a day or --history reads "
        "every partition.",
    )
    sub = p.add_subparsers(dest="inspect_command", required=True, metavar="{summary,chunk,neighbours,sample,histogram}")

    s = sub.add_parser("summary", help="documents, chunks by type, token/char size distributions, over-cap chunks")
    _dataset_args(s, required=True)
    s.set_defaults(func=cmd_summary)

    c = sub.add_parser("chunk", help="one chunk in full: ids, type, section, tokens, anchor, parent, text")
    c.add_argument("chunk_id", help="a chunk id (urn:aprs:chunk:…) or a content hash (sha256 of the text)")
    _dataset_args(c, required=False)
    c.add_argument("--max-chars", type=int, default=None, help="clip the text (default: print it all)")
    c.set_defaults(func=cmd_chunk)

    n = sub.add_parser("neighbours", aliases=["neighbors"], help="a chunk between its neighbours, with its parent and children")
    n.add_argument("chunk_id", help="a chunk id (urn:aprs:chunk:…) or a content hash")
    n.add_argument("--before", type=_non_negative, default=2, help="chunks before (default 2)")
    n.add_argument("--after", type=_non_negative, default=2, help="chunks after (default 2)")
    n.add_argument("--preview-chars", type=int, default=120, help="characters shown per neighbour (default 120)")
    _dataset_args(n, required=False)
    n.set_defaults(func=cmd_neighbours)

    m = sub.add_parser("sample", help="chunks of one random (or given) document, reproducible with --seed")
    _dataset_args(m, required=True)
    m.add_argument("--doc", default=None, help="document id (default: a random document)")
    m.add_argument("--n", type=int, default=5, help="chunks to show (default 5)")
    m.add_argument("--seed", type=int, default=None, help="random seed, for the same sample every time")
    m.add_argument("--max-chars", type=int, default=300, help="characters shown per chunk (default 300)")
    m.set_defaults(func=cmd_sample)

    h = sub.add_parser("histogram", help="write a PNG histogram of token sizes by chunk type (1,500 cap marked)")
    _dataset_args(h, required=True)
    h.add_argument("--out", required=True, type=Path, help="PNG file to write")
    h.set_defaults(func=cmd_histogram)
    return p


def _dataset_args(p: argparse.ArgumentParser, required: bool) -> None:
    p.add_argument("--dataset", required=required, default=None, help="dataset name, e.g. civic_intelligence")
    when = p.add_mutually_exclusive_group()
    when.add_argument("--date", type=_date, default=None,
                      help="partition day YYYY-MM-DD, as it landed (default: the current corpus)")
    when.add_argument("--history", action="store_true",
                      help="the latest partition of every document ever landed, retracted ones included")


def _date(value: str) -> dt.date:
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a day: {value!r} (expected YYYY-MM-DD)") from None


def _non_negative(value: str) -> int:
    n = int(value)
    if n < 0:
        raise argparse.ArgumentTypeError("must be >= 0")
    return n


# -- commands ---------------------------------------------------------------------


def _run(args: argparse.Namespace, body) -> int:
    try:
        wh = Warehouse(args.data_dir)
        con = _open_catalog(wh)
        try:
            text = body(con, wh)
        except duckdb.Error as exc:
            raise InspectError(explain(exc, wh, con)) from None
        except _NoView as exc:
            raise _no_view(exc, wh, args.names.registry) from None
        finally:
            con.close()
    except InspectError as exc:
        print(f"codex inspect: {exc}", file=sys.stderr)
        return 2
    print(text)
    return 0


def cmd_summary(args: argparse.Namespace) -> int:
    def body(con, wh):
        return str(ChunkInspector(_load_dataset(con, wh, args.dataset, args.date, args.history)).summary())

    return _run(args, body)


def cmd_chunk(args: argparse.Namespace) -> int:
    def body(con, wh):
        col, chunk, note = _locate(con, wh, args.chunk_id, args.dataset, args.date, args.history)
        return ChunkInspector(col).read_chunk(chunk.chunk_id, max_chars=args.max_chars) + note

    return _run(args, body)


def cmd_neighbours(args: argparse.Namespace) -> int:
    def body(con, wh):
        col, chunk, note = _locate(con, wh, args.chunk_id, args.dataset, args.date, args.history)
        return col.context(chunk, args.before, args.after).render(preview_chars=args.preview_chars) + note

    return _run(args, body)


def cmd_sample(args: argparse.Namespace) -> int:
    def body(con, wh):
        if args.n < 1:
            raise InspectError("--n must be at least 1")
        col = _load_dataset(con, wh, args.dataset, args.date, args.history)
        if args.doc is not None and args.doc not in col.documents:
            some = ", ".join(col.documents[:5]) + (", …" if len(col.documents) > 5 else "")
            raise InspectError(
                f"no document {args.doc!r} in codex.{args.dataset}_chunks{_on(args.date)}; "
                f"{len(col.documents)} document(s), e.g. {some}"
            )
        return ChunkInspector(col).sample_document(args.doc, n=args.n, seed=args.seed, max_chars=args.max_chars)

    return _run(args, body)


def cmd_histogram(args: argparse.Namespace) -> int:
    def body(con, wh):
        col = _load_dataset(con, wh, args.dataset, args.date, args.history)
        try:
            png = token_histogram_png(col, title=f"{args.dataset}{_on(args.date)}")
        except ImportError as exc:  # the [plot] extra is not installed: say how to get it
            raise InspectError(str(exc)) from None
        out: Path = args.out
        if out.parent and not out.parent.exists():
            raise InspectError(f"folder {out.parent} does not exist")
        out.write_bytes(png)
        return (
            f"wrote {out} ({len(png):,} bytes): token sizes of {len(col):,} chunks "
            f"in {len(col.documents):,} documents of {args.dataset}{_on(args.date)}"
        )

    return _run(args, body)


# -- catalog access ---------------------------------------------------------------


def _on(day: dt.date | None) -> str:
    return f" on {day.isoformat()}" if day else ""


def _open_catalog(wh: Warehouse):
    if not wh.catalog_path.exists():  # don't create an empty catalog just to say it is empty
        raise InspectError(f"no DuckDB catalog at {wh.catalog_path}: nothing was materialized in {wh.root} yet; {MATERIALIZE_HINT}")
    try:
        return connect_catalog(wh, read_only=True)
    except CatalogBusy as exc:
        raise InspectError(busy_line(exc, wh)) from None


def _chunk_views(con) -> dict[str, str]:
    """``{dataset: "codex.<dataset>_chunks"}`` for every chunk view in the catalog."""
    names = con.execute(
        "SELECT view_name FROM duckdb_views() WHERE schema_name = ? AND view_name LIKE '%\\_chunks' ESCAPE '\\' "
        "ORDER BY view_name",
        [SCHEMA],
    ).fetchall()
    return {n.removesuffix("_chunks"): f"{SCHEMA}.{n}" for (n,) in names}


class _NoView(Exception):
    """No chunks view for ``dataset``: :func:`_run` says why, from the command's registry."""

    def __init__(self, dataset: str, have: list[str]) -> None:
        super().__init__(dataset)
        self.dataset, self.have = dataset, have


def _view_for(con, wh: Warehouse, dataset: str) -> str:
    views = _chunk_views(con)
    if _DATASET.match(dataset) and dataset in views:
        return views[dataset]
    raise _NoView(dataset, list(views))


def _no_view(exc: _NoView, wh: Warehouse, registry: DatasetRegistry) -> InspectError:
    dataset, have = exc.dataset, ", ".join(exc.have) or "none yet"
    if dataset not in registry.names():
        return InspectError(
            f"unknown dataset {dataset!r}; datasets with chunks in this catalog: {have} "
            f"(registered: {', '.join(registry.names())})"
        )
    if not registry.get(dataset).chunked:
        return InspectError(
            f"dataset {dataset!r} is not chunked (raw export only, no codex.{dataset}_chunks); "
            f"its records are in codex.{dataset}_raw: codex query \"SELECT * FROM codex.{dataset}_raw LIMIT 5\""
        )
    return InspectError(
        f"no chunks for dataset {dataset!r} yet (no view codex.{dataset}_chunks in {wh.catalog_path}); "
        f"land files in {wh.root / 'landing' / dataset}/YYYY-MM-DD/ and {MATERIALIZE_HINT}"
    )


def _history_view(con, view: str) -> str:
    """``codex.<dataset>_chunks_history`` beside a current view (the view itself in a catalog without one)."""
    name = view.split(".", 1)[1] + HISTORY_SUFFIX
    found = con.execute(
        "SELECT count(*) FROM duckdb_views() WHERE schema_name = ? AND view_name = ?", [SCHEMA, name]
    ).fetchall()[0][0]
    return f"{SCHEMA}.{name}" if found else view


def _collection(con, dataset: str, **kwargs: Any) -> ChunkCollection:
    try:
        return ChunkCollection.from_connection(con, dataset, **kwargs)
    except ValueError as exc:  # e.g. duplicate chunk ids: a table that breaks the contract
        raise InspectError(f"cannot read codex.{dataset}_chunks: {exc}") from None


def _load_dataset(con, wh: Warehouse, dataset: str, day: dt.date | None, history: bool = False) -> ChunkCollection:
    view = _view_for(con, wh, dataset)
    col = _collection(con, dataset, partition=day, history=history)
    if len(col):
        return col
    days = [d for (d,) in con.execute(f"SELECT DISTINCT partition_date FROM {_history_view(con, view)} ORDER BY 1").fetchall()]
    if day is not None and days:
        raise InspectError(
            f"no chunks in {view} for {day.isoformat()}; partitions with chunks: "
            + ", ".join(d.isoformat() for d in days)
        )
    if days and not history:
        raise InspectError(f"{view} is empty: every document of {dataset} was retracted; pass --history to see them")
    raise InspectError(f"{view} has no chunks yet; {MATERIALIZE_HINT}")


class _Redirect(NamedTuple):
    dataset: str
    doc_id: str
    new_chunk_id: str | None
    match: str
    day: dt.date
    version: str


def _redirect(con, views: dict[str, str], chunk_id: str) -> _Redirect | None:
    """Where ``codex.<dataset>_redirects`` sends a vanished id (the newest row wins)."""
    have = {n for (n,) in con.execute("SELECT view_name FROM duckdb_views() WHERE schema_name = ?", [SCHEMA]).fetchall()}
    for ds in views:
        if f"{ds}_redirects" not in have:
            continue
        row = con.execute(
            f"SELECT doc_id, new_chunk_id, match, partition_date, new_chunking_version FROM {SCHEMA}.{ds}_redirects "
            "WHERE old_chunk_id = ? ORDER BY partition_date DESC, match = 'deleted' DESC LIMIT 1",
            [chunk_id],
        ).fetchone()
        if row is not None:
            return _Redirect(ds, *row)
    return None


def _retraction(con, dataset: str, doc_id: str) -> str:
    """``on <day> by a tombstone`` for a retracted document, from ``codex.<dataset>_documents``."""
    try:
        row = con.execute(
            f"SELECT deleted_on, deleted_by FROM {SCHEMA}.{dataset}_documents WHERE doc_id = ?", [doc_id]
        ).fetchone()
    except duckdb.Error:  # an older catalog without the view: say less
        row = None
    if row is None or row[0] is None:
        return ""
    how = "a tombstone (_deleted.txt / _deleted.jsonl)" if row[1] == "tombstone" else "its absence from a newer full snapshot"
    return f" on {row[0].isoformat()} by {how}"


def _find(con, views: dict[str, str], column: str, key: str) -> list[tuple[str, str, list[dt.date]]]:
    """(dataset, doc_id, days) of every document whose rows in ``views`` have ``column = key``."""
    union = " UNION ALL ".join(
        f"SELECT '{ds}' AS dataset, doc_id, partition_date FROM {v} WHERE {column} = $key" for ds, v in views.items()
    )
    return con.execute(
        f"SELECT dataset, doc_id, list(DISTINCT partition_date ORDER BY partition_date) FROM ({union}) "
        "GROUP BY dataset, doc_id ORDER BY dataset, doc_id",
        {"key": key},
    ).fetchall()


def _locate(
    con,
    wh: Warehouse,
    key: str,
    dataset: str | None,
    day: dt.date | None,
    history: bool = False,
    followed: tuple[str, ...] = (),
) -> tuple[ChunkCollection, Any, str]:
    """Find a chunk by id or content hash across the chunk views; load its document.

    The current views unless a day or the history is asked for; an id they lack is
    looked up in the redirects (renamed, re-cut or retracted) and then in the history
    (a section the document's current version no longer has). ``followed``: the ids
    already redirected from, so stale redirect rows cannot loop.
    """
    views = {dataset: _view_for(con, wh, dataset)} if dataset else _chunk_views(con)
    if not views:
        raise InspectError(f"the catalog has no chunk tables yet; {MATERIALIZE_HINT}")
    column = "content_hash" if _SHA256.match(key) else "chunk_id"
    current = day is None and not history
    history_views = {ds: _history_view(con, v) for ds, v in views.items()}
    hits = _find(con, views if current else history_views, column, key)
    if not hits and column == "chunk_id":
        moved = _redirect(con, views, key)
        if moved is not None and moved.match == "deleted" and current:
            raise InspectError(
                f"{key} was deleted from codex.{moved.dataset}_chunks: its document {moved.doc_id} was retracted"
                f"{_retraction(con, moved.dataset, moved.doc_id)}; its last version landed on {moved.day.isoformat()} "
                f"(pass --date {moved.day.isoformat()}, or land the document again to bring it back)"
            )
        if moved is not None and moved.match != "deleted":  # a stored id whose section was renamed or re-cut
            if moved.new_chunk_id is None:
                raise InspectError(
                    f"{key} was removed from codex.{moved.dataset}_chunks when {moved.day.isoformat()} was re-chunked "
                    f"(chunking_version {moved.version}); no chunk holds its text now (see codex.{moved.dataset}_redirects)"
                )
            if moved.new_chunk_id in followed or moved.new_chunk_id == key:
                raise InspectError(f"the redirects of {followed[0] if followed else key} loop back to {moved.new_chunk_id}")
            col, chunk, note = _locate(con, wh, moved.new_chunk_id, moved.dataset, day, history, (*followed, key))
            return col, chunk, note + (
                f"\n\n({key} now redirects here: match={moved.match}, chunking_version {moved.version})"
            )
    if not hits and current:
        old = _find(con, history_views, column, key)
        if old:
            ds, doc, days = old[0]
            now = _current_day(con, ds, doc)
            where = f"its current version (landed {now.isoformat()})" if now else "its current version"
            raise InspectError(
                f"{key} is in {doc} only on " + ", ".join(d.isoformat() for d in days)
                + f"; {where} no longer has it: pass --date {days[-1].isoformat()}"
            )
    if not hits:
        where = f"codex.{dataset}_chunks" if dataset else "any chunk view (" + ", ".join(views) + ")"
        hint = "" if key.startswith("urn:aprs:chunk:") or column == "content_hash" else (
            "; chunk ids look like urn:aprs:chunk:<16 hex>, content hashes are 64 hex"
        )
        raise InspectError(f"no chunk {key!r} in {where}{hint}")
    ds, doc, days = hits[0]
    if day is not None and day not in days:
        raise InspectError(
            f"{key} is in {doc} on " + ", ".join(d.isoformat() for d in days) + f", not on {day.isoformat()}"
        )
    col = _collection(con, ds, partition=day, history=history, doc_ids=[doc])
    chunk = col.get(key) if column == "chunk_id" else col.get_by_hash(key)
    if chunk is None:  # --history: the document's latest partition no longer has it
        latest = col.partitions[-1].isoformat() if col.partitions else "?"
        raise InspectError(
            f"{key} is in {doc} only on " + ", ".join(d.isoformat() for d in days)
            + f"; its latest partition {latest} no longer has it: pass --date {days[-1].isoformat()}"
        )
    note = ""
    if len(hits) > 1:
        note = f"\n\n(the same text is also in {len(hits) - 1} other document(s): " + ", ".join(
            h[1] for h in hits[1:6]
        ) + (", …" if len(hits) > 6 else "") + ")"
    return col, chunk, note


def _current_day(con, dataset: str, doc_id: str) -> dt.date | None:
    try:
        row = con.execute(
            f"SELECT partition_date FROM {SCHEMA}.{dataset}_documents WHERE doc_id = ? AND deleted_on IS NULL", [doc_id]
        ).fetchone()
    except duckdb.Error:  # an older catalog without the view
        return None
    return row[0] if row else None
