"""The raw step of a day: landing files become ``raw`` rows, rejects, tombstones and views.

Documents stream from the reader into bounded row groups, so memory does not grow with
the day. For a chunked dataset the day's tombstone files are checked against what
landed and, when they retract anything, applied to the current-corpus index.
"""

import contextlib
import datetime as dt
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from codex_pipeline.core.contract import RAW_SCHEMA
from codex_pipeline.core.documents import Reject
from codex_pipeline.datasets import steps
from codex_pipeline.datasets.registry import DatasetSpec
from codex_pipeline.pipeline.file_accounting import FILES_TABLE, FileAccount, account_files, check_files
from codex_pipeline.pipeline.housekeeping import rejects_preview, set_aside_damaged, write_if_any
from codex_pipeline.pipeline.reporting import Recorder
from codex_pipeline.pipeline.results import RawDayResult, StepLog
from codex_pipeline.pipeline.row_accounting import RawDayFailed, RowAccount, account_rows, check_rows
from codex_pipeline.sources.files import day_folder_link, landing_scope, screen_landing, unusable
from codex_pipeline.sources.tally import counting_messages, counting_rows
from codex_pipeline.sources.tombstones import TOMBSTONE_FILES, Tombstones, read_tombstones, without_tombstones
from codex_pipeline.warehouse.catalog import ensure_views
from codex_pipeline.warehouse.current import IndexChange, ensure_index, tombstones_table, update_index
from codex_pipeline.warehouse.records_view import record_columns_stamp
from codex_pipeline.warehouse.storage import Warehouse

RAW_VIEWS = ("raw", "rejects", "documents", "tombstones", "redirects", FILES_TABLE)


@dataclass(frozen=True)
class _Ingested:
    documents: int
    record_ids: frozenset[str]
    rejects: pa.Table
    path: Path | None  # None: not published (the rows did not add up, or too many were rejected)
    rows: RowAccount
    files: FileAccount
    failure: str | None = None


def run_raw_day(spec: DatasetSpec, wh: Warehouse, day: dt.date, log: StepLog | None = None) -> RawDayResult:
    """Ingest ``landing/<dataset>/<day>/``; ``skipped`` when nothing landed and nothing is to be retracted.

    :class:`~codex_pipeline.pipeline.row_accounting.RawDayFailed` (one line) when rows do not add
    up or too many were rejected: the rejects are written, the raw partition is not.
    """
    rec = Recorder(log)
    landing = wh.landing_dir(spec.name, day)
    if not landing.is_dir() and not wh.partition_path(spec.name, "raw", day).exists():
        # nothing landed and nothing to retract: the caller materializes nothing, so the
        # day's chunks and embeddings steps are skipped instead of run empty
        rec.info(f"no landing folder {landing}: nothing to do for {spec.name} on {day}")
        return RawDayResult(spec.name, day, landing, skipped=True)
    damaged = set_aside_damaged(wh, spec.name, [day], rec)
    if not landing.is_dir():
        rec.warning(f"no landing folder {landing}: the {day} partition of {spec.name} is empty")
    ingested = _ingest(spec, wh, day, landing)
    wh.write(ingested.rejects, spec.name, "rejects", day, part="ingest")
    wh.write(ingested.files.table(day), spec.name, FILES_TABLE, day)  # what became of each landing file
    if ingested.failure is not None:  # the rejects stay queryable; nothing of the day is published
        ensure_views(wh, [(spec.name, "rejects"), (spec.name, FILES_TABLE)])
        rec.error(ingested.failure)
        raise RawDayFailed(ingested.failure)
    marks, change = _tombstones(spec, wh, day, landing, ingested.record_ids)
    write_if_any(wh, steps.rejects_table(spec.name, day, marks.rejects), spec.name, "rejects", day, "tombstone")
    created = ensure_views(wh, [(spec.name, t) for t in RAW_VIEWS])
    notes = _notes(ingested.rejects)  # optional values nulled, rows kept: not rejects
    if ingested.rejects.num_rows - notes or marks.rejects:
        rec.warning(f"{ingested.rejects.num_rows - notes + len(marks.rejects)} rejected input(s) in {landing}; "
                    f"see codex.{spec.name}_rejects")
    if notes:
        rec.info(f"{notes} optional value(s) nulled with a note (stage 'note') in codex.{spec.name}_rejects")
    return RawDayResult(
        spec.name, day, landing, documents=ingested.documents, rejects=ingested.rejects.num_rows - notes,
        rejects_preview=rejects_preview(ingested.rejects), tombstones=len(marks.tombstones),
        tombstone_rejects=len(marks.rejects), current=change.as_metadata() if change else {},
        rows=ingested.rows.as_metadata() | ({"notes": notes} if notes else {}), rows_by_file=ingested.rows.markdown(),
        files=ingested.files.as_metadata(),
        path=ingested.path, views_created=tuple(created), damaged=damaged, warnings=tuple(rec.warnings),
    )


def _ingest(spec: DatasetSpec, wh: Warehouse, day: dt.date, landing: Path) -> _Ingested:
    """Write the day's ``raw`` file (empty when no folder landed); duplicates and bad files become rejects.

    Published only when every row read landed or was rejected by name and the rejects are
    within the dataset's ``max_reject_ratio`` (:mod:`~codex_pipeline.pipeline.row_accounting`).
    """
    rejected: list[Reject] = []
    ingest = steps.Ingest(spec, day, rejected)
    failure = None
    with (
        landing_scope(landing, wh.steps.follow_landing_links),  # what readers may follow links into
        _readable(landing, wh.steps.follow_landing_links) as folder,  # no _deleted.* files, no day-folder link
        counting_rows() as tally,
        counting_messages() as mail,
        wh.writer(spec.name, "raw", day, RAW_SCHEMA, stamp={"source_version": spec.source_version,
                                                             **record_columns_stamp(spec.record_columns)}) as out,
    ):
        rejected += screen_landing(landing)  # links leaving the folder, hidden files, control characters
        for table in ingest.tables(spec.documents(folder, rejected)):
            out.write(table)
        rows = account_rows(tally, ingest.by_file, rejected)
        files = account_files(landing, spec.name, ingest.by_file, rejected, tally, mail)
        try:
            check_rows(rows, spec.name, day, spec.max_reject_ratio, spec.mapping_file)
            check_files(files, spec.name, day)  # every landing file landed, rejected or skipped
        except RawDayFailed as exc:
            failure = str(exc)
        path = out.publish() if failure is None else None
    rejects = steps.rejects_table(spec.name, day, rejected)
    return _Ingested(ingest.documents, frozenset(ingest.record_ids), rejects, path, rows, files, failure)


def _notes(rejects: pa.Table) -> int:
    """Rows of the rejects table that are notes (stage ``note``: a value nulled, its row kept)."""
    return int(pc.sum(pc.equal(rejects["stage"], "note")).as_py() or 0) if rejects.num_rows else 0


@contextlib.contextmanager
def _readable(landing: Path, follow_links: bool) -> Iterator[Path]:
    """The folder the dataset's reader walks: the day without its tombstone files, or an empty
    folder when the day folder is a link not to be followed (:func:`day_folder_link`: its reject says so)."""
    if day_folder_link(landing, follow_links) is None:
        with without_tombstones(landing) as folder:
            yield folder
        return
    with tempfile.TemporaryDirectory(prefix="codex-refused-day-") as tmp:
        yield Path(tmp)


def _tombstones(
    spec: DatasetSpec, wh: Warehouse, day: dt.date, landing: Path, landed: frozenset[str]
) -> tuple[Tombstones, IndexChange | None]:
    """The day's retractions, applied to the current-corpus index when there are any (or were before)."""
    if day_folder_link(landing, wh.steps.follow_landing_links) is not None:  # rejected whole: nothing retracted
        landing = landing.parent / f"{landing.name}.refused-link"  # a folder that does not exist
    if not spec.chunked:
        return _not_applied(landing, spec.name), None
    with _usable_tombstones(landing) as folder:  # a _deleted.* link leading outside is a reject, never read
        marks = read_tombstones(folder, spec.name).split_landed(set(landed))
    accepted = tombstones_table(day, marks.tombstones)
    had = wh.partition_path(spec.name, "tombstones", day).exists()
    write_if_any(wh, accepted, spec.name, "tombstones", day)
    ensure_index(wh, spec.name, spec.snapshot)
    if not (accepted.num_rows or had):  # the usual day retracts nothing: leave the index alone
        return marks, None
    return marks, update_index(wh, spec.name, day, tombstones=accepted, snapshot=spec.snapshot)


@contextlib.contextmanager
def _usable_tombstones(landing: Path) -> Iterator[Path]:
    """The folder to read tombstone files from: ``landing``, or a temporary one without those
    :func:`~codex_pipeline.sources.files.unusable` says not to read (already rejected by the screen)."""
    names = [n for n in TOMBSTONE_FILES if (landing / n).is_symlink() and unusable(landing / n, landing)]
    if not names:
        yield landing
        return
    with tempfile.TemporaryDirectory(prefix="codex-tombstones-") as tmp:
        for n in TOMBSTONE_FILES:
            if n not in names and (landing / n).exists():
                os.symlink(os.path.realpath(landing / n), Path(tmp) / n)
        yield Path(tmp)


def _not_applied(landing: Path, dataset: str) -> Tombstones:
    """A raw-only dataset has no current corpus: its tombstone files are rejected, not applied."""
    reason = (f"{dataset} is a raw export (not chunked): it has no current corpus to retract "
              "records from, so this file was not applied")
    return Tombstones([], [Reject(name, reason, stage="tombstone") for name in TOMBSTONE_FILES
                           if (landing / name).exists()])
