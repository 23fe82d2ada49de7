"""`[dataset, propositions]` → `[dataset, proposition_embeddings]` for the datasets that opt in (seed 002).

Downstream of the contract-checked chunks on the same daily partitions. The
propositions contract is a blocking check: a partition that breaks it is kept aside
in `propositions_quarantine/` and never embedded. The extractor is the
`propositions` resource (offline by default; `kind="openai"` for gpt-4o-mini, with
cost caps per run and per partition).
"""

import datetime as dt

import dagster as dg

from codex_pipeline.datasets.registry import DatasetRegistry, DatasetSpec
from codex_pipeline.defs.metadata import PROPOSITIONS_CONTRACT_CHECK as CONTRACT_CHECK
from codex_pipeline.defs.metadata import (
    proposition_embeddings_metadata,
    propositions_contract_result,
    propositions_metadata,
)
from codex_pipeline.defs.partitions import DEFAULT_PARTITIONS
from codex_pipeline.defs.resources import CodexWarehouse, EmbeddingSettings, PropositionSettings
from codex_pipeline.pipeline import run_proposition_embeddings, run_propositions
from codex_pipeline.propositions.table import EMBEDDINGS_TABLE, TABLE

EMBEDDINGS_POOL = "embeddings"
BACKFILL = dg.BackfillPolicy.multi_run(max_partitions_per_run=5)


def _days(context: dg.AssetExecutionContext) -> list[dt.date]:
    return [dt.date.fromisoformat(pk) for pk in context.partition_keys]


def _contract_check(key: dg.AssetKey) -> dg.AssetCheckSpec:
    return dg.AssetCheckSpec(
        CONTRACT_CHECK,
        asset=key,
        blocking=True,
        description="pandera propositions contract: minted ids, exact cl100k counts, dense ordinals, parents in "
        "the partition, spans inside the document (offline statements exactly their slices).",
    )


def build_propositions_asset(spec: DatasetSpec, partitions: dg.PartitionsDefinition = DEFAULT_PARTITIONS) -> dg.AssetsDefinition:
    """``[dataset, propositions]``, reporting its own blocking contract check; resource cost caps go to the step."""
    key = dg.AssetKey([spec.name, TABLE])

    @dg.asset(
        key=key,
        deps=[dg.AssetKey([spec.name, "chunks"])],
        group_name=spec.name,
        partitions_def=partitions,
        backfill_policy=BACKFILL,
        kinds={"parquet", "duckdb"},
        description=(
            f"Atomic statements of every contract-checked {spec.name} chunk (seed 002), `codex.{spec.name}_propositions`: "
            "each with its parent chunk, exact cl100k tokens and the canonical-text spans it rests on. Cached by the "
            "parent's content hash, extractor, version and prompt version."
        ),
        metadata={"dataset": spec.name},
        check_specs=[_contract_check(key)],
    )
    def propositions(
        context: dg.AssetExecutionContext, warehouse: CodexWarehouse, propositions: PropositionSettings
    ) -> dg.MaterializeResult:
        done = run_propositions(spec, warehouse.get(), _days(context), propositions.build(), context.run.run_id[:8],
                                propositions.max_usd_per_run, propositions.max_usd_per_partition, context.log)
        return dg.MaterializeResult(metadata=propositions_metadata(done),
                                    check_results=[propositions_contract_result(done)])

    return propositions


def build_proposition_embeddings_asset(spec: DatasetSpec, partitions: dg.PartitionsDefinition = DEFAULT_PARTITIONS) -> dg.AssetsDefinition:
    """``[dataset, proposition_embeddings]``, in the same ``embeddings`` concurrency pool as the chunk vectors."""
    @dg.asset(
        key=dg.AssetKey([spec.name, EMBEDDINGS_TABLE]),
        deps=[dg.AssetKey([spec.name, TABLE])],
        group_name=spec.name,
        partitions_def=partitions,
        backfill_policy=BACKFILL,
        pool=EMBEDDINGS_POOL,
        kinds={"parquet", "duckdb"},
        description=(
            f"A vector for every contract-checked {spec.name} proposition, `codex.{spec.name}_proposition_embeddings`; "
            "reused whenever the exact text, model and version are unchanged."
        ),
        metadata={"dataset": spec.name},
    )
    def proposition_embeddings(
        context: dg.AssetExecutionContext, warehouse: CodexWarehouse, embedding: EmbeddingSettings
    ) -> dg.MaterializeResult:
        done = run_proposition_embeddings(spec, warehouse.get(), _days(context), embedding.build())
        return dg.MaterializeResult(metadata=proposition_embeddings_metadata(done))

    return proposition_embeddings


def build_proposition_assets(spec: DatasetSpec, partitions: dg.PartitionsDefinition = DEFAULT_PARTITIONS) -> list[dg.AssetsDefinition]:
    """Both proposition assets, or none for a dataset that is not chunked or does not opt in (``spec.propositions``)."""
    if not (spec.chunked and spec.propositions):
        return []
    return [build_propositions_asset(spec, partitions), build_proposition_embeddings_asset(spec, partitions)]


def proposition_definitions(registry: DatasetRegistry, partitions: dg.PartitionsDefinition) -> dg.Definitions:
    """`[dataset, propositions]` → `[dataset, proposition_embeddings]` for every dataset that opts in."""
    return dg.Definitions(assets=[a for spec in registry for a in build_proposition_assets(spec, partitions)])
