"""Sensors that keep partitions in step with the chunking and embedding versions."""

import json
from collections.abc import Sequence

import dagster as dg

from codex_pipeline.datasets.registry import DATASETS, DatasetSpec
from codex_pipeline.datasets.staleness import stale_partitions
from codex_pipeline.defs.resources import CodexWarehouse, EmbeddingSettings
from codex_pipeline.propositions import configured_extractor_kind, extractor_identity
from codex_pipeline.propositions.staleness import stale_proposition_partitions

MAX_RUNS_PER_TICK = 5
SEARCH_INDEX = "search_index"  # the [dataset, search_index] asset (defs/search_assets.py)


def build_version_sensor(
    specs: Sequence[DatasetSpec] = DATASETS, max_runs_per_tick: int = MAX_RUNS_PER_TICK
) -> dg.SensorDefinition:
    """Request the runs that bring every stale partition up to date.

    A partition is stale when its raw records were read with another `source_version`
    (re-ingest, re-chunk, re-embed), its chunks were built with another
    `chunking_version` (re-chunk and re-embed), or its embeddings with another
    model/version (re-embed).
    At most ``max_runs_per_tick`` runs per
    tick; the cursor remembers what was requested so an in-flight partition is not
    asked for again, and run keys make Dagster drop any duplicate.
    """
    chunked = [s for s in specs if s.chunked]
    # every re-chunk or re-embed ends with [ds, search_index], so the index never lags what the sensor rewrote;
    # concurrent runs coalesce: builds of a dataset are serialized and one that finds its inputs indexed writes nothing
    targets = [dg.AssetKey([s.name, t]) for s in chunked for t in ("raw", "chunks", "embeddings", SEARCH_INDEX)]
    steps = {
        "raw": ("raw", "chunks", "embeddings", SEARCH_INDEX),
        "chunks": ("chunks", "embeddings", SEARCH_INDEX),
        "embeddings": ("embeddings", SEARCH_INDEX),
    }
    # seed 002: propositions follow their chunks' version, the extractor's and the embedding model's
    with_props = [s.name for s in chunked if s.propositions]
    targets += [dg.AssetKey([n, t]) for n in with_props for t in ("propositions", "proposition_embeddings")]
    steps |= {"propositions": ("propositions", "proposition_embeddings"), "proposition_embeddings": ("proposition_embeddings",)}

    @dg.sensor(
        name="codex_version_sensor",
        target=dg.AssetSelection.assets(*targets),
        minimum_interval_seconds=60,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Re-ingests, re-chunks and re-embeds partitions built with an older source_version, chunking_version or embedding model/version.",
    )
    def version_sensor(
        context: dg.SensorEvaluationContext, warehouse: CodexWarehouse, embedding: EmbeddingSettings
    ) -> dg.SensorResult:
        embedder = embedding.build()
        stale = stale_partitions(warehouse.get(), chunked, embedder.model, embedder.version)
        stale += stale_proposition_partitions(  # type: ignore[arg-type]  # same fields as StalePartition
            warehouse.get(), with_props, extractor_identity(configured_extractor_kind()), embedder.model, embedder.version
        )
        requested: list[str] = json.loads(context.cursor)["requested"] if context.cursor else []
        stale_keys = {s.run_key for s in stale}
        pending = [s for s in stale if s.run_key not in requested]
        batch = pending[:max_runs_per_tick]
        runs = [
            dg.RunRequest(
                run_key=s.run_key,
                partition_key=s.day.isoformat(),
                asset_selection=[dg.AssetKey([s.dataset, t]) for t in steps[s.target]],
                tags={"codex/reason": s.reason, "codex/dataset": s.dataset, "codex/trigger": "version_sensor"},
            )
            for s in batch
        ]
        # forget keys that are no longer stale (their runs finished) so the cursor stays small
        cursor = json.dumps({"requested": [k for k in requested if k in stale_keys] + [s.run_key for s in batch]})
        if not runs:
            return dg.SensorResult(skip_reason=f"{len(stale)} stale partition(s), all already requested" if stale else "every partition is up to date", cursor=cursor)
        context.log.info(f"requesting {len(runs)} of {len(pending)} pending stale partition(s)")
        return dg.SensorResult(run_requests=runs, cursor=cursor)

    return version_sensor


version_sensor = build_version_sensor()
