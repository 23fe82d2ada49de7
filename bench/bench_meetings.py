"""Benchmark: an agenda PDF and its meeting's transcript through civic_intelligence vs through documents.

    python bench/bench_meetings.py [--agenda PDF] [--transcript TXT] [--reps N]

Issue 41's target: raw + chunks of a 15-page agenda plus its 90-minute transcript in
``civic_intelligence`` (outline, motions, sentence segments, alignment with the agenda, the
meeting chunk trees) within 2x the ``documents`` dataset's time for the same two files (page
layout, blocks, packed chunks). Both run the day steps the Dagster raw and chunks assets run
(``pipeline.raw_day.run_raw_day``, ``pipeline.chunks_day.run_chunks_day``: reader, Parquet,
chunker, contract check) on a fresh data directory whose landing day holds the two files. Timed in alternation (a busy machine slows both alike), in
wall-clock and process CPU time; the ratio is civic / documents.
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from codex_pipeline.datasets.registry import DatasetRegistry
from codex_pipeline.pipeline.chunks_day import run_chunks_day
from codex_pipeline.pipeline.raw_day import run_raw_day
from codex_pipeline.settings import CodexSettings
from codex_pipeline.warehouse.storage import Warehouse

CORPORA = Path(__file__).resolve().parents[1].parent / "shared" / "corpora"
AGENDA = CORPORA / "pdf/huntsville-al/2026-07-23-city-council-meeting_agenda.pdf"
TRANSCRIPT = CORPORA / "council_captions/huntsville-al/2026-07-23-city-council-meeting.captions.txt"
DAY = dt.date(2026, 7, 23)


REGISTRY = DatasetRegistry.build(CodexSettings())


def run(dataset: str, files: list[Path], root: Path) -> str:
    """Raw and chunks of one landing day holding ``files``, in a new data directory under ``root``."""
    wh = Warehouse(Path(tempfile.mkdtemp(dir=root)))
    landing = wh.landing_dir(dataset, DAY)
    landing.mkdir(parents=True)
    for f in files:
        shutil.copy(f, landing / f.name)
    spec = REGISTRY.get(dataset)
    run_raw_day(spec, wh, DAY)
    done = run_chunks_day(spec, wh, DAY)
    return str(getattr(done, "summary", done))[:80]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--agenda", type=Path, default=AGENDA)
    ap.add_argument("--transcript", type=Path, default=TRANSCRIPT)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    files = [args.agenda, args.transcript]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        times: dict[str, list[tuple[float, float]]] = {"documents": [], "civic_intelligence": []}
        shape = {}
        for name in times:
            shape[name] = run(name, files, root)  # warm: imports, tokenizer
        for _ in range(args.reps):
            for name in times:
                w0, c0 = time.perf_counter(), time.process_time()
                run(name, files, root)
                times[name].append((time.perf_counter() - w0, time.process_time() - c0))
    print(f"{args.agenda.name} + {args.transcript.name}, {args.reps} reps, medians")
    med = {n: (statistics.median(w for w, _ in t), statistics.median(c for _, c in t)) for n, t in times.items()}
    for name, (w, c) in med.items():
        print(f"  {name:20} {w * 1000:8.1f} ms wall {c * 1000:8.1f} ms cpu   {shape[name]}")
    ratio_w = med["civic_intelligence"][0] / med["documents"][0]
    ratio_c = med["civic_intelligence"][1] / med["documents"][1]
    print(f"  civic / documents: {ratio_w:.2f}x wall, {ratio_c:.2f}x cpu (target <= 2x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
