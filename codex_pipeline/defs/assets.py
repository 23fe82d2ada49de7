"""Asset factory: the registry's datasets become `[dataset, raw]` → `[dataset, chunks]`."""

import datetime as dt
import logging
import warnings
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pyarrow.parquet as pq

from codex_pipeline.core.contract import CHUNK_SCHEMA, RAW_SCHEMA, REJECT_SCHEMA
from codex_pipeline.core.contract_check import ContractReport, validate_chunks
from codex_pipeline.core.documents import Reject
from codex_pipeline.datasets import steps as pipeline
from codex_pipeline.datasets.embed_step import UNITS_TABLE, embed_day
from codex_pipeline.datasets.registry import DATASETS, DatasetSpec
from codex_pipeline.datasets.validation import validate_partition
from codex_pipeline.defs.partitions import daily_partitions
from codex_pipeline.defs.resources import CodexWarehouse, EmbeddingSettings
from codex_pipeline.explore.inspector import token_histogram_markdown
from codex_pipeline.explore.stats import chunk_summary, preview_markdown
from codex_pipeline.redirects.matching import LAST_PUBLISHED, update_redirects
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
from codex_pipeline.warehouse.storage import INDEX_DIR, Warehouse, ensure_views

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

CONTRACT_CHECK = "chunk_contract"
UNIQUE_CHECK = "current_chunk_ids_unique"
ADDRESS_CHECK = "chunk_addresses"
EMBEDDINGS_POOL = "embeddings"
# Every asset writes one independent file per day: one run per day parallelizes across the
# run queue, retries a failed day alone, and holds the day's raw -> chunks -> embeddings in
# one run, so a backfill never waits for the backfill daemon's next 30-s tick between a day's
# chunks and its embeddings. Batching embeddings over 5 days per run (stop 10 and before)
# left two Celery workers idle at those ticks: bench/bench_scale_out.py, 2 workers over 1,
# 1.44x -> 1.67x (docs/deployment.md).
ONE_RUN_PER_DAY = dg.BackfillPolicy.multi_run(max_partitions_per_run=1)


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
        output_required=False,  # a day with no landing folder materializes nothing downstream
        kinds={"parquet", "duckdb"},
        description=f"{spec.description} Validated records from landing/{spec.name}/<day>/; bad files go to codex.{spec.name}_rejects.",
        metadata={"dataset": spec.name},
    )
    def raw(context: dg.AssetExecutionContext, warehouse: CodexWarehouse) -> Iterator[dg.MaterializeResult]:
        wh = warehouse.get()
        day = _day(context)
        landing = wh.landing_dir(spec.name, day)
        if not landing.is_dir() and not wh.partition_path(spec.name, "raw", day).exists():
            # nothing landed and nothing to retract: yield no materialization, so the
            # day's chunks and embeddings steps are skipped instead of run empty
            context.log.info(f"no landing folder {landing}: nothing to do for {spec.name} on {day}")
            return
        damaged = _set_aside_damaged(context, wh, spec.name, [day])
        if not landing.is_dir():
            context.log.warning(f"no landing folder {landing}: the {day} partition of {spec.name} is empty")
        rejected: list[Reject] = []
        ingest = pipeline.Ingest(spec, day, rejected)
        # documents stream from the reader into bounded row groups: memory does not grow with the day
        with (
            without_tombstones(landing) as folder,  # _deleted.* files are never the reader's input
            wh.writer(spec.name, "raw", day, RAW_SCHEMA, stamp={"source_version": spec.source_version}) as out,
        ):
            for table in ingest.tables(spec.documents(folder, rejected)):
                out.write(table)
            path = out.publish()
        rejects = pipeline.rejects_table(spec.name, day, rejected)
        marks = read_tombstones(landing, spec.name) if spec.chunked else _not_applied(landing, spec.name)
        wh.write(rejects, spec.name, "rejects", day, part="ingest")
        change = None
        if spec.chunked:
            marks = marks.split_landed(set(ingest.record_ids))
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
        if rejects.num_rows or marks.rejects:
            context.log.warning(
                f"{rejects.num_rows + len(marks.rejects)} rejected input(s) in {landing}; see codex.{spec.name}_rejects"
            )
        yield dg.MaterializeResult(
            metadata={
                "landing_dir": dg.MetadataValue.path(str(landing)),
                "documents": ingest.documents,
                "rejects": rejects.num_rows,
                "rejects_preview": dg.MetadataValue.md(_rejects_preview(rejects)),
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


SUMMARY_COLUMNS = ["doc_id", "chunk_type", "token_count"]
"""What the chunks metadata (counts, token percentiles, histogram) needs of every row: kept across row groups."""


def _new_chunks(wh: Warehouse, dataset: str, day: dt.date, written: Path) -> pa.Table:
    """The new chunk rows redirects compare with the published ones: read back only when there are any."""
    if wh.partition_path(dataset, "chunks", day).exists() or wh.partition_path(dataset, LAST_PUBLISHED, day).exists() \
            or wh.partition_path(dataset, "redirects", day).exists():
        return pq.read_table(written)
    return CHUNK_SCHEMA.empty_table()


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
            dg.AssetCheckSpec(
                ADDRESS_CHECK,
                asset=chunks_key,
                blocking=False,
                description=(
                    "Seed-003 validator on a 20-chunk sample (as `codex validate`): unique ids, locator order equal to "
                    "reading order within each section / page, offsets that reproduce the text, ids unchanged when "
                    "the sampled raw records are re-chunked. A warning, not a block."
                ),
            ),
        ],
    )
    def chunks(context: dg.AssetExecutionContext, warehouse: CodexWarehouse) -> dg.MaterializeResult:
        wh = warehouse.get()
        day = _day(context)
        damaged = _set_aside_damaged(context, wh, spec.name, [day])
        chunked_at = dt.datetime.now(dt.UTC)
        reports: list[ContractReport] = []
        reject_parts, landed_parts, slim_parts = [], [], []
        first: tuple[pa.Table, list] | None = None  # the first row group's chunks and documents: preview, address sample
        with wh.writer(spec.name, "chunks", day, CHUNK_SCHEMA, stamp={"chunking_version": spec.chunking_version}) as out:
            for raw in wh.read_groups(spec.name, "raw", day):  # one bounded row group at a time
                docs = pipeline.documents_from_raw(raw)
                part = pipeline.chunk(spec, day, docs, chunked_at)
                reports.append(validate_chunks(part.table, {d.doc_id: d.text for d in docs}))
                out.write(part.table)
                reject_parts.append(part.rejects)
                landed_parts.append(landed_from_raw(raw))
                slim_parts.append(part.table.select(SUMMARY_COLUMNS))
                if first is None:
                    first = (part.table, docs)
            report = ContractReport.merge(reports)
            rejects = pa.concat_tables([REJECT_SCHEMA.empty_table(), *reject_parts])
            wh.write(rejects, spec.name, "rejects", day, part="chunk")
            redirects: dict[str, int] = {}
            if report.passed:  # a quarantined table publishes no ids, so it redirects none
                out.close()
                redirects = update_redirects(wh, spec.name, day, _new_chunks(wh, spec.name, day, out.tmp), spec.chunking_version)
                path = out.publish()
                wh.remove(spec.name, "quarantine", day)
                wh.remove(spec.name, LAST_PUBLISHED, day)
            else:  # never let a bad partition feed embeddings: keep it aside for inspection
                # unpublish, but keep the last good file as the baseline for redirects
                wh.move(spec.name, "chunks", LAST_PUBLISHED, day)
                path = out.publish(to=wh.partition_path(spec.name, "quarantine", day))
                context.log.error(f"chunk contract failed for {spec.name} {day}: {report.failed_checks}")
        # the day's documents become current only once its chunks are published
        landed = pa.concat_tables(landed_parts) if landed_parts else landed_from_raw(RAW_SCHEMA.empty_table())
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
        sample, sample_docs = first or (CHUNK_SCHEMA.empty_table(), [])
        addresses = validate_partition(spec, day, sample, sample_docs)
        if not addresses.passed:
            context.log.warning(f"chunk addresses of {spec.name} {day}: " + "; ".join(p.line() for p in addresses.problems[:5]))
        slim = pa.concat_tables([CHUNK_SCHEMA.empty_table().select(SUMMARY_COLUMNS), *slim_parts])
        summary = chunk_summary(slim)
        return dg.MaterializeResult(
            metadata={
                "documents": summary["documents"],
                "chunks": summary["chunks"],
                "chunks_by_type": dg.MetadataValue.json(summary["chunks_by_type"]),
                "tokens_p50": summary["tokens"]["p50"],
                "tokens_p95": summary["tokens"]["p95"],
                "tokens_max": summary["tokens"]["max"],
                "tokens_by_type": dg.MetadataValue.json(summary["tokens_by_type"]),
                "rejects": rejects.num_rows,
                "redirects": sum(redirects.values()),
                "redirects_by_match": dg.MetadataValue.json(redirects),
                "preview": dg.MetadataValue.md(preview_markdown(sample)),
                "token_histogram": dg.MetadataValue.md(
                    token_histogram_markdown(slim, title=f"{spec.name} {day.isoformat()}")
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
                dg.AssetCheckResult(
                    check_name=ADDRESS_CHECK,
                    passed=addresses.passed,
                    severity=dg.AssetCheckSeverity.WARN,
                    metadata={
                        "sampled_chunks": addresses.sampled,
                        "failed_checks": addresses.failed_checks,
                        "problems": dg.MetadataValue.json([p.line() for p in addresses.problems]),
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
        backfill_policy=ONE_RUN_PER_DAY,
        pool=EMBEDDINGS_POOL,
        kinds={"parquet", "duckdb"},
        description=(
            f"A vector for every contract-checked {spec.name} chunk, `codex.{spec.name}_embeddings`. "
            "Vectors are reused whenever the exact input text, model and version are unchanged. Chunks with several "
            f"evidence units get a vector per unit too, `codex.{spec.name}_evidence_units`, for search."
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
            unit_counts = done.unit_counts.as_dict()
            per_day[key] = {**{k: counts[k] for k in ("inputs", "reused", "embedded", "requests")},
                            "units": done.units, "units_embedded": unit_counts["embedded"]}
            for k, v in counts.items():
                totals[k] = totals.get(k, 0) + v
            for k, v in unit_counts.items():
                totals[f"units_{k}"] = totals.get(f"units_{k}", 0) + v
            context.log.info(f"{spec.name} {key}: {per_day[key]}")
        created = ensure_views(wh, [(spec.name, "embeddings"), (spec.name, UNITS_TABLE), (spec.name, "chunks")])
        return dg.MaterializeResult(
            metadata={
                "inputs": totals.get("inputs", 0),
                "reused": totals.get("reused", 0),
                "embedded": totals.get("embedded", 0),
                "requests": totals.get("requests", 0) + totals.get("units_requests", 0),  # chunk and unit inputs
                "recovered_from_checkpoint": totals.get("recovered", 0) + totals.get("units_recovered", 0),
                "long_inputs": totals.get("long_inputs", 0),
                "evidence_units": totals.get("units_inputs", 0),
                "evidence_units_reused": totals.get("units_reused", 0),
                "evidence_units_embedded": totals.get("units_embedded", 0),
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
