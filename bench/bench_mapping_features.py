"""Row accounting of a real export with updates: the Calgary permit export plus a file of update rows,
through real Dagster (the raw step), with ``duplicates: last`` (by ``completeddate``) and a filter.

Prints rows read = landed + rejected + merged + filtered, per file and for the day, from the raw
step's materialization metadata, and checks the sum.

    python bench/bench_mapping_features.py                 # 200 update rows
    python bench/bench_mapping_features.py --updates 500 --seed 7
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import io
import random
import sys
import tempfile
import time
from pathlib import Path

import dagster as dg

from codex_pipeline.defs.definitions import build_definitions
from codex_pipeline.settings import CodexSettings
from codex_pipeline.sources.permits import MAPPINGS_DIR
from codex_pipeline.warehouse.storage import Warehouse

ROOT = Path(__file__).resolve().parents[1]
EXPORT = ROOT.parent / "shared" / "corpora" / "permits" / "calgary_building_permits.csv"
DAY = dt.date(2026, 11, 24)
FEATURES = """duplicates:
  mode: last
  order: {column: completeddate}      # ISO text: a completion later than the export's wins; empty is oldest
filters:
  - {column: workclassgroup, not_in: [Demolition]}   # demolitions are not wanted here
"""


def updates(export: Path, n: int, seed: int) -> str:
    """``n`` update rows of existing permits: completed on a day after the export, as an update feed would."""
    with export.open(newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    at = {c: i for i, c in enumerate(header)}
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(header)
    for row in random.Random(seed).sample(body, n):
        row = list(row)
        row[at["statuscurrent"]] = "Completed"
        row[at["completeddate"]] = "2026-11-23T00:00:00.000"
        w.writerow(row)
    return out.getvalue()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--updates", type=int, default=200)
    ap.add_argument("--seed", type=int, default=40)
    args = ap.parse_args()
    if not EXPORT.exists():
        print(f"skip: {EXPORT} not found", file=sys.stderr)
        return 0
    with tempfile.TemporaryDirectory(prefix="codex-mapfeat-") as tmp:
        root = Path(tmp)
        folder = root / "mappings"
        folder.mkdir()
        text = (MAPPINGS_DIR / "calgary_building_permits.yaml").read_text(encoding="utf-8")
        text = text.replace("dataset: permit_signals", "dataset: calgary_updates") + FEATURES
        (folder / "calgary_updates.yaml").write_text(text, encoding="utf-8")
        wh = Warehouse(root / "data")
        landing = wh.landing_dir("calgary_updates", DAY)
        landing.mkdir(parents=True)
        (landing / "a_export.csv").write_bytes(EXPORT.read_bytes())
        (landing / "b_updates.csv").write_text(updates(EXPORT, args.updates, args.seed), encoding="utf-8")
        defs = build_definitions(CodexSettings(data_dir=wh.root, mapping_folders=(folder,)))
        raw = [a for a in defs.assets or [] if isinstance(a, dg.AssetsDefinition)
               and dg.AssetKey(["calgary_updates", "raw"]) in a.keys]
        t0 = time.perf_counter()
        result = dg.materialize(raw, partition_key=DAY.isoformat(), instance=dg.DagsterInstance.ephemeral(),
                                resources={"warehouse": defs.resources["warehouse"]}, raise_on_error=False)
        took = time.perf_counter() - t0
        if not result.success:
            print("raw step failed:", result.get_step_failure_events()[0].step_failure_data.error, file=sys.stderr)
            return 1
        ev = next(e for e in result.get_asset_materialization_events()
                  if e.asset_key == dg.AssetKey(["calgary_updates", "raw"]))
        meta = {k: v.value for k, v in ev.materialization.metadata.items()}
    print(meta["rows_by_file"])
    r, la, rj, me, fi = (meta[k] for k in ("rows_read", "rows_landed", "rows_rejected", "rows_merged", "rows_filtered"))
    print(f"\nday: read {r} = landed {la} + rejected {rj} + merged {me} + filtered {fi} "
          f"({'balanced' if r == la + rj + me + fi else 'NOT BALANCED'}); raw step {took:.1f} s through Dagster")
    return 0 if r == la + rj + me + fi else 1


if __name__ == "__main__":
    raise SystemExit(main())
