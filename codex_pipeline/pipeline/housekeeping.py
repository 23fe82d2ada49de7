"""What every day step does around its own work: damaged files, often-empty tables, rejects."""

import datetime as dt

import pyarrow as pa

from codex_pipeline.pipeline.reporting import Recorder
from codex_pipeline.warehouse.catalog import ensure_views
from codex_pipeline.warehouse.integrity import sweep_dataset
from codex_pipeline.warehouse.storage import INDEX_DIR, Warehouse

REJECTS_PREVIEW_ROWS = 20


def set_aside_damaged(wh: Warehouse, dataset: str, days: list[dt.date], log: Recorder) -> tuple[str, ...]:
    """Move the dataset's damaged files out of its views before a step reads or replaces any."""
    found = sweep_dataset(wh, dataset, days)
    for f in found:
        log.warning(f.message())
    if found:  # a view whose last file went must go too; the rejects view gains a part
        tables = {"documents" if f.table == INDEX_DIR else f.table for f in found} | {"rejects"}
        ensure_views(wh, [(dataset, t) for t in sorted(tables)])
    return tuple(f.message() for f in found)


def write_if_any(wh: Warehouse, table: pa.Table, dataset: str, name: str, day: dt.date, part: str | None = None) -> None:
    """A day's file of an often-empty table: written when it has rows, emptied (not removed) by a rerun.

    Removing it could leave the table's view a glob that matches nothing, which DuckDB refuses.
    """
    if table.num_rows or wh.partition_path(dataset, name, day, part).exists():
        wh.write(table, dataset, name, day, part=part)


def rejects_preview(rejects: pa.Table) -> str:
    """A Markdown table of the first rejects, for a reader who wants to know what went wrong."""
    lines = ["| stage | file | record | reason |", "|---|---|---|---|"]
    for r in rejects.slice(0, REJECTS_PREVIEW_ROWS).to_pylist():
        reason = r["reason"].replace("|", "\\|")
        lines.append(f"| {r['stage']} | {r['source_file']} | {r['record_ref'] or ''} | {reason} |")
    return "\n".join(lines)
