"""Dagster resources: where the data lives and how DuckDB is opened."""

from typing import Optional

import dagster as dg
import duckdb

from ..storage import Warehouse, connect_catalog


class CodexWarehouse(dg.ConfigurableResource):
    """The data directory: landing files, partitioned Parquet and the DuckDB catalog.

    Empty ``data_dir`` means ``$CODEX_DATA_DIR`` or ``data/`` in the checkout.
    """

    data_dir: Optional[str] = None

    def get(self) -> Warehouse:
        return Warehouse(self.data_dir or None)


class CodexDuckDB(dg.ConfigurableResource):
    """A DuckDB connection to the catalog, read-only unless a writer asks otherwise.

    dagster-duckdb's resource always opens read-write, which would block every other
    process; readers (checks, analysts' sessions) use this with ``read_only=True``.
    """

    data_dir: Optional[str] = None
    read_only: bool = True

    def connect(self) -> duckdb.DuckDBPyConnection:
        return connect_catalog(Warehouse(self.data_dir or None), read_only=self.read_only)
