"""Refuse to score what is not there: an evaluation of nothing must fail, not print zeros.

``codex eval`` used to print all-zero scores with exit code 0 when every landed file
was rejected (a ``.md`` corpus landed as ``civic_intelligence``), when the asked-for
units were never built (``--units propositions`` on a work dir built without them),
and a traceback on an empty ``--work-dir`` with ``--no-materialize``. Each check here
raises :class:`NothingToScore` with one line naming the dataset, the day, the table to
look in and the fix.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path

import pyarrow.parquet as pq

from codex_pipeline.warehouse.storage import Warehouse


class NothingToScore(ValueError):
    """The evaluation has no chunks or units to score; the message says why and what to do."""


def check_chunks(wh: Warehouse, datasets: Sequence[str], day: dt.date, reused: bool, kept: bool = True) -> None:
    """Every dataset has chunks for ``day``; ``reused``: the work dir was not materialized by this run;
    ``kept``: the data directory outlives the command (``--work-dir``), so its rejects table can be read."""
    for ds in datasets:
        rows = _rows(wh.partitions(ds, "chunks").get(day))
        if rows:
            continue
        if reused and rows is None:
            landed = wh.landing_dir(ds, day).is_dir()
            raise NothingToScore(
                f"--no-materialize: {wh.root} has no {'chunks' if landed else 'landed files'} of {ds} for {day}: "
                "run once without --no-materialize (same --work-dir) to land and materialize it")
        rejects = reject_rows(wh, ds, day)
        if rejects:
            first = rejects[0]
            where = wh.root if kept else "DIR"
            keep = "" if kept else "rerun with --work-dir DIR and "
            raise NothingToScore(
                f"every document landed into {ds} was rejected: {len(rejects)} row(s) in codex.{ds}_rejects "
                f"(first: {first[0]}: {first[1]}); {keep}read them with CODEX_DATA_DIR={where} codex query "
                f"\"SELECT source_file, reason FROM codex.{ds}_rejects\", then land the files into a dataset "
                "that reads them")
        raise NothingToScore(f"{ds} has no chunks for {day}: no document was landed from --corpus "
                             "(check the folder, DS=SUBDIR and --include)")


def check_propositions(indexes: dict[str, int | None], root: Path, reused: bool) -> None:
    """``indexes``: each dataset's proposition count in its live search index (None: no propositions at all)."""
    missing = sorted(ds for ds, n in indexes.items() if not n)
    if missing:
        fix = ("run without --no-materialize to build them" if reused
               else "use --units chunks (this dataset's documents yield no propositions)")
        raise NothingToScore(f"--units propositions: no propositions for {', '.join(missing)} in {root}: {fix}")


def reject_rows(wh: Warehouse, dataset: str, day: dt.date) -> list[tuple[str, str]]:
    """``(source_file, reason)`` of every reject of ``day`` (ingest and chunk stages), in file order."""
    folder = wh.table_dir(dataset, "rejects")
    out: list[tuple[str, str]] = []
    for path in sorted(folder.glob(f"{day.isoformat()}*.parquet")) if folder.is_dir() else []:
        table = pq.read_table(path, columns=["source_file", "reason"])
        out += [(str(f), str(r)) for f, r in zip(table["source_file"].to_pylist(), table["reason"].to_pylist())]
    return out


def _rows(path: Path | None) -> int | None:
    return None if path is None else pq.ParquetFile(path).metadata.num_rows
