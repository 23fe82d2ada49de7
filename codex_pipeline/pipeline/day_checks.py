"""The two warning checks of a published chunks day, as library functions.

Neither blocks embeddings: a duplicate id is already visible in the current view, and
an address problem is for a person to look at. Both read what was published, so they
can run after the chunks step, or again on their own.
"""

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from codex_pipeline.core.contract import CHUNK_SCHEMA
from codex_pipeline.core.documents import SourceDocument
from codex_pipeline.datasets import steps
from codex_pipeline.datasets.registry import DatasetSpec
from codex_pipeline.datasets.validation import ValidationReport, validate_partition
from codex_pipeline.pipeline.reporting import Recorder
from codex_pipeline.pipeline.results import AddressResult, StepLog, UniqueIdsResult
from codex_pipeline.warehouse.current import check_unique_chunk_ids
from codex_pipeline.warehouse.storage import Warehouse

PROBLEMS_LOGGED = 5


def current_ids_unique(spec: DatasetSpec, wh: Warehouse, log: StepLog | None = None) -> UniqueIdsResult:
    """Every ``chunk_id`` once in ``codex.<dataset>_chunks``: the current corpus, as users query it."""
    unique = check_unique_chunk_ids(wh, spec.name)
    warning = None
    if not unique.passed:
        warning = f"{unique.duplicates} chunk id(s) on more than one row of codex.{spec.name}_chunks"
        Recorder(log).warning(warning)
    return UniqueIdsResult(spec.name, unique, warning)


def chunk_addresses(spec: DatasetSpec, wh: Warehouse, day: dt.date, log: StepLog | None = None) -> AddressResult:
    """The seed-003 address validator on the published day's chunks of its first raw row group.

    The first row group bounds what is read on a big day; its documents are re-read from
    the raw file, so the ids can be re-derived and compared.
    """
    published = wh.partition_path(spec.name, "chunks", day)
    if not published.exists():
        report = ValidationReport(spec.name, [day])
        report.notes.append(f"no published chunks partition of {spec.name} for {day.isoformat()}")
        return AddressResult(spec.name, day, report)
    docs = _first_raw_group(wh, spec.name, day)
    report = validate_partition(spec, day, _chunks_of(published, [d.doc_id for d in docs]), docs)
    warning = None
    if not report.passed:
        warning = f"chunk addresses of {spec.name} {day}: " + "; ".join(
            p.line() for p in report.problems[:PROBLEMS_LOGGED])
        Recorder(log).warning(warning)
    return AddressResult(spec.name, day, report, warning)


def _first_raw_group(wh: Warehouse, dataset: str, day: dt.date) -> list[SourceDocument]:
    path = wh.partition_path(dataset, "raw", day)
    if not path.exists():
        return []
    with pq.ParquetFile(path) as pf:
        return steps.documents_from_raw(pf.read_row_group(0)) if pf.num_row_groups else []


def _chunks_of(path: Path, doc_ids: list[str]) -> pa.Table:
    """The rows of ``doc_ids`` in a chunks file, in file order: they are its first rows, read group by group."""
    wanted = pa.array(doc_ids, pa.string())
    parts = [CHUNK_SCHEMA.empty_table()]
    with pq.ParquetFile(path) as pf:
        for i in range(pf.num_row_groups):
            group = pf.read_row_group(i)
            mask = pc.is_in(group.column("doc_id"), value_set=wanted)
            if len(parts) > 1 and not pc.any(mask).as_py():
                break  # past the first raw group's chunks
            parts.append(group.filter(mask))
    return pa.concat_tables(parts)
