"""Asset factory: the registry's datasets become `[dataset, raw]` → `[dataset, chunks]`."""

import datetime as dt
import logging
import warnings
from collections.abc import Iterator

import dagster as dg

from codex_pipeline.core.contract_check import validate_chunks
from codex_pipeline.core.documents import Reject
from codex_pipeline.datasets import steps as pipeline
from codex_pipeline.datasets.embed_step import embed_day
from codex_pipeline.datasets.registry import DATASETS, DatasetSpec
from codex_pipeline.defs.partitions import daily_partitions
from codex_pipeline.defs.resources import CodexWarehouse, EmbeddingSettings
from codex_pipeline.explore.inspector import token_histogram_markdown
from codex_pipeline.explore.stats import chunk_summary, preview_markdown
from codex_pipeline.sources.tombstones import TOMBSTONE_FILES, Tombstones, read_tombstones, without_tombstones
from codex_pipeline.warehouse.current import (
    IndexChange,
    check_unique_chunk_ids,
    ensure_index,
    landed_from_raw,
    tombstones_table,
    update_index,
)
from codex_pipeline.warehouse.integrity import sweep_dataset
from codex_pipeline.warehouse.redirects import LAST_PUBLISHED, update_redirects
from codex_pipeline.warehouse.storage import INDEX_DIR, Warehouse, ensure_views

# Backfill policies are beta in Dagster 1.13, and a job spanning assets with
# different policies (codex_all, the version sensor's) runs per day and says so on
# every import. Both are deliberate here; keep those two messages out of users' logs.
warnings.filterwarnings("ignore", message="Parameter `backfill_policy`", category=dg.BetaWarning)
warnings.filterwarnings("ignore", message=r"Asset job .* materializes assets with varying BackfillPolicies")

CONTRACT_CHECK = "chunk_contract"

class _SkippedDayFilter(logging.Filter):
    """Drop Dagster's note that a skipped chunks step left its blocking check without result.

    A day with no landing folder skips the chunks step on purpose, and its downstream
    steps are skipped with it; the note would say they "proceed", which they do not.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return "will proceed without gating on it" not in record.getMessage()


logging.getLogger("dagster._core.execution.plan.active").addFilter(_SkippedDayFilter())

UNIQUE_CHECK = "current_chunk_ids_unique"
EMBEDDINGS_POOL = "embeddings"
# raw and chunks write one independent file per day: one run per day parallelizes
# across the run queue and retries a failed day alone.
ONE_RUN_PER_DAY = dg.BackfillPolicy.multi_run(max_partitions_per_run=1)
# embeddings batch better across days (one model load, fuller API batches).
EMBEDDINGS_BACKFILL = dg.BackfillPolicy.multi_run(max_partitions_per_run=5)


def _day(context: dg.AssetExecutionContext) -> dt.date:
    return dt.date.fromisoformat(context.partition_key)


def _set_aside_damaged(context: dg.AssetExecutionContext, wh: Warehouse, dataset: str, days: list[dt.date]) -> list[str]:
    """Move the dataset's damaged files out of its views before this step reads or replaces any."""
    found = sweep_dataset(wh, dataset, days)
    for f in found:
        context.log.warning(f.message())
    if found:  # a view whose last file went must go too; the rejects view gains a part
        tables = {"documents" if f.table == INDEX_DIR else f.table for f in found} | {"rejects"}
        ensure_views(wh, [(dataset, t) for t in sorted(tables)])
    return [f.message() for f in found]


def _rejects_preview(rejects) -> str:
    lines = ["| stage | file | record | reason |", "|---|---|---|---|"]
    for r in rejects.slice(0, 20).to_pylist():
        reason = r["reason"].replace("|", "\\|")
        lines.append(f"| {r['stage']} | {r['source_file']} | {r['record_ref'] or ''} | {reason} |")
    return "\n".join(lines)


def build_raw_asset(spec: DatasetSpec) -> dg.AssetsDefinition:
    @dg.asset(
        key=dg.AssetKey([spec.name, "raw"]),
        backfill_policy=ONE_RUN_PER_DAY,
        group_name=spec.name,
        partitions_def=daily_partitions,
        code_version=spec.source_version,
        kinds={"parquet", "duckdb"},
        description=f"{spec.description} Validated records from landing/{spec.name}/<day>/; bad files go to codex.{spec.name}_rejects.",
        output_required=False,  # a day with no landing folder materializes nothing downstream
        metadata={"dataset": spec.name},
    )
    def raw(context: dg.AssetExecutionContext, warehouse: CodexWarehouse) -> Iterator[dg.MaterializeResult]:
        wh = warehouse.get()
        day = _day(context)
        landing = wh.landing_dir(spec.name, day)
        if not landing.is_dir():
            context.log.warning(f"no landing folder {landing}: the {day} partition of {spec.name} is empty")
        if not landing.is_dir() and not wh.partition_path(spec.name, "raw", day).exists():
            # nothing landed and nothing to retract: yield no materialization, so the
            # day's chunks and embeddings steps are skipped instead of run empty
            context.log.info(f"no landing folder {landing}: nothing to do for {spec.name} on {day}")
            return
        damaged = _set_aside_damaged(context, wh, spec.name, [day])
        with without_tombstones(landing) as folder:  # _deleted.* files are never the reader's input
            loaded = spec.load_day(folder)
        marks = read_tombstones(landing, spec.name) if spec.chunked else _not_applied(landing, spec.name)
        out = pipeline.ingest(spec, day, loaded.documents, loaded.rejects)
        path = wh.write(out.table, spec.name, "raw", day, stamp={"source_version": spec.source_version})
        wh.write(out.rejects, spec.name, "rejects", day, part="ingest")
        change = None
        if spec.chunked:
            marks = marks.split_landed(set(out.table.column("record_id").to_pylist()))
            accepted = tombstones_table(day, marks.tombstones)
            had = wh.partition_path(spec.name, "tombstones", day).exists()
            _write_if_any(wh, accepted, spec.name, "tombstones", day)
            ensure_index(wh, spec.name, spec.snapshot)
            if accepted.num_rows or had:  # the usual day retracts nothing: leave the index alone
                change = update_index(wh, spec.name, day, tombstones=accepted, snapshot=spec.snapshot)
        _write_if_any(wh, pipeline.rejects_table(spec.name, day, marks.rejects), spec.name, "rejects", day, "tombstone")
        created = ensure_views(
            wh, [(spec.name, t) for t in ("raw", "rejects", "documents", "tombstones", "redirects")]
        )
        if out.rejects.num_rows or marks.rejects:
            context.log.warning(
                f"{out.rejects.num_rows + len(marks.rejects)} rejected input(s) in {landing}; see codex.{spec.name}_rejects"
            )
        yield dg.MaterializeResult(
            metadata={
                "landing_dir": dg.MetadataValue.path(str(landing)),
                "documents": out.documents,
                "rejects": out.rejects.num_rows,
                "rejects_preview": dg.MetadataValue.md(_rejects_preview(out.rejects)),
                "tombstones": len(marks.tombstones),
                "tombstone_rejects": len(marks.rejects),
                **_current_metadata(change),
                "path": dg.MetadataValue.path(str(path)),
                "views_created": created,
                "damaged_files_set_aside": damaged,
            }
        )

    return raw


def _not_applied(landing, dataset: str) -> Tombstones:
    """A raw-only dataset has no current corpus: its tombstone files are rejected, not applied."""
    rejects = [
        Reject(name, f"{dataset} is a raw export (not chunked): it has no current corpus to retract "
                        "records from, so this file was not applied", stage="tombstone")
        for name in TOMBSTONE_FILES
        if (landing / name).exists()
    ]
    return Tombstones([], rejects)


def _write_if_any(wh: Warehouse, table, dataset: str, name: str, day: dt.date, part: str | None = None) -> None:
    """A day's file of an often-empty table: written when it has rows, emptied (not removed) by a rerun.

    Removing it could leave the table's view a glob that matches nothing, which DuckDB refuses.
    """
    if table.num_rows or wh.partition_path(dataset, name, day, part).exists():
        wh.write(table, dataset, name, day, part=part)


def _current_metadata(change: IndexChange | None) -> dict[str, int]:
    return change.as_metadata() if change is not None else {}


def build_chunks_asset(spec: DatasetSpec) -> dg.AssetsDefinition:
    chunks_key = dg.AssetKey([spec.name, "chunks"])

    @dg.asset(
        key=chunks_key,
        deps=[dg.AssetKey([spec.name, "raw"])],
        backfill_policy=ONE_RUN_PER_DAY,
        group_name=spec.name,
        partitions_def=daily_partitions,
        code_version=spec.chunking_version,
        kinds={"parquet", "duckdb"},
        description=(
            f"Contract-checked chunk rows of {spec.name} (chunking_version {spec.chunking_version}), "
            f"`codex.{spec.name}_chunks` in DuckDB; ids that vanish on re-chunking go to `codex.{spec.name}_redirects`."
        ),
        metadata={"dataset": spec.name, "chunking_version": spec.chunking_version},
        check_specs=[
            dg.AssetCheckSpec(
                CONTRACT_CHECK,
                asset=chunks_key,
                blocking=True,
                description="pandera chunk contract: ids, exact cl100k counts, dense seq_index, parents, anchors, 1,500-token cap.",
            ),
            dg.AssetCheckSpec(
                UNIQUE_CHECK,
                asset=chunks_key,
                blocking=False,
                description=(
                    f"Every chunk_id appears once in codex.{spec.name}_chunks (the current corpus: each document's "
                    "latest landing, deleted documents left out), as users query it. A warning, not a block: a "
                    "duplicate is already visible in the current view, and holding back this day's embeddings "
                    "would not remove it."
                ),
            ),
        ],
    )
    def chunks(context: dg.AssetExecutionContext, warehouse: CodexWarehouse) -> dg.MaterializeResult:
        wh = warehouse.get()
        day = _day(context)
        damaged = _set_aside_damaged(context, wh, spec.name, [day])
        raw = wh.read(spec.name, "raw", day)
        docs = pipeline.documents_from_raw(raw)
        out = pipeline.chunk(spec, day, docs)
        report = validate_chunks(out.table, {d.doc_id: d.text for d in docs})
        wh.write(out.rejects, spec.name, "rejects", day, part="chunk")
        redirects: dict[str, int] = {}
        if report.passed:  # a quarantined table publishes no ids, so it redirects none
            redirects = update_redirects(wh, spec.name, day, out.table, spec.chunking_version)
            path = wh.write(out.table, spec.name, "chunks", day, stamp={"chunking_version": spec.chunking_version})
            wh.remove(spec.name, "quarantine", day)
            wh.remove(spec.name, LAST_PUBLISHED, day)
        else:  # never let a bad partition feed embeddings: keep it aside for inspection
            # unpublish, but keep the last good file as the baseline for redirects
            wh.move(spec.name, "chunks", LAST_PUBLISHED, day)
            path = wh.write(out.table, spec.name, "quarantine", day, stamp={"chunking_version": spec.chunking_version})
            context.log.error(f"chunk contract failed for {spec.name} {day}: {report.failed_checks}")
        # the day's documents become current only once its chunks are published
        landed = landed_from_raw(raw)
        change = update_index(
            wh, spec.name, day, landed=landed if report.passed else landed.slice(0, 0), snapshot=spec.snapshot
        )
        created = ensure_views(
            wh,
            [(spec.name, t) for t in ("chunks", "rejects", "quarantine", "redirects", "raw", "documents", "embeddings")],
        )
        unique = check_unique_chunk_ids(wh, spec.name)
        if not unique.passed:
            context.log.warning(f"{unique.duplicates} chunk id(s) on more than one row of codex.{spec.name}_chunks")
        summary = chunk_summary(out.table)
        return dg.MaterializeResult(
            metadata={
                "documents": summary["documents"],
                "chunks": summary["chunks"],
                "chunks_by_type": dg.MetadataValue.json(summary["chunks_by_type"]),
                "tokens_p50": summary["tokens"]["p50"],
                "tokens_p95": summary["tokens"]["p95"],
                "tokens_max": summary["tokens"]["max"],
                "tokens_by_type": dg.MetadataValue.json(summary["tokens_by_type"]),
                "rejects": out.rejects.num_rows,
                "redirects": sum(redirects.values()),
                "redirects_by_match": dg.MetadataValue.json(redirects),
                "preview": dg.MetadataValue.md(preview_markdown(out.table)),
                "token_histogram": dg.MetadataValue.md(
                    token_histogram_markdown(out.table, title=f"{spec.name} {day.isoformat()}")
                ),
                "path": dg.MetadataValue.path(str(path)),
                "chunking_version": spec.chunking_version,
                **_current_metadata(change),
                "views_created": created,
                "damaged_files_set_aside": damaged,
            },
            check_results=[
                dg.AssetCheckResult(
                    check_name=CONTRACT_CHECK,
                    passed=report.passed,
                    severity=dg.AssetCheckSeverity.ERROR,
                    metadata={
                        "rows": report.rows,
                        "failed_checks": report.failed_checks,
                        "failures": dg.MetadataValue.json(report.failures),
                    },
                ),
                dg.AssetCheckResult(
                    check_name=UNIQUE_CHECK,
                    passed=unique.passed,
                    severity=dg.AssetCheckSeverity.WARN,
                    metadata={
                        "current_rows": unique.rows,
                        "duplicated_chunk_ids": unique.duplicates,
                        "examples": dg.MetadataValue.json(
                            [{"chunk_id": c, "rows": n, "doc_ids": list(d)} for c, n, d in unique.examples]
                        ),
                    },
                ),
            ],
        )

    return chunks


def build_embeddings_asset(spec: DatasetSpec) -> dg.AssetsDefinition:
    @dg.asset(
        key=dg.AssetKey([spec.name, "embeddings"]),
        deps=[dg.AssetKey([spec.name, "chunks"])],
        group_name=spec.name,
        partitions_def=daily_partitions,
        backfill_policy=EMBEDDINGS_BACKFILL,
        pool=EMBEDDINGS_POOL,
        kinds={"parquet", "duckdb"},
        description=(
            f"A vector for every contract-checked {spec.name} chunk, `codex.{spec.name}_embeddings`. "
            "Vectors are reused whenever the exact input text, model and version are unchanged."
        ),
        metadata={"dataset": spec.name},
    )
    def embeddings(context: dg.AssetExecutionContext, warehouse: CodexWarehouse, embedding: EmbeddingSettings) -> dg.MaterializeResult:
        wh = warehouse.get()
        embedder = embedding.build()
        damaged = _set_aside_damaged(context, wh, spec.name, [dt.date.fromisoformat(k) for k in context.partition_keys])
        totals: dict[str, int] = {}
        per_day = {}
        for key in context.partition_keys:
            done = embed_day(wh, spec.name, dt.date.fromisoformat(key), embedder)
            counts = done.counts.as_dict()
            per_day[key] = {k: counts[k] for k in ("inputs", "reused", "embedded", "requests")}
            for k, v in counts.items():
                totals[k] = totals.get(k, 0) + v
            context.log.info(f"{spec.name} {key}: {per_day[key]}")
        created = ensure_views(wh, [(spec.name, "embeddings"), (spec.name, "chunks")])
        return dg.MaterializeResult(
            metadata={
                "inputs": totals.get("inputs", 0),
                "reused": totals.get("reused", 0),
                "embedded": totals.get("embedded", 0),
                "requests": totals.get("requests", 0),
                "recovered_from_checkpoint": totals.get("recovered", 0),
                "long_inputs": totals.get("long_inputs", 0),
                "embedding_model": embedder.model,
                "embedding_version": embedder.version,
                "dimensions": embedder.dimensions,
                "by_partition": dg.MetadataValue.json(per_day),
                "views_created": created,
                "damaged_files_set_aside": damaged,
            }
        )

    return embeddings


def build_dataset_assets(spec: DatasetSpec) -> list[dg.AssetsDefinition]:
    assets = [build_raw_asset(spec)]
    if spec.chunked:
        assets += [build_chunks_asset(spec), build_embeddings_asset(spec)]
    return assets


assets_by_dataset: dict[str, list[dg.AssetsDefinition]] = {
    spec.name: build_dataset_assets(spec) for spec in DATASETS
}
dataset_assets = [a for assets in assets_by_dataset.values() for a in assets]
