"""``codex query``: SQL on the catalog in a bounded, read-only session (docs/security.md#codex-query).

Every statement of the SQL is checked against the allow-list before any runs; each then runs
under the statement timeout, Ctrl-C stops the one running, and the results of all of them are
printed, in order.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import duckdb

from codex_pipeline.cli.arg_types import positive_int, seconds
from codex_pipeline.cli.errors import explain
from codex_pipeline.cli.tables import print_table
from codex_pipeline.warehouse.bounded_query import QueryResult, StatementStopped, run_bounded
from codex_pipeline.warehouse.catalog import CatalogBusy, CatalogError
from codex_pipeline.warehouse.catalog_sandbox import (
    QueryLimits,
    QueryRefused,
    check_statements,
    open_query_session,
    refusal,
)
from codex_pipeline.warehouse.storage import Warehouse

UNSAFE_FILES_FLAG = "--unsafe-allow-files"
QUERY_FIX = f"to read or write other files, rerun with {UNSAFE_FILES_FLAG}: see docs/security.md"
EMPTY = ('the query is empty (blank or only comments): give one or more SQL statements, '
         'e.g. codex query "SELECT count(*) FROM codex.docs_chunks"')
_DEFAULTS = QueryLimits()


def add_query_command(sub: Any) -> None:
    """Register ``codex query`` on the CLI's subparsers."""
    q = sub.add_parser("query", help="run SQL against the DuckDB catalog (read-only, reads only the warehouse)")
    q.add_argument("sql")
    q.add_argument(UNSAFE_FILES_FLAG, action="store_true",
                   help="a plain DuckDB session: read and write any file you can (COPY, read_csv, ATTACH, INSTALL)")
    q.add_argument("--timeout", type=seconds, default=_DEFAULTS.timeout, metavar="SECONDS",
                   help=f"stop a statement running longer (default {_DEFAULTS.timeout:g}; 0: no limit)")
    q.add_argument("--memory-limit", type=_size, default=_DEFAULTS.memory_limit, metavar="SIZE",
                   help=f"DuckDB's memory_limit for the session; beyond it, DuckDB spills or fails (default {_DEFAULTS.memory_limit})")
    q.add_argument("--threads", type=positive_int, default=_DEFAULTS.threads,
                   help="DuckDB's threads for the session (default: half the machine's cores)")
    q.set_defaults(func=cmd_query)


def cmd_query(args: argparse.Namespace) -> int:
    """Run SQL in a session that reads the catalog's views and nothing else (see docs/security.md)."""
    wh = Warehouse(args.data_dir)
    limits = QueryLimits(args.memory_limit, args.threads, args.timeout or None)
    try:
        con = open_query_session(wh, allow_files=args.unsafe_allow_files, limits=limits)
    except (CatalogBusy, CatalogError) as exc:
        return _fail(str(exc))
    try:
        statements = con.extract_statements(args.sql) if args.unsafe_allow_files else check_statements(
            con, args.sql, QUERY_FIX)
        if not statements:
            return _fail(EMPTY)
        for n, statement in enumerate(statements, 1):
            result = run_bounded(con, statement, limits.timeout)
            if len(statements) > 1:
                print(f"{'' if n == 1 else chr(10)}-- statement {n} of {len(statements)}: {' '.join(statement.query.split())[:80]}")
            print_result(result)
    except QueryRefused as exc:
        return _fail(str(exc))
    except StatementStopped as exc:
        return _fail(str(exc), 130 if exc.by_user else 2)
    except duckdb.Error as exc:
        return _fail(refusal(exc, wh, QUERY_FIX) or explain(exc, wh, con))
    finally:
        con.close()
    return 0


def print_result(result: QueryResult) -> None:
    """Print a statement's rows as an aligned table (blanks in text folded, so a row stays one line)."""
    if not result.columns:
        print("  (done: the statement returns no rows)")
        return
    print_table(result.columns, result.rows)


def _fail(line: str, status: int = 2) -> int:
    print(f"codex query: {line}", file=sys.stderr)
    return status


def _size(value: str) -> str:
    """A DuckDB memory size such as ``2GB`` or ``512MiB``."""
    try:
        QueryLimits(memory_limit=value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value
