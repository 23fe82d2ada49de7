"""Asset factory: the registry's datasets become `[dataset, raw]` → `[dataset, chunks]` → `[dataset, embeddings]`.

Each asset runs its day step from ``codex_pipeline.pipeline`` and translates the
result (``defs/metadata.py``); the chunks asset's warning checks are in ``defs/checks.py``.
"""

import datetime as dt
import logging
import warnings
from collections.abc import Iterator

import dagster as dg

from codex_pipeline.datasets.registry import DatasetRegistry, DatasetSpec
from codex_pipeline.defs.checks import build_chunk_checks, chunks_key, contract_check_spec
from codex_pipeline.defs.metadata import (
    ADDRESS_CHECK,
    CONTRACT_CHECK,
    UNIQUE_CHECK,
    chunks_metadata,
    contract_result,
    embeddings_metadata,
    raw_metadata,
)
from codex_pipeline.defs.partitions import DEFAULT_PARTITIONS
from codex_pipeline.defs.resources import CodexWarehouse, EmbeddingSettings
from codex_pipeline.pipeline import RawDayFailed, run_chunks_day, run_embeddings, run_raw_day

__all__ = [
    "ADDRESS_CHECK", "CONTRACT_CHECK", "EMBEDDINGS_POOL", "ONE_RUN_PER_DAY", "UNIQUE_CHECK",
    "build_chunks_asset", "build_dataset_assets", "build_embeddings_asset", "build_raw_asset", "dataset_definitions",
]

# Backfill policies are beta in Dagster 1.13, and a job spanning assets with
# different policies (codex_all, the version sensor's) runs per day and says so on
# every import. Both are deliberate here; keep those two messages out of users' logs.
warnings.filterwarnings("ignore", message="Parameter `backfill_policy`", category=dg.BetaWarning)
warnings.filterwarnings("ignore", message=r"Asset job .* materializes assets with varying BackfillPolicies")


class _SkippedDayFilter(logging.Filter):
    """Drop Dagster's note that a skipped chunks step left its blocking check without result.

    A day with no landing folder skips the chunks step on purpose, and its downstream
    steps are skipped with it; the note would say they "proceed", which they do not.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return "will proceed without gating on it" not in record.getMessage()


logging.getLogger("dagster._core.execution.plan.active").addFilter(_SkippedDayFilter())

EMBEDDINGS_POOL = "embeddings"
# Every asset writes one independent file per day: one run per day parallelizes across the
# run queue, retries a failed day alone, and holds the day's raw -> chunks -> embeddings in
# one run, so a backfill never waits for the backfill daemon's next tick between a day's
# chunks and its embeddings (docs/deployment.md measures it with two Celery workers).
ONE_RUN_PER_DAY = dg.BackfillPolicy.multi_run(max_partitions_per_run=1)
KINDS = {"parquet", "duckdb"}


def _day(context: dg.AssetExecutionContext) -> dt.date:
    return dt.date.fromisoformat(context.partition_key)


def build_raw_asset(spec: DatasetSpec, partitions: dg.PartitionsDefinition = DEFAULT_PARTITIONS) -> dg.AssetsDefinition:
    """``[dataset, raw]``; no output for a day with nothing landed or retracted, so the day's later steps skip."""
    @dg.asset(
        key=dg.AssetKey([spec.name, "raw"]),
        backfill_policy=ONE_RUN_PER_DAY,
        group_name=spec.name,
        partitions_def=partitions,
        code_version=spec.source_version,
        output_required=False,  # a day with no landing folder materializes nothing downstream
        kinds=KINDS,
        description=f"{spec.description} Validated records from landing/{spec.name}/<day>/; bad files go to codex.{spec.name}_rejects.",
        metadata={"dataset": spec.name},
    )
    def raw(context: dg.AssetExecutionContext, warehouse: CodexWarehouse) -> Iterator[dg.MaterializeResult]:
        try:
            done = run_raw_day(spec, warehouse.get(), _day(context), context.log)
        except RawDayFailed as exc:  # the user's input, not a bug: one line, no traceback
            raise dg.Failure(description=str(exc), allow_retries=False) from None
        if not done.skipped:  # nothing landed, nothing to retract: the day's later steps are skipped
            yield dg.MaterializeResult(metadata=raw_metadata(done))

    return raw


def _chunks_description(spec: DatasetSpec) -> str:
    return (
        f"Contract-checked chunk rows of {spec.name} (chunking_version {spec.chunking_version}), "
        f"`codex.{spec.name}_chunks` in DuckDB; ids that vanish on re-chunking go to `codex.{spec.name}_redirects`."
    )


def build_chunks_asset(spec: DatasetSpec, partitions: dg.PartitionsDefinition = DEFAULT_PARTITIONS) -> dg.AssetsDefinition:
    """``[dataset, chunks]``, reporting its own blocking contract check (it decides publish or quarantine)."""
    @dg.asset(
        key=chunks_key(spec),
        deps=[dg.AssetKey([spec.name, "raw"])],
        backfill_policy=ONE_RUN_PER_DAY,
        group_name=spec.name,
        partitions_def=partitions,
        code_version=spec.chunking_version,
        kinds=KINDS,
        description=_chunks_description(spec),
        metadata={"dataset": spec.name, "chunking_version": spec.chunking_version},
        check_specs=[contract_check_spec(spec)],
    )
    def chunks(context: dg.AssetExecutionContext, warehouse: CodexWarehouse) -> dg.MaterializeResult:
        done = run_chunks_day(spec, warehouse.get(), _day(context), context.log)
        return dg.MaterializeResult(metadata=chunks_metadata(done), check_results=[contract_result(done.contract)])

    return chunks


def _embeddings_description(spec: DatasetSpec) -> str:
    return (
        f"A vector for every contract-checked {spec.name} chunk, `codex.{spec.name}_embeddings`. "
        "Vectors are reused whenever the exact input text, model and version are unchanged. Chunks with several "
        f"evidence units get a vector per unit too, `codex.{spec.name}_evidence_units`, for search."
    )


def build_embeddings_asset(spec: DatasetSpec, partitions: dg.PartitionsDefinition = DEFAULT_PARTITIONS) -> dg.AssetsDefinition:
    """``[dataset, embeddings]``, its steps in the :data:`EMBEDDINGS_POOL` concurrency pool."""
    @dg.asset(
        key=dg.AssetKey([spec.name, "embeddings"]),
        deps=[chunks_key(spec)],
        group_name=spec.name,
        partitions_def=partitions,
        backfill_policy=ONE_RUN_PER_DAY,
        pool=EMBEDDINGS_POOL,
        kinds=KINDS,
        description=_embeddings_description(spec),
        metadata={"dataset": spec.name},
    )
    def embeddings(
        context: dg.AssetExecutionContext, warehouse: CodexWarehouse, embedding: EmbeddingSettings
    ) -> dg.MaterializeResult:
        days = [dt.date.fromisoformat(k) for k in context.partition_keys]
        done = run_embeddings(spec, warehouse.get(), days, embedding.build(), context.log)
        return dg.MaterializeResult(metadata=embeddings_metadata(done))

    return embeddings


def build_dataset_assets(spec: DatasetSpec, partitions: dg.PartitionsDefinition = DEFAULT_PARTITIONS) -> list[dg.AssetsDefinition]:
    """The dataset's assets, then the checks that run as steps of their own (an AssetChecksDefinition has no ``key``)."""
    if not spec.chunked:
        return [build_raw_asset(spec, partitions)]
    return [build_raw_asset(spec, partitions), build_chunks_asset(spec, partitions),
            build_embeddings_asset(spec, partitions), *build_chunk_checks(spec)]


def dataset_definitions(registry: DatasetRegistry, partitions: dg.PartitionsDefinition) -> dg.Definitions:
    """Every dataset's raw → chunks → embeddings chain and the chunks' checks."""
    return dg.Definitions(assets=[a for spec in registry for a in build_dataset_assets(spec, partitions)])
