"""The chunks step of a day: raw rows become contract-checked chunks, published or quarantined.

Raw row groups are chunked and checked one at a time into one file, so memory stays
bounded whatever the day's size. A document whose chunks break the contract is left out
of the file: its rows go to ``quarantine`` (``<day>.documents.parquet``, with the rules
each row failed in ``contract_failure``) and the document to the rejects, named with
those rules, so one bad document never holds back the others of its day. The file is
then published (ids that vanished since the last published version get redirects) and
its documents join the current corpus. Only a failure no row can be blamed for (a
column of the wrong type) keeps the whole file aside in ``quarantine``, the last good
file becoming the redirect baseline, so a bad partition never feeds embeddings.
"""

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from codex_pipeline.core.contract import CHUNK_SCHEMA, RAW_SCHEMA, REJECT_SCHEMA
from codex_pipeline.core.contract_check import ContractReport, validate_chunks
from codex_pipeline.core.documents import Reject
from codex_pipeline.datasets import steps
from codex_pipeline.datasets.registry import DatasetSpec
from codex_pipeline.explore.inspector import token_histogram_markdown
from codex_pipeline.explore.stats import chunk_summary, preview_markdown
from codex_pipeline.pipeline.housekeeping import set_aside_damaged
from codex_pipeline.pipeline.reporting import Recorder
from codex_pipeline.pipeline.results import ChunksDayResult, ChunkSummary, StepLog
from codex_pipeline.redirects.matching import LAST_PUBLISHED, update_redirects
from codex_pipeline.warehouse.catalog import ensure_views
from codex_pipeline.warehouse.current import landed_from_raw, update_index
from codex_pipeline.warehouse.storage import PartitionWriter, Warehouse

CHUNKS_VIEWS = ("chunks", "rejects", "quarantine", "redirects", "raw", "documents", "embeddings")
DOCUMENTS_QUARANTINE = "documents"
"""``quarantine/<day>.documents.parquet``: the rows of the day's documents the contract rejected."""
NOTHING_PASSED = "no document of the day passed the contract"
SUMMARY_COLUMNS = ["doc_id", "chunk_type", "token_count"]
"""What the summary (counts, token percentiles, histogram) needs of every row: kept across row groups."""


@dataclass
class _Chunked:
    """What chunking the day's row groups gathered besides the file itself."""

    reports: list[ContractReport] = field(default_factory=list)
    rejects: list[pa.Table] = field(default_factory=lambda: [REJECT_SCHEMA.empty_table()])
    landed: list[pa.Table] = field(default_factory=list)
    quarantined: list[pa.Table] = field(default_factory=list)  # rows of rejected documents, with their reason
    slim: list[pa.Table] = field(default_factory=lambda: [CHUNK_SCHEMA.empty_table().select(SUMMARY_COLUMNS)])
    first: pa.Table | None = None  # the first row group's chunks: the preview


def run_chunks_day(spec: DatasetSpec, wh: Warehouse, day: dt.date, log: StepLog | None = None) -> ChunksDayResult:
    """Chunk the day's ``raw`` file, check the contract, publish or quarantine, and move the current corpus."""
    rec = Recorder(log)
    damaged = set_aside_damaged(wh, spec.name, [day], rec)
    with wh.writer(spec.name, "chunks", day, CHUNK_SCHEMA, stamp={"chunking_version": spec.chunking_version}) as out:
        done = _chunk_day(spec, wh, day, out)
        report = ContractReport.merge(done.reports)
        if report.rejected_documents and not out.rows:  # no document passed: blame the chunker, not a document
            report.unattributed.append(NOTHING_PASSED)
        rejects = pa.concat_tables(done.rejects)
        wh.write(rejects, spec.name, "rejects", day, part="chunk")
        path, redirects = _publish(spec, wh, day, out, report, rec)
        _quarantine_documents(wh, spec, day, done.quarantined, report, rec)
    # the day's documents become current only once its chunks are published
    landed = pa.concat_tables(done.landed) if done.landed else landed_from_raw(RAW_SCHEMA.empty_table())
    change = update_index(wh, spec.name, day, landed=landed if report.publishable else landed.slice(0, 0),
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
        report = validate_chunks(part.table, {d.doc_id: d.text for d in docs})
        done.reports.append(report)
        table, landed = part.table, landed_from_raw(raw)
        if report.rejected_documents and report.publishable:  # else the whole day is quarantined
            table, landed = _set_aside(spec.name, day, report, table, landed, done)
        out.write(table)
        done.rejects.append(part.rejects)
        done.landed.append(landed)
        done.slim.append(table.select(SUMMARY_COLUMNS))
        if done.first is None:
            done.first = table
    return done


def _set_aside(
    dataset: str, day: dt.date, report: ContractReport, table: pa.Table, landed: pa.Table, done: _Chunked
) -> tuple[pa.Table, pa.Table]:
    """Take the rejected documents out of a row group: their rows to ``done.quarantined``, a reject each."""
    bad_docs = report.rejected_documents
    bad = pa.array(sorted(bad_docs), pa.string())
    doc_ids = pc.fill_null(table.column("doc_id"), "")
    is_bad = pc.is_in(doc_ids, value_set=bad).to_numpy(zero_copy_only=False)
    rows = np.flatnonzero(is_bad).tolist()
    reasons = [
        "; ".join(report.row_rules.get(i) or [f"another chunk of its document failed {', '.join(bad_docs[d])}"])
        for i, d in zip(rows, pc.take(doc_ids, pa.array(rows, pa.int64())).to_pylist())
    ]
    done.quarantined.append(table.filter(pa.array(is_bad)).append_column("contract_failure", pa.array(reasons, pa.string())))
    files = dict(zip(landed.column("doc_id").to_pylist(), landed.column("source_file").to_pylist()))
    done.rejects.append(steps.rejects_table(dataset, day, [
        Reject(files.get(doc) or "(unknown)", _reject_reason(dataset, day, doc, rules), record_ref=doc, stage="chunk")
        for doc, rules in sorted(bad_docs.items())
    ]))
    keep_landed = pc.invert(pc.is_in(pc.fill_null(landed.column("doc_id"), ""), value_set=bad))
    return table.filter(pa.array(~is_bad)), landed.filter(keep_landed)


def _reject_reason(dataset: str, day: dt.date, doc_id: str, rules: list[str]) -> str:
    return (f"chunk contract failed for document {doc_id!r} ({'; '.join(rules)}): it was left out of the "
            f"{day} chunks (its previous version, if any, stays current); its rows are in "
            f"codex.{dataset}_quarantine, contract_failure saying which rule each broke")


def _quarantine_documents(
    wh: Warehouse, spec: DatasetSpec, day: dt.date, quarantined: list[pa.Table], report: ContractReport, rec: Recorder
) -> None:
    """Write the rejected documents' rows (or remove an earlier run's), and say which documents they are.

    When no document passed, their rows are the day's quarantined file itself (:func:`_publish` left it out).
    """
    dataset, stamp = spec.name, {"chunking_version": spec.chunking_version}  # what staleness reads
    if not quarantined:
        wh.remove(dataset, "quarantine", day, part=DOCUMENTS_QUARANTINE)
        return
    rows = pa.concat_tables(quarantined)
    if report.publishable:
        wh.write(rows, dataset, "quarantine", day, part=DOCUMENTS_QUARANTINE, stamp=stamp)
    else:
        wh.remove(dataset, "quarantine", day, part=DOCUMENTS_QUARANTINE)
        wh.write(rows, dataset, "quarantine", day, stamp=stamp)
        return
    named = ", ".join(f"{d} ({'; '.join(r)})" for d, r in sorted(report.rejected_documents.items())[:5])
    more = len(report.rejected_documents) - 5
    rec.warning(f"chunk contract of {dataset} {day}: {len(report.rejected_documents)} document(s) left out, the "
                f"rest published: {named}{f' and {more} more' if more > 0 else ''}; see codex.{dataset}_rejects")


def _publish(
    spec: DatasetSpec, wh: Warehouse, day: dt.date, out: PartitionWriter, report: ContractReport, rec: Recorder
) -> tuple[Path, dict[str, int]]:
    """Publish a file that passed the contract (with its redirects), else quarantine it; the path written."""
    if not report.publishable:  # never let a bad partition feed embeddings: keep it aside for inspection
        # unpublish, but keep the last good file as the baseline for redirects; a quarantined file redirects nothing
        wh.move(spec.name, "chunks", LAST_PUBLISHED, day)
        path = out.publish(to=wh.partition_path(spec.name, "quarantine", day))
        rec.error(f"chunk contract failed for {spec.name} {day}, the partition is quarantined: "
                  f"{'; '.join(report.unattributed)}; failed rules: {', '.join(report.failed_checks)}; "
                  f"see codex.{spec.name}_quarantine and codex.{spec.name}_rejects")
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
