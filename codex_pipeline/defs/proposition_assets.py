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
from codex_pipeline.defs.partitions import DEFAULT_PARTITIONS
from codex_pipeline.defs.resources import CodexWarehouse, EmbeddingSettings, PropositionSettings
from codex_pipeline.propositions.base import Extractor
from codex_pipeline.propositions.run import PropositionsRun, run_proposition_embeddings, run_propositions
from codex_pipeline.propositions.table import EMBEDDINGS_TABLE, TABLE

CONTRACT_CHECK = "propositions_contract"
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
        extractor = propositions.build()
        run = run_propositions(warehouse.get(), spec.name, _days(context), extractor, context.run.run_id[:8],
                               propositions.max_usd_per_run, propositions.max_usd_per_partition)
        for line in run.errors:
            context.log.error(line)
        for line in run.warnings:
            context.log.warning(line)
        return _propositions_result(run, extractor)

    return propositions


def _propositions_result(run: PropositionsRun, extractor: Extractor) -> dg.MaterializeResult:
    describe = getattr(extractor, "describe", None)
    return dg.MaterializeResult(
        metadata={
            **{k: (round(v, 6) if k == "cost_usd" else int(v)) for k, v in run.totals.items()},
            "extractor": extractor.name,
            "extractor_version": extractor.version,
            "prompt_version": extractor.prompt_version,
            "extractor_config": dg.MetadataValue.json(describe() if describe else {"extractor": extractor.name}),
            "cost_cap_reached": bool(run.stopped),
            "cost_cap_message": "; ".join(run.stopped) or "not reached",
            "run_cost_usd": round(run.run_cost_usd, 6),
            "by_partition": dg.MetadataValue.json(run.per_day),
            "views_created": run.views_created,
        },
        check_results=[
            dg.AssetCheckResult(
                check_name=CONTRACT_CHECK,
                passed=not run.failures,
                severity=dg.AssetCheckSeverity.ERROR,
                metadata={"failed_checks": sorted({str(f["check"]) for f in run.failures}),
                          "failures": dg.MetadataValue.json(run.failures)},
            )
        ],
    )


def build_proposition_embeddings_asset(spec: DatasetSpec, partitions: dg.PartitionsDefinition = DEFAULT_PARTITIONS) -> dg.AssetsDefinition:
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
        embedder = embedding.build()
        run = run_proposition_embeddings(warehouse.get(), spec.name, _days(context), embedder)
        return dg.MaterializeResult(
            metadata={
                **{k: run.totals.get(k, 0) for k in ("inputs", "reused", "embedded", "requests")},
                "embedding_model": embedder.model,
                "embedding_version": embedder.version,
                "views_created": run.views_created,
            }
        )

    return proposition_embeddings


def build_proposition_assets(spec: DatasetSpec, partitions: dg.PartitionsDefinition = DEFAULT_PARTITIONS) -> list[dg.AssetsDefinition]:
    if not (spec.chunked and spec.propositions):
        return []
    return [build_propositions_asset(spec, partitions), build_proposition_embeddings_asset(spec, partitions)]


def proposition_definitions(registry: DatasetRegistry, partitions: dg.PartitionsDefinition) -> dg.Definitions:
    """`[dataset, propositions]` → `[dataset, proposition_embeddings]` for every dataset that opts in."""
    return dg.Definitions(assets=[a for spec in registry for a in build_proposition_assets(spec, partitions)])
