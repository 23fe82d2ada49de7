"""The bundled sample landing files, so the demo and a first `dagster dev` need no setup."""

from __future__ import annotations

import shutil
from pathlib import Path

from codex_pipeline.warehouse.storage import Warehouse


def sample_root() -> Path:
    """The shipped ``codex_pipeline/sample_landing`` folder: ``<dataset>/<YYYY-MM-DD>/`` landing files."""
    return Path(__file__).resolve().parents[1] / "sample_landing"


def sample_days() -> list[str]:
    """ISO dates that have sample files for at least one dataset."""
    return sorted({d.name for ds in sample_root().iterdir() if ds.is_dir() for d in ds.iterdir() if d.is_dir()})


def install_sample_landing(warehouse: Warehouse, overwrite: bool = False) -> list[Path]:
    """Copy the sample day folders into ``<data dir>/landing``; existing days are kept."""
    copied = []
    for ds in sorted(p for p in sample_root().iterdir() if p.is_dir()):
        for day in sorted(p for p in ds.iterdir() if p.is_dir()):
            dest = warehouse.root / "landing" / ds.name / day.name
            if dest.exists() and not overwrite:
                continue
            if dest.exists():
                shutil.rmtree(dest)
            shutil.copytree(day, dest)
            copied.append(dest)
    return copied
