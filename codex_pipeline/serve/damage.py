"""Damaged Parquet partitions as the server sees them: one dataset unavailable, in one line, not a 500.

The server never moves or rewrites files (the pipeline's next run of the day sets a damaged
file aside and rebuilds it: :mod:`codex_pipeline.warehouse.integrity`); it names the file
and that fix, answers 503 for the dataset, and lists it in ``/ready``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from codex_pipeline.warehouse.integrity import damage, dataset_files
from codex_pipeline.warehouse.storage import Warehouse

_PARQUET = re.compile(r"""['"]?((?:/|\b[A-Za-z]:[\\/])[^'"\n]*?\.parquet)['"]?""")


def unavailable(wh: Warehouse, path: Path, reason: str) -> str:
    """One line: which dataset is unavailable, the damaged file, why, and the run that repairs it."""
    try:
        dataset, table = path.relative_to(wh.root / "warehouse").parts[:2]
    except ValueError:
        dataset, table = "?", "?"
    day = path.name.split(".", 1)[0]
    fix = (f"run `codex materialize {day}`" if re.fullmatch(r"\d{4}-\d{2}-\d{2}", day)
           else f"run the next materialization of {dataset}")
    return (f"dataset {dataset} is unavailable: its {table} file {path.relative_to(wh.root) if dataset != '?' else path} "
            f"is damaged ({reason}); {fix}, which sets the file aside and rebuilds it")


def from_error(wh: Warehouse, error: BaseException) -> str | None:
    """The :func:`unavailable` line when ``error`` came from reading a damaged Parquet file of the warehouse, else None."""
    for found in _PARQUET.finditer(str(error)):
        path = Path(found.group(1))
        reason = damage(path)
        if reason is not None:
            return unavailable(wh, path, reason)
    return None


def damaged_datasets(wh: Warehouse, datasets: Iterable[str]) -> dict[str, str]:
    """Dataset -> :func:`unavailable` line for its first damaged file (the quick check: two small reads per file)."""
    out = {}
    for dataset in datasets:
        for _table, path in dataset_files(wh, dataset):
            reason = damage(path)
            if reason is not None:
                out[dataset] = unavailable(wh, path, reason)
                break
    return out
