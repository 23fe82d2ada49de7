"""Every file of the shared corpora accounted for: the raw step of each file-taking dataset over a corpus folder.

Each corpus folder is copied into a fresh data directory as one landing day and ingested by
:func:`~codex_pipeline.pipeline.raw_day.run_raw_day` (no chunking, no embedding); the
script prints files found / landed / rejected / skipped (and messages for mail) and checks
found = landed + rejected + skipped.

    python bench/bench_file_accounting.py                 # ../shared/corpora beside the checkout
    python bench/bench_file_accounting.py --json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import sys
import tempfile
from pathlib import Path

from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.pipeline.raw_day import run_raw_day
from codex_pipeline.pipeline.row_accounting import RawDayFailed
from codex_pipeline.warehouse.storage import Warehouse

CORPORA = Path(__file__).resolve().parents[1].parent / "shared" / "corpora"
FOLDERS = {"email": "email_threads", "markdown": "docs", "pdf": "documents", "council": "civic_intelligence",
           "council_captions": "civic_intelligence", "permits": "permit_signals",
           "independent/email": "email_threads", "independent/markdown": "docs", "independent/council": "civic_intelligence"}
DAY = dt.date(2026, 11, 24)


def measure(corpora: Path) -> list[dict[str, object]]:
    """One row per corpus folder: the dataset, the raw step's file (and message) counts, and whether they add up."""
    out: list[dict[str, object]] = []
    for folder, dataset in FOLDERS.items():
        src = corpora / folder
        if not src.is_dir():
            continue
        with tempfile.TemporaryDirectory(prefix="codex-files-") as tmp:
            wh = Warehouse(Path(tmp) / "data")
            shutil.copytree(src, wh.landing_dir(dataset, DAY))
            try:
                files = run_raw_day(get_dataset(dataset), wh, DAY).files
            except RawDayFailed as exc:
                out.append({"folder": folder, "dataset": dataset, "failed": str(exc)})
                continue
        adds_up = files["files_found"] == files["files_landed"] + files["files_rejected"] + files["files_skipped"]
        out.append({"folder": folder, "dataset": dataset, **files, "adds_up": adds_up})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--corpora", type=Path, default=CORPORA)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = measure(args.corpora)
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        for r in rows:
            print(" ".join(f"{k}={v}" for k, v in r.items()))
    return 0 if rows and all(r.get("adds_up") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
