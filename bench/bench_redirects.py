"""Benchmark: the redirect table on a large synthetic partition (no target; reported for the record).

    python bench/bench_redirects.py [--docs N] [--per-doc K]

Builds a partition of N documents x K chunks (~120 words each) and times
``compute_redirects`` for the three shapes a re-chunk can take: nothing changed
(the daily rerun), every id changed with the text lightly edited (a renamed section
path on every chunk), and every chunk rewritten (nothing to follow).
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import time
from collections import Counter

import pyarrow as pa

from codex_pipeline.core.ids import content_hash, make_chunk_id, make_locator
from codex_pipeline.warehouse.redirects import INPUT_COLUMNS, compute_redirects

VOCAB = [f"w{i}" for i in range(3000)]


def partition(docs: int, per_doc: int, suffix: str, rev8: str, mode: str) -> pa.Table:
    cols: dict[str, list] = {c: [] for c in INPUT_COLUMNS}
    for d in range(docs):
        doc = f"urn:aprs:docs:d{d}"
        for k in range(per_doc):
            rng = random.Random(f"{'rewrite' if mode == 'rewrite' else 'base'}:{d}:{k}")  # rewritten texts share none
            words = [rng.choice(VOCAB) for _ in range(120)]
            if mode == "edit":
                words[0] = "edited"
            text = " ".join(words)
            sid = f"s{k}{suffix}"
            cols["chunk_id"].append(make_chunk_id(doc, sid))
            cols["doc_id"].append(doc)
            cols["section_id"].append(sid)
            cols["seq_index"].append(k)
            cols["evidence_anchor"].append(f'{{"page":null,"char_span":[{k * 1000},{k * 1000 + 900}]}}')
            cols["chunking_version"].append("1")
            cols["locator"].append(make_locator(doc, rev8, sid, None, 0))
            cols["content_hash"].append(content_hash(text))
            cols["chunk_text"].append(text)
    return pa.table(cols)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=5000)
    ap.add_argument("--per-doc", type=int, default=20)
    args = ap.parse_args()
    before = partition(args.docs, args.per_doc, "", "aaaaaaaa", "base")
    print(f"partition: {args.docs:,} documents x {args.per_doc} chunks = {before.num_rows:,} chunks")
    for name, after in [
        ("unchanged rerun", before),
        ("every id changed, text lightly edited", partition(args.docs, args.per_doc, "x", "bbbbbbbb", "edit")),
        ("every chunk rewritten", partition(args.docs, args.per_doc, "x", "bbbbbbbb", "rewrite")),
    ]:
        t0 = time.perf_counter()
        out = compute_redirects(before, after, dataset="docs", partition_date=dt.date(2026, 11, 24), chunking_version="2")
        took = time.perf_counter() - t0
        print(f"{name:40s} {took:6.2f} s  {out.num_rows:,} redirect rows {dict(Counter(out.column('match').to_pylist()))}")


if __name__ == "__main__":
    main()
