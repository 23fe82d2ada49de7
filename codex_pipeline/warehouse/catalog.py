"""The DuckDB catalog (``codex_catalog.duckdb``): views ``codex.<dataset>_<table>`` over one data directory's Parquet files.

The catalog is derived data. Its source of truth is the Parquet files under
``warehouse/`` and the registry of view SQL beside it (``codex_catalog.views.json``);
the DuckDB file is rebuilt from them beside the old one and renamed over it, so a
reader never sees half a catalog and a writer never opens the file readers hold.

Every catalog records the data directory it was built for (``main.catalog_info``).
A catalog that does not open (truncated, garbage), or that was built for another
data directory (a copied backup, a moved folder: its views would read the other
copy's files, or none), is rebuilt on open from the files present, with a one-line
warning; so is a damaged registry, whose views come back for every table with files,
not only for the datasets that run again. ``codex catalog rebuild`` does the same on
demand.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from codex_pipeline.warehouse.atomic_files import atomic_path, file_lock
from codex_pipeline.warehouse.catalog_views import HISTORY_SUFFIX, IDENTIFIER, SCHEMA, views_for
from codex_pipeline.warehouse.records_view import RECORDS_VIEW, records_views

if TYPE_CHECKING:
    from codex_pipeline.warehouse.storage import Warehouse

log = logging.getLogger(__name__)

VIEWS_FILE = "codex_catalog.views.json"
"""The catalog's registry: ``{"<dataset>/<table>": {view name: SQL}}``; the DuckDB file is built from it."""
INFO_TABLE = "main.catalog_info"
"""One row: ``data_dir``, the data directory whose files the catalog's views read."""

Registry = dict[str, dict[str, str]]


class CatalogBusy(RuntimeError):
    """The DuckDB file stayed locked by another process for the whole wait."""


class CatalogError(RuntimeError):
    """A view could not be created (a file in its glob is unreadable), or the catalog could not be rebuilt."""


def _connect(path: Path, read_only: bool, wait_s: float) -> duckdb.DuckDBPyConnection:
    deadline = time.monotonic() + wait_s
    delay = 0.05
    while True:
        try:
            return duckdb.connect(str(path), read_only=read_only)
        except duckdb.IOException as exc:
            if "lock" not in str(exc).lower() or time.monotonic() > deadline:
                if "lock" in str(exc).lower():
                    raise CatalogBusy(
                        f"{path} is locked by another process ({_first_line(exc)}); "
                        "close the program that opened it for writing, or retry when it is done"
                    ) from exc
                raise
            time.sleep(delay)
            delay = min(delay * 2, 1.0)


def _first_line(exc: BaseException) -> str:
    return " ".join(str(exc).split("\n", 1)[0].split())[:300]


def _problem(warehouse: Warehouse, con: duckdb.DuckDBPyConnection) -> str | None:
    """Why an open catalog cannot serve this data directory, or None."""
    try:
        row = con.execute(f"SELECT data_dir FROM {INFO_TABLE}").fetchone()
    except duckdb.CatalogException:
        return "records no data directory (built by an older Codex)"
    except duckdb.Error as exc:
        return f"is damaged ({_first_line(exc)})"
    if row is None or (row[0] != str(warehouse.root) and not _same_dir(row[0], warehouse.root)):
        return f"was built for another data directory ({row[0] if row else 'none'})"
    return None


def _same_dir(built_for: str, root: Path) -> bool:
    """The catalog's data directory is this one under another name (a bind mount): its views read these files."""
    try:
        return os.path.samefile(built_for, root)
    except OSError:
        return False


def _open_checked(
    warehouse: Warehouse, read_only: bool, wait_s: float
) -> tuple[duckdb.DuckDBPyConnection | None, str | None]:
    """The catalog opened and checked: (connection, None) when it serves this data directory, else (None, why)."""
    if not warehouse.catalog_path.exists():
        return None, None
    try:
        con = _connect(warehouse.catalog_path, read_only, wait_s)
    except CatalogBusy:
        raise
    except duckdb.Error as exc:
        return None, f"does not open ({_first_line(exc)})"
    problem = _problem(warehouse, con)
    if problem is None:
        return con, None
    con.close()
    return None, problem


def connect_catalog(warehouse: Warehouse, read_only: bool = True, wait_s: float = 30.0) -> duckdb.DuckDBPyConnection:
    """Open the catalog, read-only unless asked; rebuild it first when it is missing or cannot serve this data directory.

    A missing catalog is built silently (a reader never has to create it); a damaged
    one, or one built for another copy of the data directory, is rebuilt from the files
    present with a one-line warning. CatalogError (one line) when it cannot be rebuilt.
    """
    con, problem = _open_checked(warehouse, read_only, wait_s)
    if con is not None:
        return con
    with _rebuild_lock(warehouse):
        con, problem = _open_checked(warehouse, read_only, wait_s)  # another process may have rebuilt it meanwhile
        if con is not None:
            return con
        _rebuild_from_files(warehouse, problem)
    return _connect(warehouse.catalog_path, read_only, wait_s)


@contextlib.contextmanager
def _rebuild_lock(warehouse: Warehouse) -> Iterator[None]:
    """The catalog lock, for a rebuild: CatalogError (one line) when this user cannot write the data directory."""
    try:
        with file_lock(_lock_path(warehouse)):
            yield
    except OSError as exc:
        fix = (
            f"free space on the disk of {warehouse.root}, then run `codex catalog rebuild`"
            if exc.errno in (errno.ENOSPC, errno.EDQUOT)
            else f"run `codex catalog rebuild` as a user who can write {warehouse.root}"
        )
        raise CatalogError(f"cannot rebuild {warehouse.catalog_path}: {exc.strerror or exc} ({fix})") from exc


def rebuild_catalog(warehouse: Warehouse) -> tuple[list[str], dict[str, str]]:
    """Rebuild the catalog and its registry from the files under ``warehouse/``: ``codex catalog rebuild``.

    Returns the views created and ``{view: why}`` for those left out (a file in their
    glob cannot be read).
    """
    with _rebuild_lock(warehouse):
        return _rebuild_from_files(warehouse, None)


def _rebuild_from_files(warehouse: Warehouse, problem: str | None) -> tuple[list[str], dict[str, str]]:
    """Under the lock: derive every view from the registry's tables and the files present, publish both."""
    registry = derive_registry(warehouse, list(_load_registry(warehouse) or {}))
    failed = _rebuild_catalog(warehouse, registry)  # an OSError: _rebuild_lock makes it a CatalogError
    _write_registry(warehouse, registry)
    views = sorted({n for views in registry.values() for n in views} - failed.keys())
    if problem is not None:
        log.warning(
            "%s %s: rebuilt it from the files under %s (%d views%s)",
            warehouse.catalog_path, problem, warehouse.root / "warehouse", len(views),
            f"; left out: {', '.join(sorted(failed))}" if failed else "",
        )
    return views, failed


def table_keys(warehouse: Warehouse) -> list[str]:
    """``<dataset>/<table>`` of every table with Parquet files under ``warehouse/`` (and ``documents`` per index).

    Folder names that are not plain identifiers are not tables Codex wrote; they are skipped.
    """
    base = warehouse.root / "warehouse"
    keys: list[str] = []
    for ds in sorted(base.iterdir()) if base.is_dir() else []:
        if not (ds.is_dir() and IDENTIFIER.fullmatch(ds.name)):
            continue
        index = warehouse.index_dir(ds.name).name
        for table in sorted(ds.iterdir()):
            if table.name == index:
                if warehouse.documents_path(ds.name).exists():
                    keys.append(f"{ds.name}/documents")
            elif IDENTIFIER.fullmatch(table.name) and warehouse.has_files(ds.name, table.name):
                keys.append(f"{ds.name}/{table.name}")
    return keys


def derive_registry(warehouse: Warehouse, keys: list[str]) -> Registry:
    """The views of ``keys`` and of every table with files, derived for this data directory."""
    registry: Registry = {}
    for key in dict.fromkeys([*keys, *table_keys(warehouse)]):
        views = _views_of(warehouse, key)
        if views:
            registry[key] = views
    return registry


def _views_of(warehouse: Warehouse, key: str) -> dict[str, str]:
    """:func:`views_for` of a registry key; none (and a warning) for a key whose names are not identifiers."""
    dataset, _, table = key.partition("/")
    try:
        views = views_for(warehouse, dataset, table)
        return views | records_views(warehouse, dataset) if table == "raw" and views else views
    except ValueError as exc:
        log.warning("catalog registry entry %r skipped: %s", key, exc)
        return {}


def ensure_views(warehouse: Warehouse, views: list[tuple[str, str]]) -> list[str]:
    """Make sure ``codex.<dataset>_<table>`` is current for each (dataset, table).

    Views read Parquet globs (and the document index at a fixed path), so new
    partitions show up without touching the catalog. When a view must be created,
    changed or dropped (its table has no file left), the registry of view SQL
    (``codex_catalog.views.json``) is updated and the DuckDB file is **rebuilt beside
    the old one and renamed over it**: a writer never opens the file readers hold, so
    an open read-only connection (an analyst's notebook, ``codex query``) can neither
    block a run nor be blocked by one; it keeps seeing the views it opened with until
    it reconnects. A registry that does not parse is re-derived from the files, and a
    catalog that does not open or was built for another data directory is rebuilt.
    Returns the names of the views (re)created or dropped.
    """
    with file_lock(_lock_path(warehouse)):
        loaded = _load_registry(warehouse)
        registry = dict(loaded or {})
        # every registered view is re-derived too: a rebuild writes them all, and one
        # whose files went since (a view over an empty glob) must not sink the others;
        # with no readable registry, every table with files is registered again
        keys = [*registry, *(f"{d}/{t}" for d, t in views), *(table_keys(warehouse) if loaded is None else [])]
        changed: set[str] = set()
        for key in dict.fromkeys(keys):
            wanted, had = _views_of(warehouse, key), registry.get(key, {})
            if wanted == had:
                continue
            changed |= {n for n in wanted.keys() | had.keys() if wanted.get(n) != had.get(n)}
            if wanted:
                registry[key] = wanted
            else:
                registry.pop(key, None)
        if not changed and _serves(warehouse):
            if loaded is None:
                _write_registry(warehouse, registry)
            return []
        failed = _rebuild_catalog(warehouse, registry)
        _write_registry(warehouse, registry)
        _report_failed(warehouse, registry, views, failed)
        return sorted(changed)


def _serves(warehouse: Warehouse) -> bool:
    """The catalog opens and was built for this data directory (busy counts as serving: not ours to fix)."""
    try:
        con, _ = _open_checked(warehouse, read_only=True, wait_s=0.0)
    except CatalogBusy:
        return True
    if con is None:
        return False
    con.close()
    return True


def _report_failed(warehouse: Warehouse, registry: Registry, views: list[tuple[str, str]], failed: dict[str, str]) -> None:
    mine = {n for d, t in views for n in registry.get(f"{d}/{t}", {})}
    for name in failed.keys() - mine:  # another dataset's problem: its own next run reports it
        log.warning("codex.%s left out of the catalog: %s", name, failed[name])
    if failed.keys() & mine:
        failed = {n: failed[n] for n in failed.keys() & mine}
        raise CatalogError(
            f"views left out of {warehouse.catalog_path} because their files cannot be read: "
            + "; ".join(f"codex.{n}: {why}" for n, why in sorted(failed.items()))
            + " (a damaged file is set aside by the next run of its dataset)"
        )


def _lock_path(warehouse: Warehouse) -> Path:
    return warehouse.catalog_path.with_suffix(".lock")


def _load_registry(warehouse: Warehouse) -> Registry | None:
    """The registry, or None when it is missing or damaged (the caller re-derives it from the files)."""
    path = warehouse.root / VIEWS_FILE
    try:
        loaded = json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        return None
    if not isinstance(loaded, dict) or not all(isinstance(v, dict) for v in loaded.values()):
        return None
    return {str(k): {str(n): str(s) for n, s in v.items()} for k, v in loaded.items()}


def _write_registry(warehouse: Warehouse, registry: Registry) -> None:
    path = warehouse.root / VIEWS_FILE
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(registry, indent=1, sort_keys=True))


def _view_rank(name: str) -> int:
    """Creation order: the document index, then history views, then the views built on them, then the
    typed records views (over ``<dataset>_raw``)."""
    if name.endswith("_documents"):
        return 0
    if name.endswith(f"_{RECORDS_VIEW}"):
        return 3
    return 1 if name.endswith(HISTORY_SUFFIX) else 2


def _rebuild_catalog(warehouse: Warehouse, registry: Registry) -> dict[str, str]:
    """Write every registered view into a fresh DuckDB file, then rename it over the catalog.

    A view that cannot be created (or whose base view could not) is left out and
    returned with the reason; the rest of the catalog is still published. The file
    records the data directory it was built for (:data:`INFO_TABLE`).
    """
    sql_by_name: dict[str, str] = {}
    for views in registry.values():
        sql_by_name.update(views)
    failed: dict[str, str] = {}
    warehouse.root.mkdir(parents=True, exist_ok=True)
    with atomic_path(warehouse.catalog_path) as tmp:
        con = duckdb.connect(str(tmp))
        try:
            con.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
            con.execute(f"CREATE TABLE {INFO_TABLE} (data_dir VARCHAR)")
            con.execute(f"INSERT INTO {INFO_TABLE} VALUES (?)", [str(warehouse.root)])
            for name in sorted(sql_by_name, key=lambda n: (_view_rank(n), n)):
                try:
                    con.execute(sql_by_name[name])
                except duckdb.Error as exc:
                    failed[name] = " ".join(str(exc).split())[:300]
        finally:
            con.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{tmp}.wal")
    return failed
