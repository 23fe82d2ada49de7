"""civic_intelligence structural chunking vs a bare tiktoken encode, side by side (target <= 1.3x).

Chunks the diarized council transcripts (``*.txt`` in the corpus folder) into full
contract rows through ``codex_pipeline.pipeline.chunk`` (parse, agenda-item inference,
exact token counts, merges, ids, anchors, locators, Arrow table) and times it against
``encode_ordinary`` of the same file texts in the same run, interleaved, median of N.
Also prints how often the agenda-item heuristic fired per meeting and the chunk-size
distribution per chunk type.

    python bench/bench_civic.py [CORPUS_DIR] [--repeat N]

CORPUS_DIR defaults to ``../shared/corpora/council`` relative to the repository root.
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import sys
import time
from pathlib import Path

import tiktoken

from codex_pipeline.datasets import steps as pipeline
from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.sources.civic import load_civic_day
from codex_pipeline.sources.council_transcript import infer_agenda_items, parse_transcript
from codex_pipeline.explore.stats import chunk_summary
from codex_pipeline.core.tokens import encoding

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = REPO / ".." / "shared" / "corpora" / "council"
DAY = dt.date(2026, 11, 24)


def bare_encode(enc: tiktoken.Encoding, texts: list[str]) -> int:
    return sum(len(enc.encode_ordinary(t)) for t in texts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args()
    corpus = args.corpus.resolve()
    loaded = load_civic_day(corpus)  # reading files is not timed: both sides start from the texts
    docs = [d for d in loaded.documents if d.source_file.endswith(".txt")]
    if not docs:
        sys.exit(f"no transcripts in {corpus}")
    for r in loaded.rejects:
        print(f"reject: {r.source_file} {r.record_ref or ''}: {r.reason}")
    spec = get_dataset("civic_intelligence")
    texts = [d.text for d in docs]
    enc = encoding()

    print("agenda-item heuristic (chair = who calls the meeting to order):")
    for d in docs:
        parsed = parse_transcript(d.text)
        inf = infer_agenda_items(d.text, parsed.turns)
        numbers = ",".join(str(i.number) for i in inf.items)
        print(f"  {d.record_id}: {len(parsed.turns)} turns, chair {inf.chair!r} ({inf.chair_basis}), "
              f"{inf.fired} announcement(s) fired, {inf.joined} joined the previous item -> "
              f"{len(inf.items)} items [{numbers}]")

    out = pipeline.chunk(spec, DAY, docs)  # warm-up (imports, regex compilation)
    tokens = bare_encode(enc, texts)
    base, codex = [], []
    for _ in range(args.repeat):  # interleaved so both see the same machine state
        t0 = time.perf_counter()
        bare_encode(enc, texts)
        base.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        out = pipeline.chunk(spec, DAY, docs)
        codex.append(time.perf_counter() - t0)
    b, c = statistics.median(base), statistics.median(codex)
    mb = sum(len(t.encode()) for t in texts) / 1e6
    summary = chunk_summary(out.table)
    print(f"corpus: {len(docs)} transcripts, {mb:.2f} MB, {tokens} tokens -> {out.table.num_rows} contract rows "
          f"{summary['chunks_by_type']}")
    print(f"bare tiktoken encode_ordinary:   {b * 1000:8.1f} ms (median of {args.repeat})")
    print(f"codex civic chunks, full rows:   {c * 1000:8.1f} ms")
    print(f"ratio codex / encode_ordinary:   {c / b:.3f}  (target <= 1.30)")
    print("tokens per chunk (p50 / p95 / max):")
    for t, p in summary["tokens_by_type"].items():
        print(f"  {t:14s} {p['p50']:6d} {p['p95']:6d} {p['max']:6d}")
    p = summary["tokens"]
    print(f"  {'all':14s} {p['p50']:6d} {p['p95']:6d} {p['max']:6d}")


if __name__ == "__main__":
    main()
