"""A query session on the catalog that reads the warehouse's files and nothing else: what ``codex query`` runs SQL in.

Two locks, because DuckDB has one switch for files and it does not tell reading from
writing:

- **DuckDB's own settings** (``enable_external_access = false`` with the data
  directory's ``warehouse/`` as the only ``allowed_directories``, extension autoload
  and autoinstall off, then ``lock_configuration = true`` so no ``SET`` gives any of it
  back): no file outside ``warehouse/`` is read or written (``read_csv('/etc/passwd')``,
  ``COPY … TO '/tmp/x'``, ``EXPORT DATABASE``, ``ATTACH``, ``INSTALL``/``LOAD``).
- **Read-only statements** (:func:`check_statements`): an allowed directory is
  writable too, so ``COPY (…) TO '<a published partition>'`` would pass the settings;
  only statements on an allow-list (``SELECT`` and its forms, ``EXPLAIN`` of one,
  ``CALL``, and the PRAGMAs that read, by name: DuckDB reports ``IMPORT DATABASE``
  as a PRAGMA too) run. The catalog itself is attached read-only.

Every session, sandboxed or not, is bounded (:class:`QueryLimits`): DuckDB's
``memory_limit`` and ``threads`` are set before the lock, so one query cannot take the
machine's memory and every core.

With ``allow_files`` (``codex query --unsafe-allow-files``) the session is a plain
DuckDB session on the read-only catalog, with the rights of the user running it
(extensions still load only when a statement says ``INSTALL``/``LOAD``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import duckdb

from codex_pipeline.warehouse.catalog import connect_catalog
from codex_pipeline.warehouse.catalog_views import sql_literal
from codex_pipeline.warehouse.step_settings import SIZE

if TYPE_CHECKING:
    from codex_pipeline.warehouse.storage import Warehouse

READ_ONLY_STATEMENTS = frozenset({duckdb.StatementType.SELECT, duckdb.StatementType.CALL})
"""Statement types that read: SELECT (also DESCRIBE, SUMMARIZE, SHOW, FROM-first, VALUES, PIVOT … IN (…)), CALL;
PRAGMA only by name (:data:`READ_PRAGMAS`); EXPLAIN only of a SELECT.

Not MULTI: a ``PIVOT`` without an ``IN`` list parses as several statements, and so
does any statement around it (``COPY (PIVOT …) TO …``), which the type would hide."""

READ_PRAGMAS = frozenset({
    "version", "platform", "user_agent", "table_info", "show", "show_tables", "show_tables_expanded",
    "show_databases", "database_list", "database_size", "storage_info", "metadata_info", "functions", "collations",
})
"""The PRAGMAs that only report. DuckDB types other statements as PRAGMA too (``IMPORT DATABASE``
runs a ``schema.sql`` it reads), so a PRAGMA runs only when its text is ``PRAGMA <one of these>``."""

_GAP = r"(?:\s|--[^\n]*(?:\n|$)|/\*.*?\*/)*"  # blanks and comments
_EXPLAIN = re.compile(rf"^{_GAP}explain\b(?:{_GAP}analyze\b|{_GAP}\([^)]*\))?", re.IGNORECASE | re.DOTALL)
_PRAGMA = re.compile(rf"^{_GAP}pragma{_GAP}(\w+)", re.IGNORECASE | re.DOTALL)
_FIRST_WORDS = re.compile(rf"^{_GAP}(\w+(?:\s+\w+)?)", re.DOTALL)


@dataclass(frozen=True)
class QueryLimits:
    """What one query session may use: DuckDB's memory and threads, and each statement's time.

    DuckDB's own defaults are 80% of RAM and every core: a single ``codex query`` on a shared
    machine should not take them. Over ``memory_limit`` DuckDB spills to the temp directory or
    fails the statement with an out-of-memory error; ``timeout`` (seconds, None for none) is
    enforced by whoever runs the statement (:func:`~codex_pipeline.warehouse.bounded_query.run_bounded`).
    """

    memory_limit: str = "2GB"
    threads: int = max(1, (os.cpu_count() or 2) // 2)
    timeout: float | None = 120.0

    def __post_init__(self) -> None:
        """Refuse a limit DuckDB would misread, in one line naming the value."""
        if not SIZE.match(self.memory_limit.strip()):
            raise ValueError(f"memory limit {self.memory_limit!r} is not a size: give a number and a unit, e.g. 2GB or 512MiB")
        if self.threads < 1:
            raise ValueError(f"threads {self.threads} is not a positive whole number: give 1 or more")
        if self.timeout is not None and self.timeout <= 0:
            raise ValueError(f"timeout {self.timeout} is not a positive number of seconds (None: no timeout)")


class QueryRefused(ValueError):
    """A statement the sandboxed session does not run; the message is one line naming the fix."""


def sandbox_settings(warehouse: Warehouse, allow_files: bool = False, limits: QueryLimits | None = None) -> list[str]:
    """The statements that set a session up, in order: no extension autoload, spills beside the catalog and
    the ``limits`` always; unless ``allow_files``, then ``warehouse/`` as the only files it may open, and the lock last."""
    limits = limits or QueryLimits()
    spill = warehouse.catalog_path.as_posix() + ".tmp"  # where DuckDB spills for the catalog file, not the cwd
    always = [
        "SET autoinstall_known_extensions = false",
        "SET autoload_known_extensions = false",
        "SET enable_progress_bar = false",  # DuckDB draws it on stdout, inside the printed result
        f"SET temp_directory = {sql_literal(spill)}",
        f"SET memory_limit = {sql_literal(limits.memory_limit.strip())}",
        f"SET threads = {int(limits.threads)}",
    ]
    if allow_files:
        return always
    allowed = (warehouse.root / "warehouse").as_posix().rstrip("/") + "/"
    return [
        *always,
        f"SET allowed_directories = [{sql_literal(allowed)}]",
        "SET enable_external_access = false",
        "SET lock_configuration = true",
    ]


def open_query_session(
    warehouse: Warehouse, allow_files: bool = False, limits: QueryLimits | None = None
) -> duckdb.DuckDBPyConnection:
    """The catalog attached read-only to a private in-memory DuckDB, closed around ``warehouse/`` unless ``allow_files``,
    held to ``limits`` (default :class:`QueryLimits`).

    Private because DuckDB settings belong to a database instance, which every
    connection to the same file in a process shares: locking one opened with
    ``duckdb.connect(catalog)`` would lock the caller's other connections too.
    """
    connect_catalog(warehouse, read_only=True).close()  # rebuilt first if damaged or built for another data dir
    con = duckdb.connect(":memory:")
    try:
        name = warehouse.catalog_path.stem
        con.execute(f"ATTACH {sql_literal(warehouse.catalog_path.as_posix())} AS {name} (READ_ONLY)")
        con.execute(f"USE {name}")
        for statement in sandbox_settings(warehouse, allow_files, limits):
            con.execute(statement)
    except BaseException:
        con.close()
        raise
    return con


def check_statements(con: duckdb.DuckDBPyConnection, sql: str, fix: str) -> list[duckdb.Statement]:
    """The statements of ``sql``, or QueryRefused unless every one only reads; ``fix`` is what the message tells the
    user to do.

    An allow-list: a statement type (or PRAGMA name) not named here is refused, whatever it is.
    ``EXPLAIN ANALYZE`` runs its statement, so an ``EXPLAIN`` counts as what it explains.
    """
    statements = con.extract_statements(sql)
    for statement in statements:
        kind = statement.type
        if kind == duckdb.StatementType.EXPLAIN:
            inner = _EXPLAIN.sub("", statement.query, count=1)
            try:
                explained = con.extract_statements(inner) if inner != statement.query else []
            except duckdb.ParserException:
                explained = []
            if len(explained) != 1 or explained[0].type != duckdb.StatementType.SELECT:
                raise QueryRefused(f"EXPLAIN of anything but a SELECT is refused: the session is read-only ({fix})")
            continue
        if kind == duckdb.StatementType.MULTI:
            raise QueryRefused(
                "a PIVOT without an IN list is refused, as DuckDB runs it as several statements: name the values, "
                f"PIVOT … ON col IN ('a', 'b') USING … ({fix})"
            )
        if kind == duckdb.StatementType.SET:
            raise QueryRefused(f"SET, RESET and USE are refused: the session's settings are fixed ({fix})")
        if kind == duckdb.StatementType.PRAGMA:
            _check_pragma(statement.query, fix)
        elif kind not in READ_ONLY_STATEMENTS:
            raise QueryRefused(
                f"{kind.name} statements are refused: the session reads the catalog's views and writes nothing ({fix})"
            )
    return statements


def _check_pragma(query: str, fix: str) -> None:
    """QueryRefused unless ``query`` is ``PRAGMA <name>`` with a name of :data:`READ_PRAGMAS`."""
    pragma = _PRAGMA.match(query)
    if pragma is None:  # DuckDB's PRAGMA type, not a PRAGMA statement: IMPORT DATABASE and its kin
        words = _FIRST_WORDS.match(query)
        what = " ".join(words.group(1).upper().split()) if words else "this"
        raise QueryRefused(f"{what} statements are refused: the session reads the catalog's views and writes nothing ({fix})")
    if pragma.group(1).lower() not in READ_PRAGMAS:
        raise QueryRefused(
            f"PRAGMA {pragma.group(1)} is refused: only PRAGMAs that report run ({', '.join(sorted(READ_PRAGMAS))}) ({fix})"
        )


_FILE = re.compile(r'Cannot access (?:file|directory) "([^"]*)"')


def refusal(exc: duckdb.Error, warehouse: Warehouse, fix: str) -> str | None:
    """One line for an error the sandbox caused (a file outside ``warehouse/``, an extension, a setting), or None."""
    text = " ".join(str(exc).split("\n", 1)[0].split())
    if isinstance(exc, duckdb.PermissionException):
        target = _FILE.search(text)
        if target:
            return (
                f"cannot open {target.group(1)}: the session reads only the files under "
                f"{warehouse.root / 'warehouse'} ({fix})"
            )
        if "extension" in text.lower():
            return f"extensions cannot be installed or loaded in this session ({fix})"
        return f"{text} ({fix})"
    if "configuration has been locked" in text:
        return f"the session's settings are fixed: {text.split(' - ')[0]} ({fix})"
    return None
