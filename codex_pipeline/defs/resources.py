"""Dagster resources: where the data lives, how DuckDB is opened, which models run and how they are reached.

Environment variables are read here (through :mod:`.environment`) when a resource
is used, and passed down; ``docs/configuration.md`` lists every setting.
"""

import dagster as dg
import duckdb

from codex_pipeline.defs import environment
from codex_pipeline.transport import OpenAIConnection, RetryPolicy
from codex_pipeline.warehouse.catalog import connect_catalog
from codex_pipeline.warehouse.storage import Warehouse


class CodexWarehouse(dg.ConfigurableResource):
    """The data directory: landing files, partitioned Parquet and the DuckDB catalog.

    Empty ``data_dir`` means ``$CODEX_DATA_DIR`` or ``data/`` in the checkout. The
    warehouse carries the deployment's tuning (``$CODEX_REDIRECT_THREADS``,
    ``$CODEX_EMBED_CHECKPOINT_INPUTS`` / ``_SECONDS``) to the steps it is given to.
    """

    data_dir: str | None = None

    def get(self) -> Warehouse:
        return Warehouse(self.data_dir or environment.data_dir(), environment.tuning())


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
        return connect_catalog(Warehouse(self.data_dir or environment.data_dir()), read_only=True)


class OpenAIConnectionConfig(dg.Config):
    """How an OpenAI-compatible server is reached; one shape for embeddings and propositions.

    The key comes only from ``OPENAI_API_KEY`` (never from config, so it never shows
    in the UI or in run metadata). Empty ``base_url`` means ``$OPENAI_BASE_URL``, else
    the OpenAI API. Retries: 429 / 5xx / timeouts, at most ``max_retries`` per request,
    backoff from ``backoff_base_s`` up to ``max_backoff_s``, ``Retry-After`` honoured up
    to ``max_retry_after_s``.
    """

    base_url: str | None = None
    timeout_s: float = 60.0
    max_concurrency: int = 4
    max_retries: int = 6
    backoff_base_s: float = 0.5
    max_backoff_s: float = 30.0
    max_retry_after_s: float = 120.0

    def connection(self) -> OpenAIConnection:
        return OpenAIConnection(
            api_key=environment.openai_api_key(),
            base_url=self.base_url or environment.openai_base_url(),
            timeout=self.timeout_s,
            max_concurrency=self.max_concurrency,
            retry=RetryPolicy(
                max_retries=self.max_retries,
                backoff_base=self.backoff_base_s,
                max_delay=self.max_backoff_s,
                max_retry_after=self.max_retry_after_s,
            ),
        )


class EmbeddingSettings(dg.ConfigurableResource):
    """Which embedding model the `[dataset, embeddings]` assets use.

    ``kind="local"`` (default; ``$CODEX_EMBEDDER`` in the code location) is
    all-MiniLM-L6-v2 from the packaged, SHA-checked weights: no key, no network.
    ``kind="openai"`` is ``openai_model`` (text-embedding-3-large) at
    ``openai_dimensions`` (1536), reached as ``openai`` says.
    """

    kind: str = "local"
    local_batch_size: int = 32
    local_runtime: str = "auto"  # openvino (the default install), torch (the [torch] extra), auto
    local_precision: str = "auto"  # bf16 where the CPU has bf16 units, else fp32; or fp32 / bf16
    local_threads: int = 0  # 0: every core the process may run on
    openai_model: str = "text-embedding-3-large"
    openai_dimensions: int = 1536
    openai_max_batch_inputs: int = 2048
    openai: OpenAIConnectionConfig = OpenAIConnectionConfig()

    @classmethod
    def from_environment(cls, kind: str | None = None) -> "EmbeddingSettings":
        """``kind`` (default ``$CODEX_EMBEDDER``) with the local model's ``$CODEX_EMBED_*`` settings."""
        local = environment.local_model_options()
        return cls(kind=kind or environment.configured_kind(), local_runtime=local.runtime,
                   local_precision=local.precision, local_threads=local.threads or 0)

    def build(self):
        from codex_pipeline.embeddings import make_embedder

        if self.kind == "local":
            from codex_pipeline.embeddings.runtimes import LocalModelOptions

            options = LocalModelOptions(self.local_runtime, self.local_precision, self.local_threads or None)
            return make_embedder("local", batch_size=self.local_batch_size, options=options)
        return make_embedder(
            self.kind,
            model=self.openai_model,
            dimensions=self.openai_dimensions,
            max_batch_inputs=self.openai_max_batch_inputs,
            connection=self.openai.connection(),
        )


class PropositionSettings(dg.ConfigurableResource):
    """How propositions are extracted.

    ``kind="offline"`` (default; ``$CODEX_PROPOSITION_EXTRACTOR`` in the code location):
    deterministic, no model, exact spans. ``kind="openai"``: ``openai_model`` through
    the chat API, reached as ``openai`` says (timeout 120 s by default). ``prices`` lays
    ``{model: {"input_per_1m", "output_per_1m"}}`` (USD) over the built-in table;
    ``max_usd_per_run`` and ``max_usd_per_partition`` cap spending (``None``: no cap).
    """

    kind: str = "offline"
    openai_model: str = "gpt-4o-mini"
    openai_max_batch_chunks: int = 8
    openai: OpenAIConnectionConfig = OpenAIConnectionConfig(timeout_s=120.0)
    prices: dict[str, dict[str, float]] = {}
    max_usd_per_run: float | None = 5.0
    max_usd_per_partition: float | None = 1.0

    def build(self):
        from codex_pipeline.propositions import make_extractor
        from codex_pipeline.propositions.cost import price_table

        if self.kind == "offline":
            return make_extractor("offline")
        return make_extractor(
            self.kind,
            model=self.openai_model,
            max_batch_chunks=self.openai_max_batch_chunks,
            prices=price_table(self.prices),
            connection=self.openai.connection(),
        )
