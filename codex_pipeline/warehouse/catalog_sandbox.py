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
  only statements that cannot write (``SELECT`` and its forms, ``EXPLAIN`` of one,
  ``PRAGMA``, ``CALL``) run. The catalog itself is attached read-only.

With ``allow_files`` (``codex query --unsafe-allow-files``) the session is a plain
DuckDB session on the read-only catalog, with the rights of the user running it
(extensions still load only when a statement says ``INSTALL``/``LOAD``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import duckdb

from codex_pipeline.warehouse.catalog import connect_catalog
from codex_pipeline.warehouse.catalog_views import sql_literal

if TYPE_CHECKING:
    from codex_pipeline.warehouse.storage import Warehouse

READ_ONLY_STATEMENTS = frozenset({duckdb.StatementType.SELECT, duckdb.StatementType.PRAGMA, duckdb.StatementType.CALL})
"""Statement types that read: SELECT (also DESCRIBE, SUMMARIZE, SHOW, FROM-first, VALUES, PIVOT … IN (…)), PRAGMA, CALL.

Not MULTI: a ``PIVOT`` without an ``IN`` list parses as several statements, and so
does any statement around it (``COPY (PIVOT …) TO …``), which the type would hide."""

_GAP = r"(?:\s|--[^\n]*(?:\n|$)|/\*.*?\*/)*"  # blanks and comments
_EXPLAIN = re.compile(rf"^{_GAP}explain\b(?:{_GAP}analyze\b|{_GAP}\([^)]*\))?", re.IGNORECASE | re.DOTALL)


class QueryRefused(ValueError):
    """A statement the sandboxed session does not run; the message is one line naming the fix."""


def sandbox_settings(warehouse: Warehouse, allow_files: bool = False) -> list[str]:
    """The statements that set a session up, in order: no extension autoload and spills beside the catalog
    always; unless ``allow_files``, then ``warehouse/`` as the only files it may open, and the lock last."""
    spill = warehouse.catalog_path.as_posix() + ".tmp"  # where DuckDB spills for the catalog file, not the cwd
    always = [
        "SET autoinstall_known_extensions = false",
        "SET autoload_known_extensions = false",
        f"SET temp_directory = {sql_literal(spill)}",
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


def open_query_session(warehouse: Warehouse, allow_files: bool = False) -> duckdb.DuckDBPyConnection:
    """The catalog attached read-only to a private in-memory DuckDB, closed around ``warehouse/`` unless ``allow_files``.

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
        for statement in sandbox_settings(warehouse, allow_files):
            con.execute(statement)
    except BaseException:
        con.close()
        raise
    return con


def check_statements(con: duckdb.DuckDBPyConnection, sql: str, fix: str) -> None:
    """QueryRefused unless every statement of ``sql`` only reads; ``fix`` is what the message tells the user to do.

    ``EXPLAIN ANALYZE`` runs its statement, so an ``EXPLAIN`` counts as what it explains.
    """
    for statement in con.extract_statements(sql):
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
        if kind not in READ_ONLY_STATEMENTS:
            raise QueryRefused(
                f"{kind.name} statements are refused: the session reads the catalog's views and writes nothing ({fix})"
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
