"""Ingest speed of a mapped export against reading the same CSV with pyarrow.csv and DuckDB read_csv.

Three figures per export, each the best of ``--repeat`` runs (seconds, wall clock):

- ``pyarrow``: ``pyarrow.csv.read_csv`` of the file, types inferred (a floor: C++ parsing, no rules);
- ``duckdb``: ``SELECT * FROM read_csv(file)`` into Arrow (the same floor, another engine);
- ``mapped_read``: the mapping's reader alone (CSV rows → typed records: dates, vocabulary, separators,
  coordinates, scope items);
- ``mapped_ingest``: the dataset's whole ``load_day`` (reader, record validation, de-duplication,
  canonical text and blocks): what the raw step spends before writing Parquet;
- ``mapped_stream``: the same day through the dataset's ``iter_day`` (page by page, what the raw step
  uses for a mapped CSV export; ``-`` for a dataset that loads days whole).

The ratios ``mapped_ingest / pyarrow`` and ``mapped_ingest / duckdb`` are printed: what the mapping's
rules and Codex's validation cost over parsing alone. ``--scale N`` measures each export concatenated
N times (the id column suffixed ``-s<k>`` in copy k, so every row is a new record): a 5,000-row
export at ``--scale 20`` is a 100,000-row case, where DuckDB's fixed sniffing cost no longer hides
(80 MB: over the 64 MiB a whole-file ``load_day`` reads, so Calgary, a built-in read whole, is
refused there; a mapped export streams).

    python bench/bench_mapping.py                    # the shared corpora's permit exports
    python bench/bench_mapping.py --scale 20 --repeat 1
    python bench/bench_mapping.py --scale 53 --repeat 1 --only seattle_sdci_preapplications.csv   # ~100k rows
    python bench/bench_mapping.py --repeat 5 --json
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.csv as pacsv

import codex_pipeline
from codex_pipeline.datasets.registry import default_registry, get_dataset
from codex_pipeline.sources.mapping.kinds import kind_parts, load_mapped_dataset
from codex_pipeline.sources.mapping.schema import SourceMapping
from codex_pipeline.sources.permits import calgary_mapping

ROOT = Path(codex_pipeline.__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "corpora" / "permits"
SAMPLES = ROOT / "codex_pipeline" / "sample_landing"
# export -> dataset whose mapping reads it
EXPORTS = {
    "calgary_building_permits.csv": "permit_signals",
    "seattle_sdci_preapplications.csv": "seattle_preapplications",
    "squamish_bc_building_permits.csv": "squamish_permits",
}


def best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    out, times = None, []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def duck_read(f: Path) -> pa.Table:
    rel = duckdb.sql(f"SELECT * FROM read_csv('{f}')")
    assert rel is not None
    return rel.to_arrow_table()


def bench_export(path: Path, dataset: str, repeat: int, scale: int = 1) -> dict[str, Any]:
    spec = get_dataset(dataset)
    md_mapping = calgary_mapping() if dataset == "permit_signals" else None
    mapping: SourceMapping = md_mapping or load_mapped_dataset(spec_file(dataset)).mapping
    with tempfile.TemporaryDirectory() as tmp:
        day = Path(tmp) / "day"
        day.mkdir()
        f = day / path.name
        if scale > 1:
            scaled_copy(path, f, mapping, scale)
        else:
            shutil.copy(path, f)
        size = f.stat().st_size
        t_arrow, table = best(lambda: pacsv.read_csv(f), repeat)
        t_duck, _ = best(lambda: duck_read(f), repeat)
        reader = kind_parts(mapping, dataset).reader
        t_read, (records, _) = best(lambda: reader(f, day), repeat)
        t_load, loaded = best(lambda: spec.load_day(day), repeat)
        t_stream = best(lambda: sum(1 for _ in spec.documents(day, [])), repeat)[0] if spec.iter_day else None
    assert isinstance(table, pa.Table)
    rows = table.num_rows
    out = {
        "export": path.name, "dataset": dataset, "scale": scale, "rows": rows, "bytes": size,
        "documents": len(loaded.documents), "rejects": len(loaded.rejects), "records_read": len(records),
        "seconds": {"pyarrow": t_arrow, "duckdb": t_duck, "mapped_read": t_read, "mapped_ingest": t_load,
                    "mapped_stream": t_stream},
        "rows_per_second": {"pyarrow": rows / t_arrow, "duckdb": rows / t_duck, "mapped_read": rows / t_read,
                            "mapped_ingest": rows / t_load},
        "ratio": {"mapped_read/pyarrow": t_read / t_arrow, "mapped_ingest/pyarrow": t_load / t_arrow,
                  "mapped_ingest/duckdb": t_load / t_duck},
    }
    if t_stream is not None:
        out["rows_per_second"]["mapped_stream"] = rows / t_stream
        out["ratio"]["mapped_stream/duckdb"] = t_stream / t_duck
    return out


def scaled_copy(src: Path, dest: Path, mapping: SourceMapping, n: int) -> None:
    """``src`` written ``n`` times into ``dest`` (one header), the id column suffixed ``-s<k>`` in copy ``k`` >= 1.

    Read with the csv module (a bench input, not a reader under test): the export's malformed
    lines, if any, are copied as the module reads them.
    """
    with src.open(newline="", encoding=mapping.encoding) as fin:
        rows = list(csv.reader(fin, delimiter=mapping.delimiter))
    header, body = rows[0], rows[1:]
    at = header.index(mapping.id.split(".")[0]) if mapping.id in header else None
    with dest.open("w", newline="", encoding="utf-8") as out:
        w = csv.writer(out, delimiter=mapping.delimiter)
        w.writerow(header)
        for k in range(n):
            for row in body:
                if k and at is not None and at < len(row) and row[at].strip():
                    row = [*row[:at], f"{row[at]}-s{k}", *row[at + 1:]]
                w.writerow(row)


def spec_file(dataset: str) -> Path:
    path = default_registry().mapping_file(dataset)
    assert path is not None, dataset
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--scale", type=int, default=1, help="concatenate each export N times (unique ids)")
    ap.add_argument("--only", nargs="+", choices=sorted(EXPORTS), help="these exports only")
    args = ap.parse_args()
    results = []
    for name, dataset in EXPORTS.items():
        if args.only and name not in args.only:
            continue
        path = CORPORA / name
        if not path.is_file():
            print(f"skip {name}: not in {CORPORA}", file=sys.stderr)
            continue
        results.append(bench_export(path, dataset, args.repeat, args.scale))
    if args.json:
        json.dump(results, sys.stdout, indent=1)
        print()
        return 0
    print(f"{'export':36} {'rows':>7} {'pyarrow':>9} {'duckdb':>9} {'mapped':>9} {'ingest':>9} {'stream':>9} "
          f"{'ingest/pa':>10} {'ingest/duck':>11} {'stream/duck':>11}")
    for r in results:
        s, q = r["seconds"], r["ratio"]
        stream = f"{s['mapped_stream']:>8.4f}s" if s["mapped_stream"] is not None else f"{'-':>9}"
        sd = f"{q['mapped_stream/duckdb']:>10.1f}x" if "mapped_stream/duckdb" in q else f"{'-':>11}"
        print(f"{r['export']:36} {r['rows']:>7} {s['pyarrow']:>8.4f}s {s['duckdb']:>8.4f}s {s['mapped_read']:>8.4f}s "
              f"{s['mapped_ingest']:>8.4f}s {stream} {q['mapped_ingest/pyarrow']:>9.1f}x "
              f"{q['mapped_ingest/duckdb']:>10.1f}x {sd}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
