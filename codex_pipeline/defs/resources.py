"""Dagster resources: where the data lives and how DuckDB is opened."""


import dagster as dg
import duckdb

from codex_pipeline.warehouse.storage import Warehouse, connect_catalog


class CodexWarehouse(dg.ConfigurableResource):
    """The data directory: landing files, partitioned Parquet and the DuckDB catalog.

    Empty ``data_dir`` means ``$CODEX_DATA_DIR`` or ``data/`` in the checkout.
    """

    data_dir: str | None = None

    def get(self) -> Warehouse:
        return Warehouse(self.data_dir or None)


class CodexDuckDB(dg.ConfigurableResource):
    """A read-only DuckDB connection to the catalog (for checks and users' own assets).

    dagster-duckdb's resource always opens read-write. Codex's catalog holds only
    views and is rebuilt and renamed whenever a view changes, so there is nothing to
    write there: a read-only connection never blocks a run, and anything written into
    the catalog would be lost at the next rebuild. Keep your own tables in your own
    DuckDB file and ``ATTACH`` the catalog read-only.
    """

    data_dir: str | None = None

    def connect(self) -> duckdb.DuckDBPyConnection:
        return connect_catalog(Warehouse(self.data_dir or None), read_only=True)


class EmbeddingSettings(dg.ConfigurableResource):
    """Which embedding model the `[dataset, embeddings]` assets use.

    ``kind="local"`` (default) is all-MiniLM-L6-v2 from the packaged, SHA-checked
    weights: no key, no network. ``kind="openai"`` is text-embedding-3-large at
    1536 dimensions; the key comes only from ``OPENAI_API_KEY`` (never from config,
    so it never shows in the UI or in run metadata) and the base URL from
    ``openai_base_url`` or ``OPENAI_BASE_URL``.
    """

    kind: str = "local"
    local_batch_size: int = 32
    openai_model: str = "text-embedding-3-large"
    openai_dimensions: int = 1536
    openai_base_url: str | None = None
    openai_max_concurrency: int = 4
    openai_max_batch_inputs: int = 2048
    openai_timeout_s: float = 60.0
    openai_max_retries: int = 6
    openai_backoff_base_s: float = 0.5
    openai_max_backoff_s: float = 30.0

    def build(self):
        from codex_pipeline.embeddings import make_embedder

        if self.kind == "local":
            return make_embedder("local", batch_size=self.local_batch_size)
        return make_embedder(
            self.kind,
            model=self.openai_model,
            dimensions=self.openai_dimensions,
            base_url=self.openai_base_url,
            max_concurrency=self.openai_max_concurrency,
            max_batch_inputs=self.openai_max_batch_inputs,
            timeout=self.openai_timeout_s,
            retry={
                "max_retries": self.openai_max_retries,
                "backoff_base": self.openai_backoff_base_s,
                "max_delay": self.openai_max_backoff_s,
            },
        )
