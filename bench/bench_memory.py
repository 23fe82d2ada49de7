"""Peak RSS of one `narrative` partition at 1, 10 and 100 MB of landed text.

Each size runs in a fresh child process that materializes the day's ``narrative/raw``
and ``narrative/chunks`` through real Dagster (``dg.materialize``, checks included)
into its own temp data directory; the figure is that process's peak RSS
(``ru_maxrss`` from ``wait4``). Embeddings are left out: at 100 MB they would take
the local model hours on CPU, and the embed step reads the chunk file in bounded
batches of its own.

The landing day is built from the council transcripts in ``../shared/corpora`` (or
``--corpus``): files of about 200 KB, cut at line ends from the transcripts'
concatenated text, until the size is reached. Target (issue 14): peak at 100 MB
<= 1.5x the peak at 1 MB.

    python bench/bench_memory.py [--sizes 1,10,100] [--corpus DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DAY = "2026-11-24"
FILE_BYTES = 200_000

CHILD = """
import sys, dagster as dg
from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.defs.assets import build_dataset_assets
from codex_pipeline.defs.resources import CodexWarehouse, EmbeddingSettings
steps = [a for a in build_dataset_assets(get_dataset("narrative")) if dg.AssetKey(["narrative", "embeddings"]) not in a.keys]
r = dg.materialize(steps, partition_key=sys.argv[2], instance=dg.DagsterInstance.ephemeral(),
                   resources={"warehouse": CodexWarehouse(data_dir=sys.argv[1]), "embedding": EmbeddingSettings()},
                   raise_on_error=False)
m = r.asset_materializations_for_node("narrative__chunks")
print(int(r.success), m[0].metadata["chunks"].value if m else 0)
"""


def corpus_text(corpus: Path) -> str:
    files = sorted((corpus / "council").glob("*.txt"))
    if not files:
        sys.exit(f"bench_memory: no council transcripts under {corpus / 'council'}; pass --corpus")
    return "\n".join(f.read_text(encoding="utf-8", errors="replace") for f in files)


def land(folder: Path, text: str, megabytes: int) -> int:
    """Write ``megabytes`` MB of transcript text as ~200 KB .txt files; returns the file count."""
    folder.mkdir(parents=True, exist_ok=True)
    target, written, n, pos = megabytes * 1_000_000, 0, 0, 0
    while written < target:
        end = text.find("\n", pos + FILE_BYTES)
        end = len(text) if end < 0 else end
        piece = text[pos:end]
        pos = 0 if end >= len(text) else end + 1
        if not piece.strip():
            continue
        data = f"copy {n}\n{piece}".encode()
        (folder / f"part-{n:05d}.txt").write_bytes(data)
        written += len(data)
        n += 1
    return n


def run(megabytes: int, text: str) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="codex-mem-") as tmp:
        data = Path(tmp) / "data"
        files = land(data / "landing" / "narrative" / DAY, text, megabytes)
        env = {**os.environ, "CODEX_DATA_DIR": str(data), "DAGSTER_HOME": "", "TQDM_DISABLE": "1"}
        env.pop("DAGSTER_HOME")
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(data), DAY], cwd=REPO, env=env, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True,
        )
        out = proc.stdout.read() if proc.stdout else ""
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        ok, chunks = (out.split() + ["0", "0"])[:2]
        if proc.returncode or ok != "1":
            sys.exit(f"bench_memory: the {megabytes} MB run failed (exit {proc.returncode}): {out.strip()}")
        return {"mb": megabytes, "files": files, "chunks": int(chunks), "peak_rss_mb": usage.ru_maxrss / 1024, "wall_s": wall}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1,10,100")
    ap.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "corpora")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    text = corpus_text(args.corpus)
    rows = [run(int(s), text) for s in args.sizes.split(",")]
    base = rows[0]["peak_rss_mb"]
    for r in rows:
        r["ratio_to_smallest"] = r["peak_rss_mb"] / base
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    print(f"{'MB':>5} {'files':>6} {'chunks':>8} {'peak RSS MB':>12} {'x smallest':>11} {'wall s':>7}")
    for r in rows:
        print(f"{r['mb']:>5} {r['files']:>6} {r['chunks']:>8} {r['peak_rss_mb']:>12.0f} {r['ratio_to_smallest']:>11.2f} {r['wall_s']:>7.1f}")
    print(f"peak RSS ratio (100 MB / 1 MB target <= 1.5): {rows[-1]['ratio_to_smallest']:.2f}")


if __name__ == "__main__":
    main()
