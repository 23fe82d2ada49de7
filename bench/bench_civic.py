"""civic_intelligence on the council transcripts: reader, raw round trip and chunk step vs a bare encode.

Times, interleaved in one run (median of N), on the diarized council transcripts
(``*.txt`` in the corpus folder):

* ``encode_ordinary`` of the file texts (the baseline, target chunk step <= 1.3x);
* the reader, ``load_civic_day``: read, parse the speaker blocks, infer the agenda
  items and put both on the documents as blocks;
* the raw round trip, ``ingest`` + ``documents_from_raw``: the blocks written to and
  read back from the ``raw.blocks`` JSON column;
* the chunk step, ``steps.chunk`` on the documents read back from raw (what the chunks
  asset runs): cut at the blocks, exact token counts, merges, ids, anchors, locators,
  Arrow table. It parses nothing.

Also prints how often the agenda-item heuristic fired per meeting (from the blocks),
the size of the blocks next to the text, and the chunk-size distribution per type.

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

from codex_pipeline.core.documents import blocks_to_json
from codex_pipeline.core.tokens import encoding
from codex_pipeline.datasets import steps as pipeline
from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.explore.stats import chunk_summary
from codex_pipeline.sources.civic import load_civic_day

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = REPO / ".." / "shared" / "corpora" / "council"
DAY = dt.date(2026, 11, 24)


def bare_encode(enc: tiktoken.Encoding, texts: list[str]) -> int:
    return sum(len(enc.encode_ordinary(t)) for t in texts)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args()
    corpus = args.corpus.resolve()
    loaded = load_civic_day(corpus)
    docs = [d for d in loaded.documents if d.source_file.endswith(".txt")]
    if not docs:
        sys.exit(f"no transcripts in {corpus}")
    for r in loaded.rejects:
        print(f"reject: {r.source_file} {r.record_ref or ''}: {r.reason}")
    spec = get_dataset("civic_intelligence")
    texts = [d.text for d in docs]
    enc = encoding()

    print("agenda-item heuristic (chair = who calls the meeting to order), as the reader stored it:")
    for d in docs:
        info = (d.payload or {})["transcript"]
        items = d.blocks_of("agenda_item")
        fired = sum(len(i.meta["announcements"]) for i in items)
        joined = fired - sum(1 for i in items if i.meta["announcements"])
        numbers = ",".join(i.key for i in items)
        print(f"  {d.record_id}: {info['turns']} turns, chair {info['chair']!r} ({info['chair_basis']}), "
              f"{fired} announcement(s) fired, {joined} joined the previous item -> {len(items)} items [{numbers}]")
    block_chars = sum(len(blocks_to_json(d.blocks) or "") for d in docs)
    text_chars = sum(map(len, texts))
    print(f"blocks: {sum(len(d.blocks) for d in docs)} as {block_chars} chars of JSON "
          f"({block_chars / text_chars:.0%} of the {text_chars} chars of text)")

    def read() -> list:
        return [d for d in load_civic_day(corpus).documents if d.source_file.endswith(".txt")]

    def round_trip(ds: list) -> list:
        return pipeline.documents_from_raw(pipeline.ingest(spec, DAY, ds, []).table)

    from_raw = round_trip(docs)
    out = pipeline.chunk(spec, DAY, from_raw)  # warm-up (imports, regex compilation)
    tokens = bare_encode(enc, texts)
    times: dict[str, list[float]] = {"encode": [], "reader": [], "raw": [], "chunk": []}
    for _ in range(args.repeat):  # interleaved so all see the same machine state
        t0 = time.perf_counter()
        bare_encode(enc, texts)
        t1 = time.perf_counter()
        fresh = read()
        t2 = time.perf_counter()
        from_raw = round_trip(fresh)
        t3 = time.perf_counter()
        out = pipeline.chunk(spec, DAY, from_raw)
        t4 = time.perf_counter()
        for k, v in zip(times, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
            times[k].append(v)
    m = {k: statistics.median(v) for k, v in times.items()}
    mb = sum(len(t.encode()) for t in texts) / 1e6
    summary = chunk_summary(out.table)
    print(f"corpus: {len(docs)} transcripts, {mb:.2f} MB, {tokens} tokens -> {out.table.num_rows} contract rows "
          f"{summary['chunks_by_type']}")
    print(f"bare tiktoken encode_ordinary:   {m['encode'] * 1000:8.1f} ms (median of {args.repeat})")
    print(f"reader (parse, infer, blocks):   {m['reader'] * 1000:8.1f} ms (file reads included)")
    print(f"raw round trip (blocks JSON):    {m['raw'] * 1000:8.1f} ms")
    print(f"chunk step, full rows:           {m['chunk'] * 1000:8.1f} ms")
    print(f"ratio chunk step / encode:       {m['chunk'] / m['encode']:.3f}  (target <= 1.30)")
    print("tokens per chunk (p50 / p95 / max):")
    for t, p in summary["tokens_by_type"].items():
        print(f"  {t:14s} {p['p50']:6d} {p['p95']:6d} {p['max']:6d}")
    p = summary["tokens"]
    print(f"  {'all':14s} {p['p50']:6d} {p['p95']:6d} {p['max']:6d}")


if __name__ == "__main__":
    main()
