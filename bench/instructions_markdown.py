"""Instruction counts of Markdown chunking and reading vs a bare encode, under valgrind (noise-free companion).

    python bench/instructions_markdown.py [--markdown DIR]

Wall-clock ratios on a shared 2-vCPU VM move by several percent from run to run;
``valgrind --tool=callgrind`` counts executed instructions instead, which the machine's
load does not change. They still vary by a few percent between processes: tiktoken's
Rust hash map is seeded at random per process, so its probe sequences differ; hence
``--repeat`` (each repetition reports its own ratio). Each measurement runs one child
process per side, doing the work once and then five more times, under callgrind; the
per-run count is the difference divided by four, so start-up and imports cancel out.
Sides: ``chunk`` (``pipeline.chunk`` to contract rows, the chunk step, on documents read back
from a ``raw`` table as the pipeline reads them, so with the revision digest stored at ingest;
the ingest is start-up and cancels out), ``reader`` (the docs
reader on texts already in memory: front matter and the Markdown parse, done once at
ingest) and ``encode_ordinary`` (the floor both are compared with).
``bench/check.py`` measures the chunk side in one process instead (markers split the
counts of the encode and of the chunk step), which is what CI compares with its record.
Instructions are not time: Python's interpreter retires fewer instructions per cycle
than tiktoken's Rust core, so the wall-clock ratio (``bench_markdown_email.py``) is
higher than this one.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_MARKDOWN = REPO / ".." / "shared" / "corpora" / "markdown" / "httpx"

CHILD = """
import datetime as dt, sys
from pathlib import Path
from codex_pipeline.datasets import steps as pipeline
from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.sources.markdown import load_docs_day, markdown_document
from codex_pipeline.core.tokens import encoding
side, runs = sys.argv[2], int(sys.argv[3])
spec, enc = get_dataset("docs"), encoding()
# as the pipeline's chunk step gets them: ingested into raw (with their revision digests) and read back
raw = pipeline.ingest(spec, dt.date(2026, 11, 24), load_docs_day(Path(sys.argv[1])).documents, [])
docs = pipeline.documents_from_raw(raw.table)
texts = [d.text for d in docs]
pipeline.chunk(spec, dt.date(2026, 11, 24), docs)  # the same warm-up on every side
[enc.encode_ordinary(t) for t in texts]
[markdown_document(d.record_id, d.text) for d in docs]
for _ in range(runs):
    if side == "chunk":
        pipeline.chunk(spec, dt.date(2026, 11, 24), docs)
    elif side == "reader":
        [markdown_document(d.record_id, d.text) for d in docs]
    else:
        [enc.encode_ordinary(t) for t in texts]
"""

SIDES = ("chunk", "reader", "encode_ordinary")


def instructions(folder: Path, side: str, runs: int) -> int:
    env = dict(os.environ, PYTHONHASHSEED="0")
    out = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c", CHILD,
         str(folder), side, str(runs)],
        capture_output=True, text=True, env=env, check=True,
    )
    m = re.search(r"Collected : (\d+)", out.stderr)
    if not m:
        raise RuntimeError(f"no instruction count in valgrind output:\n{out.stderr[-2000:]}")
    return int(m.group(1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", type=Path, default=DEFAULT_MARKDOWN)
    ap.add_argument("--repeat", type=int, default=2, help="measurements per side (about 3 minutes each)")
    ap.add_argument("--sides", nargs="+", choices=SIDES[:2], default=list(SIDES[:2]), help="what to compare with the encode")
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        print("valgrind not found (Debian: apt-get install valgrind)", file=sys.stderr)
        return 2
    folder = args.markdown.resolve()
    ratios: dict[str, list[float]] = {side: [] for side in args.sides}
    for rep in range(1, args.repeat + 1):
        per_run = {}
        for side in [*args.sides, "encode_ordinary"]:
            one, five = instructions(folder, side, 1), instructions(folder, side, 5)
            per_run[side] = (five - one) / 4
        for side in args.sides:
            ratios[side].append(per_run[side] / per_run["encode_ordinary"])
        print(f"#{rep}: " + ", ".join(f"{side} {n / 1e6:.1f} M" for side, n in per_run.items())
              + " instructions per run: " + ", ".join(f"{side} ratio {r[-1]:.3f}" for side, r in ratios.items()))
    for side, r in ratios.items():
        print(f"ratio {side} / encode_ordinary (instructions): {', '.join(f'{x:.3f}' for x in r)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
