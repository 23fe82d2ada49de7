"""``codex search QUERY``: hybrid search over the current corpus of every indexed dataset.

Prints, per hit, its score and ids on one ``key=value`` line (easy to grep and
parse), then its locator, the evidence (the exact character range of the
document's canonical text and its text) and a short context; ``--json`` prints the
hits as a JSON array (:meth:`~codex_pipeline.retrieval.Hit.as_dict`).

``Retriever`` keeps each index current: one whose warehouse files changed since it was
built is rebuilt before the search (or, while another process is writing it, the live
version answers and a warning says so), so a run that did not materialize
``[dataset, search_index]`` never leaves ``codex search`` behind (``--no-refresh``
searches the indexes as they are). ``--history`` is the one exception to
"index only": it ranks every stored version of one dataset by cosine with a scan of
the ``_history`` views (slow, for audits).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import duckdb

from codex_pipeline.cli.arg_types import day, positive_int
from codex_pipeline.cli.dataset_names import DatasetNames
from codex_pipeline.cli.errors import CliError, embedder_line, one_line
from codex_pipeline.cli.query_embedder import configured_embedder, query_embedder, quiet_retries, where
from codex_pipeline.cli.search_output import print_hits, print_proposition_hits, print_warnings, strict_exit
from codex_pipeline.embeddings import EmbeddingError
from codex_pipeline.retrieval import Filters, IndexMissing, IndexOutdated, Retriever, SearchMode
from codex_pipeline.warehouse.catalog import connect_catalog
from codex_pipeline.warehouse.catalog_views import HISTORY_SUFFIX, SCHEMA
from codex_pipeline.warehouse.queries import search_sql
from codex_pipeline.warehouse.storage import Warehouse

__all__ = ["add_search_command", "cmd_search", "configured_embedder"]


def add_search_command(sub: Any, names: DatasetNames) -> None:
    """Register ``codex search`` on the CLI's subparsers."""
    s = sub.add_parser(
        "search",
        help="hybrid (BM25 + vector) search over the current corpus, with evidence spans and context",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument("query", nargs="+", help="the query (several words need no quotes)")
    s.add_argument("--dataset", "-d", action="append", default=[], type=names.chunked_dataset, help="dataset(s) to search (default: every indexed one)")
    s.add_argument("-k", type=positive_int, default=5, help="hits to return (default 5)")
    s.add_argument("--mode", choices=[m.value for m in SearchMode], default=SearchMode.HYBRID.value)
    s.add_argument("--type", dest="types", action="append", default=[], help="only these chunk types (repeatable)")
    s.add_argument("--from", dest="date_from", default=None, type=day, help="current version landed on or after YYYY-MM-DD")
    s.add_argument("--to", dest="date_to", default=None, type=day, help="current version landed on or before YYYY-MM-DD")
    s.add_argument("--meta", action="append", default=[], metavar="KEY=VALUE", help="metadata equality (repeatable)")
    s.add_argument("--json", action="store_true", help="print the hits as JSON")
    s.add_argument("--units", choices=["chunks", "propositions"], default="chunks",
                   help="what to retrieve: chunks (default) or propositions (seed 002), each with its parent chunk")
    s.add_argument("--embedder", default=None, help="local (default, $CODEX_EMBEDDER) or openai")
    s.add_argument("--no-refresh", action="store_true", help="search the indexes as they are, even if the warehouse changed")
    s.add_argument("--strict", action="store_true", help="exit 1 when a dataset is left out (its search index missing or unreadable)")
    s.add_argument("--history", action="store_true",
                   help="rank every landed version of one --dataset by cosine (a scan of the history views, not the index)")
    s.set_defaults(func=cmd_search)


def cmd_search(args: argparse.Namespace) -> int:
    """``codex search`` (``--history``: every landed version of one dataset by cosine): exit 1 under
    ``--strict`` when a dataset was left out, 2 when a dataset asked for has no usable index."""
    t0 = time.perf_counter()
    wh = Warehouse(args.data_dir)
    args.query = _query(args)
    kind = configured_embedder(args.settings, args.embedder)
    embedder = None
    try:
        with quiet_retries():
            if args.history or args.mode != SearchMode.BM25.value:
                embedder = query_embedder(kind, args.settings)
            if args.history:
                return _history(wh, args, embedder)
            return _search(wh, args, kind, embedder, t0)
    except EmbeddingError as exc:  # raised where the query is embedded: say which server
        raise CliError(embedder_line(exc, where(embedder))) from None


#: What a Parquet read says when the file was replaced (published by rename) between reading its footer
#: and its pages: a concurrent run of the same day. Persistent damage says the same, so one retry tells them apart.
_REPLACED_WHILE_READ = ("TProtocolException", "deserialize thrift", "magic bytes", "Invalid data")


def _search(wh: Warehouse, args: argparse.Namespace, kind: str, embedder: Any, t0: float) -> int:
    """Search once, and once more if a file was replaced under the first attempt."""
    try:
        return _search_once(wh, args, kind, embedder, t0)
    except (OSError, duckdb.Error) as exc:
        if not any(marker in str(exc) for marker in _REPLACED_WHILE_READ):
            raise
    time.sleep(0.5)  # a damaged file fails again, and is then named by one_line
    return _search_once(wh, args, kind, embedder, time.perf_counter())


def _search_once(wh: Warehouse, args: argparse.Namespace, kind: str, embedder: Any, t0: float) -> int:
    filters = Filters.of(args.dataset, args.types, args.date_from, args.date_to, dict(_pair(m) for m in args.meta))
    try:
        retriever = Retriever(wh.root, args.dataset or None, embedder=embedder, embedder_kind=kind,
                              rebuild=not args.no_refresh)
        t1 = time.perf_counter()
        if getattr(args, "units", "chunks") == "propositions":
            props = retriever.search_propositions(args.query, k=args.k, mode=args.mode, filters=filters)
            print_warnings(props.warnings)
            print_proposition_hits(props, as_json=args.json)
            return strict_exit(props, getattr(args, "strict", False))
        hits = retriever.search(args.query, k=args.k, mode=args.mode, filters=filters)
    except (IndexMissing, IndexOutdated, ValueError) as exc:  # ArrowInvalid too: a damaged file, named by one_line
        print(f"codex search: {one_line(exc, wh) or exc}", file=sys.stderr)
        return 2
    t2 = time.perf_counter()
    print_warnings(hits.warnings)
    print_hits(hits, args.json, retriever.datasets)
    print(f"{len(hits)} hit(s) in {(t2 - t1) * 1000:.0f} ms (open + refresh {t1 - t0:.2f} s)", file=sys.stderr)
    return strict_exit(hits, getattr(args, "strict", False))


def _query(args: argparse.Namespace) -> str:
    """The query text; the old form ``codex search DATASET QUERY`` still works (the dataset becomes ``--dataset``)."""
    words = list(args.query)
    if len(words) > 1 and not args.dataset and words[0] in args.names.registry.names():
        args.dataset = [words.pop(0)]
        print(f"codex search: searching dataset {args.dataset[0]} (write --dataset {args.dataset[0]})", file=sys.stderr)
    return " ".join(words)


def _pair(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep:
        raise SystemExit(f"--meta wants KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(value)  # numbers and booleans compare as such
    except json.JSONDecodeError:
        return key, value


def _flat(text: str) -> str:
    return " ".join(text.split())


def _history(wh: Warehouse, args: argparse.Namespace, embedder: Any) -> int:
    """Every stored version of one dataset ranked by cosine (the pre-index scan, kept for audits)."""
    if len(args.dataset) != 1:
        raise SystemExit("--history searches one dataset: give exactly one --dataset")
    (dataset,) = args.dataset
    vector = embedder.embed([args.query]).vectors[0].tolist()
    con = connect_catalog(wh, read_only=True)
    try:
        has_history = con.execute(
            "SELECT count(*) FROM duckdb_views() WHERE schema_name = ? AND view_name = ?",
            [SCHEMA, f"{dataset}_embeddings{HISTORY_SUFFIX}"],
        ).fetchall()[0][0]
        sql = search_sql(dataset, bool(has_history))
        cur = con.execute(sql, [vector, embedder.model, embedder.version, args.k])
        cols = [d[0] for d in cur.description]
        rows = cur.fetchall()
    finally:
        con.close()
    for row in rows:
        print("  " + "  ".join(f"{c}={_flat(v) if isinstance(v, str) else v}" for c, v in zip(cols, row)))
    if not rows:
        print("  (no rows: are embeddings materialized with this model?)")
    return 0
