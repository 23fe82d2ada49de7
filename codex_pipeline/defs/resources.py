"""Dagster resources: where the data lives, how DuckDB is opened, which models run and how they are reached.

The code location makes them from its :class:`~codex_pipeline.settings.CodexSettings`
(:func:`resources_from_settings`); their fields are what the UI's launchpad shows and can
override. ``docs/configuration.md`` lists every setting.
"""

import os
from typing import Any

import dagster as dg
import duckdb

from codex_pipeline.settings import CodexSettings, OpenAISettings
from codex_pipeline.transport import OpenAIConnection, RetrySettings
from codex_pipeline.warehouse.catalog import connect_catalog
from codex_pipeline.warehouse.step_settings import CheckpointSettings, StepSettings
from codex_pipeline.warehouse.storage import Warehouse


class CodexWarehouse(dg.ConfigurableResource):
    """The data directory: landing files, partitioned Parquet and the DuckDB catalog.

    Empty ``data_dir`` means ``data/`` in the checkout. The warehouse carries the
    deployment's step settings (redirect threads, embedding checkpoints, landing links) to the
    steps it is given to.
    """

    data_dir: str | None = None
    redirect_threads: int | None = None
    checkpoint_inputs: int = CheckpointSettings().every_inputs
    checkpoint_seconds: float = CheckpointSettings().every_seconds
    follow_landing_links: bool = False
    build_memory_limit: str | None = None

    @classmethod
    def from_settings(cls, settings: CodexSettings) -> "CodexWarehouse":
        """The data directory and step settings of ``settings``."""
        t = settings.steps
        return cls(data_dir=str(settings.data_dir) if settings.data_dir else None, redirect_threads=t.redirect_threads,
                   checkpoint_inputs=t.checkpoint.every_inputs, checkpoint_seconds=t.checkpoint.every_seconds,
                   follow_landing_links=t.follow_landing_links, build_memory_limit=t.build_memory_limit)

    def get(self) -> Warehouse:
        """The warehouse, with this resource's step settings."""
        checkpoint = CheckpointSettings(self.checkpoint_inputs, self.checkpoint_seconds)
        return Warehouse(self.data_dir, StepSettings(self.redirect_threads, checkpoint, self.follow_landing_links,
                                                     self.build_memory_limit))


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
        """A new read-only connection, for the caller to close; the catalog is rebuilt first when missing or damaged."""
        return connect_catalog(Warehouse(self.data_dir), read_only=True)


class OpenAIConnectionSettings(dg.Config):
    """How an OpenAI-compatible server is reached; one shape for embeddings and propositions.

    The key comes only from ``OPENAI_API_KEY`` in the environment of the process that
    runs the step (a Celery worker's own, say; never from config, so it never shows in
    the UI or in run metadata). Empty ``base_url`` means ``$OPENAI_BASE_URL`` there, else
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
        """The transport to the server, with the running process's key."""
        reached = OpenAISettings.from_env(os.environ)
        return OpenAIConnection(
            api_key=reached.api_key,
            base_url=self.base_url or reached.base_url,
            timeout=self.timeout_s,
            max_concurrency=self.max_concurrency,
            retry=RetrySettings(
                max_retries=self.max_retries,
                backoff_base=self.backoff_base_s,
                max_delay=self.max_backoff_s,
                max_retry_after=self.max_retry_after_s,
            ),
        )


class EmbeddingSettings(dg.ConfigurableResource):
    """Which embedding model the `[dataset, embeddings]` assets use.

    ``kind="local"`` (default; the settings' ``embedder``) is
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
    openai: OpenAIConnectionSettings = OpenAIConnectionSettings()

    @classmethod
    def from_settings(cls, settings: CodexSettings, kind: str | None = None) -> "EmbeddingSettings":
        """``kind`` (default: the settings' ``embedder``) with the settings' local model options."""
        local = settings.local_model
        return cls(kind=kind or settings.embedder, local_runtime=local.runtime,
                   local_precision=local.precision, local_threads=local.threads or 0)

    def build(self):
        """A new embedder of ``kind``, made in the step's process (an ``openai`` one reads that process's key).

        MissingAPIKey for ``openai`` without a key; ValueError for an unknown ``kind``.
        """
        from codex_pipeline.embeddings import make_embedder

        if self.kind == "local":
            from codex_pipeline.embeddings.runtimes import LocalModelSettings

            options = LocalModelSettings(self.local_runtime, self.local_precision, self.local_threads or None)
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

    ``kind="offline"`` (default; the settings' ``extractor``):
    deterministic, no model, exact spans. ``kind="openai"``: ``openai_model`` through
    the chat API, reached as ``openai`` says (timeout 120 s by default). ``prices`` lays
    ``{model: {"input_per_1m", "output_per_1m"}}`` (USD) over the built-in table;
    ``max_usd_per_run`` and ``max_usd_per_partition`` cap spending (``None``: no cap).
    """

    kind: str = "offline"
    openai_model: str = "gpt-4o-mini"
    openai_max_batch_chunks: int = 8
    openai: OpenAIConnectionSettings = OpenAIConnectionSettings(timeout_s=120.0)
    prices: dict[str, dict[str, float]] = {}
    max_usd_per_run: float | None = 5.0
    max_usd_per_partition: float | None = 1.0

    def build(self):
        """A new extractor of ``kind``; ``openai`` prices requests with ``prices`` over the built-in table.

        MissingAPIKey for ``openai`` without a key in the step's process; ValueError for an unknown ``kind``
        or a model without a price. The cost caps are not in the extractor: the asset hands them to the step.
        """
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


def resources_from_settings(settings: CodexSettings) -> dict[str, Any]:
    """The code location's resources, by the names its assets, checks and sensors ask for."""
    return {
        "warehouse": CodexWarehouse.from_settings(settings),
        "duckdb": CodexDuckDB(data_dir=str(settings.data_dir) if settings.data_dir else None),
        "embedding": EmbeddingSettings.from_settings(settings),
        "propositions": PropositionSettings(kind=settings.extractor),
    }
