"""DuckDB errors as one line that names the problem and the fix.

A user running SQL over the catalog meets three kinds of failure: a view that does
not exist (a typo, or a dataset never materialized), a Parquet file that cannot be
read (damaged on disk: the next run of its day sets it aside and rebuilds it), and
plain SQL mistakes. DuckDB's own messages span many lines with a caret diagram;
these say what happened and what to run.
"""

from __future__ import annotations

import re

import duckdb

from codex_pipeline.warehouse.storage import SCHEMA, Warehouse

_MISSING = re.compile(r"Table with name (\w+) does not exist", re.IGNORECASE)
_FILE = re.compile(r"""['"]([^'"]+\.parquet)['"]""")
_DAY = re.compile(r"(\d{4}-\d{2}-\d{2})[^/]*\.parquet$")
_DAMAGE_WORDS = ("magic bytes", "corrupt", "invalid parquet", "thrift", "checksum", "truncated", "footer")


def catalog_views(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [
        f"{SCHEMA}.{r[0]}"
        for r in con.execute(
            "SELECT view_name FROM duckdb_views() WHERE schema_name = ? ORDER BY view_name", [SCHEMA]
        ).fetchall()
    ]


def explain(exc: duckdb.Error, wh: Warehouse, con: duckdb.DuckDBPyConnection | None = None) -> str:
    """One line for a DuckDB error raised by a query on the catalog."""
    text = str(exc)
    first = " ".join(text.split("\n", 1)[0].split())
    missing = _MISSING.search(text)
    if missing:
        known = catalog_views(con) if con is not None else []
        near = [v for v in known if missing.group(1).split("_", 1)[0] in v][:8] or known[:8]
        listing = f"; views: {', '.join(near)}{' …' if len(known) > len(near) else ''}" if known else ""
        return (
            f"no view {SCHEMA}.{missing.group(1)} in {wh.catalog_path}{listing} "
            f"(a dataset's views appear after its first `codex materialize YYYY-MM-DD`)"
        )
    path = _FILE.search(text)
    if path and any(w in text.lower() for w in _DAMAGE_WORDS):
        day = _DAY.search(path.group(1))
        fix = (
            f"run `codex materialize {day.group(1)}`: it sets the file aside (quarantine/) and rebuilds it"
            if day
            else "the next run of its dataset sets it aside (quarantine/) and rebuilds it"
        )
        why = " ".join(first.replace(f"'{path.group(1)}'", "").split()).rstrip(" :")
        return f"damaged Parquet file {path.group(1)} ({why}); {fix}"
    return first
