"""Errors as one line that names the input and the fix: the CLI prints nothing else.

:func:`one_line` translates what any command can meet (a locked catalog, a damaged
Parquet file, an unreachable embedder, a full disk) and :class:`OneLineParser` keeps
argparse's own mistakes to one line; ``cli.app.main`` applies both to every command.

A user running SQL over the catalog meets three kinds of failure: a view that does
not exist (a typo, or a dataset never materialized), a Parquet file that cannot be
read (damaged on disk: the next run of its day sets it aside and rebuilds it), and
plain SQL mistakes. DuckDB's own messages span many lines with a caret diagram;
these say what happened and what to run.
"""

from __future__ import annotations

import argparse
import errno
import re
from pathlib import Path
from typing import NoReturn

import duckdb
import pyarrow as pa

from codex_pipeline.embeddings.base import EmbeddingError, EmbeddingFailed
from codex_pipeline.sources.mapping.schema import MappingError
from codex_pipeline.warehouse.catalog import CatalogBusy, CatalogError
from codex_pipeline.warehouse.catalog_views import SCHEMA
from codex_pipeline.warehouse.storage import Warehouse

_MISSING = re.compile(r"Table with name (\w+) does not exist", re.IGNORECASE)
_FILE = re.compile(r"""['"]([^'"]+\.parquet)['"]""")
_DAY = re.compile(r"(\d{4}-\d{2}-\d{2})[^/]*\.parquet$")
_DAMAGE_WORDS = ("magic bytes", "corrupt", "invalid parquet", "thrift", "checksum", "truncated", "footer")


def catalog_views(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The names of the catalog's views, schema-qualified and sorted."""
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
        fix = _fix(path.group(1))
        why = " ".join(first.replace(f"'{path.group(1)}'", "").split()).rstrip(" :")
        return f"damaged Parquet file {path.group(1)} ({why}); {fix}"
    return first


# -- every command: known failures as one line -------------------------------------------

_LOCK_HOLDER = re.compile(r"Conflicting lock is held in (\S+) \(PID (\d+)\)")
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


class CliError(Exception):
    """A failure the user can fix; the message is the one line printed (the input and the fix)."""


class OneLineParser(argparse.ArgumentParser):
    """argparse without the usage block on a mistake: one line, the mistake and where to look."""

    def error(self, message: str) -> NoReturn:
        """Exit 2 with ``message`` on one line and a pointer to ``--help`` (no usage block)."""
        self.exit(2, f"{self.prog}: error: {_flat(message)} (see `{self.prog} --help`)\n")


def _flat(text: object) -> str:
    return " ".join(str(text).split())


def _process(pid: str) -> str:
    """``pid`` and its command line, as far as this host can tell."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return f"PID {pid}"
    words = _flat(" ".join(Path(a.decode(errors="replace")).name if i == 0 else a.decode(errors="replace")
                           for i, a in enumerate(argv) if a))
    return f"PID {pid} ({words[:80]}{'…' if len(words) > 80 else ''})"


def busy_line(exc: CatalogBusy, wh: Warehouse) -> str:
    """Who holds the catalog and what to do about it."""
    holder = _LOCK_HOLDER.search(str(exc))
    who = _process(holder.group(2)) if holder else "another process"
    return (f"the catalog {wh.catalog_path} stayed locked by {who} for the whole wait; retry when it has finished, "
            f"or close that session if it is a `duckdb` shell or notebook holding the file read-write")


def embedder_line(exc: EmbeddingError, url: str | None) -> str:
    """An embedder failure: which model, where, and the way around it."""
    if isinstance(exc, EmbeddingFailed):
        where = f" at {url}" if url else ""
        return (f"the query embedder{where} cannot be reached ({exc.kind}; {exc.attempts} attempt(s)): start it or "
                "point OPENAI_BASE_URL at one that answers, or search with --mode bm25 (no embedder)")
    return f"{_flat(exc)}; or search with --mode bm25 (no embedder)"


def storage_line(exc: OSError, what: str) -> str:
    """A write that failed for lack of space (or another OS error) on ``what``."""
    where = exc.filename or what
    if exc.errno in _NO_SPACE:
        return f"no space left writing {where} ({exc.strerror}): free space on that disk and run the command again"
    return f"cannot use {where}: {exc.strerror or _flat(exc)}"


def one_line(exc: BaseException, wh: Warehouse) -> str | None:
    """The one line for a failure any command can meet, or None when it is not one of them."""
    if isinstance(exc, (CliError, MappingError)):  # a mapping's mistake is the user's: file, line, key, fix
        return _flat(exc)
    if isinstance(exc, CatalogBusy):
        return busy_line(exc, wh)
    if isinstance(exc, duckdb.Error):
        return explain(exc, wh)
    if isinstance(exc, CatalogError):
        return _flat(exc)
    if isinstance(exc, EmbeddingError):
        return embedder_line(exc, None)
    if isinstance(exc, pa.ArrowException) and (path := _FILE.search(str(exc))):
        why = _flat(str(exc).replace(f"'{path.group(1)}'", "")).split(". ", 1)[0][:160]
        return f"damaged Parquet file {path.group(1)} ({why}); {_fix(path.group(1))}"
    if isinstance(exc, OSError):
        return storage_line(exc, str(wh.root))
    return None


def _fix(path: str) -> str:
    day = _DAY.search(path)
    if day:
        return f"run `codex materialize {day.group(1)}`: it sets the file aside (quarantine/) and rebuilds it"
    return "the next run of its dataset sets it aside (quarantine/) and rebuilds it"
