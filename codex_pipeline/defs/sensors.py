"""Sensors that keep partitions in step with the chunking and embedding versions."""

import json
from collections.abc import Sequence

import dagster as dg

from codex_pipeline.datasets.registry import DatasetSpec
from codex_pipeline.datasets.staleness import StalePartition, stale_partitions
from codex_pipeline.defs.resources import CodexWarehouse, EmbeddingSettings, PropositionSettings
from codex_pipeline.propositions import extractor_identity
from codex_pipeline.propositions.staleness import stale_proposition_partitions

MAX_RUNS_PER_TICK = 5
SEARCH_INDEX = "search_index"  # the [dataset, search_index] asset (defs/search_assets.py)


# what a stale target's run must rebuild: every re-ingest, re-chunk or re-embed ends with
# [ds, search_index], so the index never lags what the sensor rewrote; concurrent runs coalesce:
# builds of a dataset are serialized and one that finds its inputs indexed writes nothing
STEPS: dict[str, tuple[str, ...]] = {
    "raw": ("raw", "chunks", "embeddings", SEARCH_INDEX),
    "chunks": ("chunks", "embeddings", SEARCH_INDEX),
    "embeddings": ("embeddings", SEARCH_INDEX),
    # propositions follow their chunks' version, the extractor's and the embedding model's
    "propositions": ("propositions", "proposition_embeddings"),
    "proposition_embeddings": ("proposition_embeddings",),
}
DESCRIPTION = ("Re-ingests, re-chunks and re-embeds partitions built with an older source_version, "
               "chunking_version or embedding model/version.")


def _targets(chunked: Sequence[DatasetSpec], with_props: Sequence[str]) -> list[dg.AssetKey]:
    keys = [dg.AssetKey([s.name, t]) for s in chunked for t in STEPS["raw"]]
    return keys + [dg.AssetKey([n, t]) for n in with_props for t in STEPS["propositions"]]


def _stale(warehouse: CodexWarehouse, embedding: EmbeddingSettings, propositions: PropositionSettings,
           chunked: Sequence[DatasetSpec], with_props: Sequence[str]) -> list[StalePartition]:
    embedder = embedding.build()
    stale = stale_partitions(warehouse.get(), chunked, embedder.model, embedder.version)
    return stale + stale_proposition_partitions(  # type: ignore[operator]  # same fields as StalePartition
        warehouse.get(), with_props, extractor_identity(propositions.kind), embedder.model, embedder.version
    )


def _run_request(s: StalePartition) -> dg.RunRequest:
    return dg.RunRequest(
        run_key=s.run_key,
        partition_key=s.day.isoformat(),
        asset_selection=[dg.AssetKey([s.dataset, t]) for t in STEPS[s.target]],
        tags={"codex/reason": s.reason, "codex/dataset": s.dataset, "codex/trigger": "version_sensor"},
    )


def next_batch(
    stale: Sequence[StalePartition], cursor: str | None, limit: int
) -> tuple[list[StalePartition], int, str]:
    """The next ``limit`` stale partitions not requested yet, how many are pending, and the new cursor.

    Keys that are no longer stale (their runs finished) are forgotten, so the cursor stays small.
    """
    requested: list[str] = json.loads(cursor)["requested"] if cursor else []
    stale_keys = {s.run_key for s in stale}
    pending = [s for s in stale if s.run_key not in requested]
    batch = pending[:limit]
    cursor = json.dumps({"requested": [k for k in requested if k in stale_keys] + [s.run_key for s in batch]})
    return batch, len(pending), cursor


def build_version_sensor(
    specs: Sequence[DatasetSpec], max_runs_per_tick: int = MAX_RUNS_PER_TICK
) -> dg.SensorDefinition:
    """Request the runs that bring every stale partition up to date.

    A partition is stale when its raw records were read with another `source_version`
    (re-ingest, re-chunk, re-embed), its chunks were built with another
    `chunking_version` (re-chunk and re-embed), or its embeddings with another
    model/version (re-embed). At most ``max_runs_per_tick`` runs per tick; the cursor
    remembers what was requested so an in-flight partition is not asked for again,
    and run keys make Dagster drop any duplicate.
    """
    chunked = [s for s in specs if s.chunked]
    with_props = [s.name for s in chunked if s.propositions]

    @dg.sensor(name="codex_version_sensor", target=dg.AssetSelection.assets(*_targets(chunked, with_props)),
               minimum_interval_seconds=60, default_status=dg.DefaultSensorStatus.RUNNING, description=DESCRIPTION)
    def version_sensor(
        context: dg.SensorEvaluationContext, warehouse: CodexWarehouse, embedding: EmbeddingSettings,
        propositions: PropositionSettings,
    ) -> dg.SensorResult:
        stale = _stale(warehouse, embedding, propositions, chunked, with_props)
        batch, pending, cursor = next_batch(stale, context.cursor, max_runs_per_tick)
        if not batch:
            why = f"{len(stale)} stale partition(s), all already requested" if stale else "every partition is up to date"
            return dg.SensorResult(skip_reason=why, cursor=cursor)
        context.log.info(f"requesting {len(batch)} of {pending} pending stale partition(s)")
        return dg.SensorResult(run_requests=[_run_request(s) for s in batch], cursor=cursor)

    return version_sensor

