"""The chunks step of a day: raw rows become contract-checked chunks, published or quarantined.

Raw row groups are chunked and checked one at a time into one file, so memory stays
bounded whatever the day's size. A file that passes the chunk contract is published
(ids that vanished since the last published version get redirects) and its documents
join the current corpus; one that fails is kept aside in ``quarantine`` and the last
good file becomes the redirect baseline, so a bad partition never feeds embeddings.
"""

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from codex_pipeline.core.contract import CHUNK_SCHEMA, RAW_SCHEMA, REJECT_SCHEMA
from codex_pipeline.core.contract_check import ContractReport, validate_chunks
from codex_pipeline.datasets import steps
from codex_pipeline.datasets.registry import DatasetSpec
from codex_pipeline.explore.inspector import token_histogram_markdown
from codex_pipeline.explore.stats import chunk_summary, preview_markdown
from codex_pipeline.pipeline.housekeeping import set_aside_damaged
from codex_pipeline.pipeline.reporting import Recorder
from codex_pipeline.pipeline.results import ChunksDayResult, ChunkSummary, StepLog
from codex_pipeline.redirects.matching import LAST_PUBLISHED, update_redirects
from codex_pipeline.warehouse.current import landed_from_raw, update_index
from codex_pipeline.warehouse.storage import PartitionWriter, Warehouse, ensure_views

CHUNKS_VIEWS = ("chunks", "rejects", "quarantine", "redirects", "raw", "documents", "embeddings")
SUMMARY_COLUMNS = ["doc_id", "chunk_type", "token_count"]
"""What the summary (counts, token percentiles, histogram) needs of every row: kept across row groups."""


@dataclass
class _Chunked:
    """What chunking the day's row groups gathered besides the file itself."""

    reports: list[ContractReport] = field(default_factory=list)
    rejects: list[pa.Table] = field(default_factory=lambda: [REJECT_SCHEMA.empty_table()])
    landed: list[pa.Table] = field(default_factory=list)
    slim: list[pa.Table] = field(default_factory=lambda: [CHUNK_SCHEMA.empty_table().select(SUMMARY_COLUMNS)])
    first: pa.Table | None = None  # the first row group's chunks: the preview


def run_chunks_day(spec: DatasetSpec, wh: Warehouse, day: dt.date, log: StepLog | None = None) -> ChunksDayResult:
    """Chunk the day's ``raw`` file, check the contract, publish or quarantine, and move the current corpus."""
    rec = Recorder(log)
    damaged = set_aside_damaged(wh, spec.name, [day], rec)
    with wh.writer(spec.name, "chunks", day, CHUNK_SCHEMA, stamp={"chunking_version": spec.chunking_version}) as out:
        done = _chunk_day(spec, wh, day, out)
        report = ContractReport.merge(done.reports)
        rejects = pa.concat_tables(done.rejects)
        wh.write(rejects, spec.name, "rejects", day, part="chunk")
        path, redirects = _publish(spec, wh, day, out, report, rec)
    # the day's documents become current only once its chunks are published
    landed = pa.concat_tables(done.landed) if done.landed else landed_from_raw(RAW_SCHEMA.empty_table())
    change = update_index(wh, spec.name, day, landed=landed if report.passed else landed.slice(0, 0),
                          snapshot=spec.snapshot)
    created = ensure_views(wh, [(spec.name, t) for t in CHUNKS_VIEWS])
    slim = pa.concat_tables(done.slim)
    return ChunksDayResult(
        spec.name, day, spec.chunking_version, report, _summary(slim), path, rejects=rejects.num_rows,
        redirects=redirects, preview=preview_markdown(done.first if done.first is not None else CHUNK_SCHEMA.empty_table()),
        token_histogram=token_histogram_markdown(slim, title=f"{spec.name} {day.isoformat()}"),
        current=change.as_metadata(), views_created=tuple(created), damaged=damaged, warnings=tuple(rec.warnings),
    )


def _chunk_day(spec: DatasetSpec, wh: Warehouse, day: dt.date, out: PartitionWriter) -> _Chunked:
    """Chunk and contract-check the raw file one bounded row group at a time, writing into ``out``."""
    chunked_at = dt.datetime.now(dt.UTC)  # one time stamp for the whole day
    done = _Chunked()
    for raw in wh.read_groups(spec.name, "raw", day):
        docs = steps.documents_from_raw(raw)
        part = steps.chunk(spec, day, docs, chunked_at)
        done.reports.append(validate_chunks(part.table, {d.doc_id: d.text for d in docs}))
        out.write(part.table)
        done.rejects.append(part.rejects)
        done.landed.append(landed_from_raw(raw))
        done.slim.append(part.table.select(SUMMARY_COLUMNS))
        if done.first is None:
            done.first = part.table
    return done


def _publish(
    spec: DatasetSpec, wh: Warehouse, day: dt.date, out: PartitionWriter, report: ContractReport, rec: Recorder
) -> tuple[Path, dict[str, int]]:
    """Publish a file that passed the contract (with its redirects), else quarantine it; the path written."""
    if not report.passed:  # never let a bad partition feed embeddings: keep it aside for inspection
        # unpublish, but keep the last good file as the baseline for redirects; a quarantined file redirects nothing
        wh.move(spec.name, "chunks", LAST_PUBLISHED, day)
        path = out.publish(to=wh.partition_path(spec.name, "quarantine", day))
        rec.error(f"chunk contract failed for {spec.name} {day}: {report.failed_checks}")
        return path, {}
    out.close()
    redirects = update_redirects(wh, spec.name, day, _new_chunks(wh, spec.name, day, out.tmp), spec.chunking_version)
    path = out.publish()
    wh.remove(spec.name, "quarantine", day)
    wh.remove(spec.name, LAST_PUBLISHED, day)
    return path, redirects


def _new_chunks(wh: Warehouse, dataset: str, day: dt.date, written: Path) -> pa.Table:
    """The new chunk rows redirects compare with the published ones: read back only when there are any."""
    if any(wh.partition_path(dataset, t, day).exists() for t in ("chunks", LAST_PUBLISHED, "redirects")):
        return pq.read_table(written)
    return CHUNK_SCHEMA.empty_table()


def _summary(slim: pa.Table) -> ChunkSummary:
    s = chunk_summary(slim)
    return ChunkSummary(s["documents"], s["chunks"], s["chunks_by_type"], s["tokens"], s["tokens_by_type"])
