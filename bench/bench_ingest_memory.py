"""Peak memory of the raw step on a mapped CSV export at two file sizes: flat when the day streams.

Each size is a synthetic copy of a permit export from the shared corpora (the Seattle one by
default), concatenated until it reaches the size, the id column suffixed ``-s<k>`` in copy k
so every row is a new record. The raw step (:func:`~codex_pipeline.pipeline.raw_day.run_raw_day`)
runs in a fresh subprocess per case, which reports its own peak RSS (``ru_maxrss``) and time:

- ``stream``: the mapped dataset as registered (its ``iter_day`` reads the file page by page);
- ``whole``: the same spec with ``iter_day`` removed, so ``load_day`` reads the file whole (the
  path a ``duplicates: last/merge`` mapping takes; files over 64 MiB are refused there).

    python bench/bench_ingest_memory.py                         # 10 MB and 200 MB, both modes
    python bench/bench_ingest_memory.py --sizes 10 50 --modes stream
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import datetime as dt
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "corpora" / "permits"
MAPPINGS = ROOT / "codex_pipeline" / "sources" / "mappings"
DEFAULT = ("seattle_sdci_preapplications.csv", "seattle_preapplications.yaml")
DAY = dt.date(2026, 1, 2)
WHOLE_LIMIT = 64 << 20


def synthetic(src: Path, dest: Path, id_column: str, size: int) -> int:
    """``src`` repeated into ``dest`` until ``dest`` is at least ``size`` bytes; the rows written."""
    with src.open(newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    at = header.index(id_column)
    n = 0
    with dest.open("w", newline="", encoding="utf-8") as out:
        w = csv.writer(out)
        w.writerow(header)
        k = 0
        while out.tell() < size:
            for row in body:
                w.writerow([*row[:at], f"{row[at]}-s{k}", *row[at + 1:]] if k else row)
                n += 1
            k += 1
    return n


def child(data_dir: str, mapping: str, mode: str) -> None:
    """Run the raw step of the landed day; print peak RSS (MiB), seconds and counts as JSON."""
    from codex_pipeline.datasets.registry import mapped_spec
    from codex_pipeline.pipeline.raw_day import run_raw_day
    from codex_pipeline.sources.mapping.kinds import load_mapped_dataset
    from codex_pipeline.warehouse.storage import Warehouse

    spec = mapped_spec(load_mapped_dataset(Path(mapping)))
    if mode == "whole":
        spec = dataclasses.replace(spec, iter_day=None)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.perf_counter()
    try:
        done = run_raw_day(spec, Warehouse(Path(data_dir)), DAY)
        out: dict[str, Any] = {"documents": done.documents, "rejects": done.rejects}
    except Exception as exc:  # noqa: BLE001 - a refused day is a result of the bench, printed
        out = {"error": str(exc).splitlines()[0][:120]}
    out |= {"seconds": time.perf_counter() - t, "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "import_mib": before / 1024}
    print(json.dumps(out))


def run_case(export: Path, mapping: Path, id_column: str, name: str, mb: int, mode: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="codex-mem-") as tmp:
        day = Path(tmp) / "data" / "landing" / name / DAY.isoformat()
        day.mkdir(parents=True)
        rows = synthetic(export, day / export.name, id_column, mb << 20)
        size = (day / export.name).stat().st_size
        if mode == "whole" and size > WHOLE_LIMIT:
            return {"mb": mb, "mode": mode, "rows": rows, "bytes": size, "skipped": "over the 64 MiB whole-file limit"}
        env = dict(os.environ, PYTHONPATH=str(ROOT), CODEX_DATA_DIR=str(Path(tmp) / "data"))
        proc = subprocess.run([sys.executable, __file__, "--child", str(Path(tmp) / "data"), str(mapping), mode],
                              capture_output=True, text=True, env=env, check=False)
        if proc.returncode:
            return {"mb": mb, "mode": mode, "rows": rows, "bytes": size, "skipped": proc.stderr.strip().splitlines()[-1]}
        return {"mb": mb, "mode": mode, "rows": rows, "bytes": size, **json.loads(proc.stdout.strip().splitlines()[-1])}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 200], help="file sizes in MiB")
    ap.add_argument("--modes", nargs="+", default=["stream", "whole"], choices=["stream", "whole"])
    ap.add_argument("--export", default=DEFAULT[0], help="a CSV in the shared corpora's permits folder")
    ap.add_argument("--mapping", default=DEFAULT[1], help="its mapping in codex_pipeline/sources/mappings")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return 0
    sys.path.insert(0, str(ROOT))
    from codex_pipeline.sources.mapping.kinds import load_mapped_dataset

    md = load_mapped_dataset(MAPPINGS / args.mapping)
    export = CORPORA / args.export
    results = [run_case(export, md.path, md.mapping.id, md.name, mb, mode) for mb in args.sizes for mode in args.modes]
    if args.json:
        json.dump(results, sys.stdout, indent=1)
        print()
        return 0
    print(f"{'size':>8} {'mode':>7} {'rows':>9} {'peak RSS':>10} {'after import':>13} {'seconds':>8} {'rows/s':>8}  result")
    for r in results:
        if "skipped" in r:
            print(f"{r['bytes'] / (1 << 20):>6.0f}Mi {r['mode']:>7} {r['rows']:>9} {'-':>10} {'-':>13} {'-':>8} {'-':>8}  {r['skipped']}")
            continue
        what = r.get("error") or f"{r['documents']} documents, {r['rejects']} rejects"
        print(f"{r['bytes'] / (1 << 20):>6.0f}Mi {r['mode']:>7} {r['rows']:>9} {r['peak_mib']:>8.0f}Mi {r['import_mib']:>11.0f}Mi "
              f"{r['seconds']:>8.1f} {r['rows'] / r['seconds']:>8.0f}  {what}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
