"""Benchmark: the redirect table on a large synthetic partition (target: <= 1 s per 100k changed chunks).

    python bench/bench_redirects.py [--docs N] [--per-doc K] [--words W] [--check SAMPLE] [--repeat R] [--threads T]
                                    [--matcher exact]

Builds a partition of N documents x K chunks (W words each, 120 by default: about 600
bytes, the size of a median chunk of the bundled sample data) and times
``compute_redirects`` (wall and CPU seconds) for the shapes a re-chunk can take: nothing
changed (the daily rerun), every id changed with the text lightly edited (a renamed
section path on every chunk), every chunk rewritten (nothing to follow), and a mix
(renames, deletions, and edits of every strength, so word-set scores fall on both sides
of the thresholds). Wall seconds are the target (what a materialization waits for); CPU
seconds (``time.process_time``, every thread of the process) are printed beside them, the
work the step takes from a machine shared with other steps. The word-set step scores its
batches on ``--threads T`` threads (default: the cores the process may use, at most 4);
``--threads 1`` gives the one-thread figures, where wall and CPU agree on an idle machine.
``--repeat R`` times each shape R times and reports the least of each (the least
disturbed by other work on the machine).

``--matcher exact`` times the row-at-a-time reference matcher instead (the "before" numbers).
``--check SAMPLE`` also runs the exact row-at-a-time matcher
(:mod:`codex_pipeline_tests.redirect_reference`) on the first SAMPLE chunks' documents
of each shape and reports how many redirect rows (target, kind, score) agree; it exits
non-zero on any difference.
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import sys
import time
from collections import Counter
from functools import partial

import pyarrow as pa
import pyarrow.compute as pc

from codex_pipeline.core.ids import content_hash, make_chunk_id, make_locator
from codex_pipeline.redirects.matching import INPUT_COLUMNS, compute_redirects, default_threads, match_vanished
from codex_pipeline_tests.redirect_reference import exact_matches, exact_redirects

VOCAB = [f"w{i}" for i in range(3000)]


def _mixed(rng: random.Random, words: list[str], k: int) -> tuple[list[str], str] | None:
    """One chunk of the mixed shape: kept, renamed, edited by a random share, rewritten or deleted."""
    roll = rng.random()
    if roll < 0.1:
        return None  # deleted
    if roll < 0.3:
        return words, f"s{k}"  # same id (its text may still change below)
    edited = list(words)
    for pos in rng.sample(range(len(words)), rng.randint(0, len(words))):
        edited[pos] = rng.choice(VOCAB)
    return edited, f"s{k}x"


def partition(docs: int, per_doc: int, suffix: str, rev8: str, mode: str, words_per_chunk: int = 120) -> pa.Table:
    cols: dict[str, list] = {c: [] for c in INPUT_COLUMNS}
    for d in range(docs):
        doc = f"urn:aprs:docs:d{d}"
        seq = 0
        for k in range(per_doc):
            rng = random.Random(f"{'rewrite' if mode == 'rewrite' else 'base'}:{d}:{k}")  # rewritten texts share none
            words = [rng.choice(VOCAB) for _ in range(words_per_chunk)]
            sid = f"s{k}{suffix}"
            if mode == "edit":
                words[0] = "edited"
            elif mode == "mixed":
                chunk = _mixed(random.Random(f"mixed:{d}:{k}"), words, k)
                if chunk is None:
                    continue
                words, sid = chunk
            text = " ".join(words)
            cols["chunk_id"].append(make_chunk_id(doc, sid))
            cols["doc_id"].append(doc)
            cols["section_id"].append(sid)
            cols["seq_index"].append(seq)
            cols["evidence_anchor"].append(f'{{"page":null,"char_span":[{k * 1000},{k * 1000 + 900}]}}')
            cols["chunking_version"].append("1")
            cols["locator"].append(make_locator(doc, rev8, sid, None, 0))
            cols["content_hash"].append(content_hash(text))
            cols["chunk_text"].append(text)
            seq += 1
    return pa.table(cols)


def _first_docs(table: pa.Table, docs: int) -> pa.Table:
    keep = pa.array([f"urn:aprs:docs:d{d}" for d in range(docs)])
    return table.filter(pc.is_in(table.column("doc_id"), value_set=keep))


def check(before: pa.Table, after: pa.Table, docs: int) -> tuple[int, int]:
    """(rows that agree, rows) between the vectorized and the exact matcher on the first docs."""
    old, new = _first_docs(before, docs), _first_docs(after, docs)
    fast, exact = match_vanished(old, new).to_pylist(), exact_matches(old, new).to_pylist()
    same = sum(a == b for a, b in zip(fast, exact))
    for a, b in zip(fast, exact):
        if a != b:
            print(f"  differs: fast {a}\n          exact {b}")
            break
    return same if len(fast) == len(exact) else 0, len(exact)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=5000)
    ap.add_argument("--per-doc", type=int, default=20)
    ap.add_argument("--words", type=int, default=120, metavar="W", help="words per chunk")
    ap.add_argument("--check", type=int, default=0, metavar="SAMPLE",
                    help="compare with the exact matcher on about this many chunks per shape")
    ap.add_argument("--shapes", default="unchanged,edit,rewrite,mixed", help="comma-separated shapes to run")
    ap.add_argument("--repeat", type=int, default=1, metavar="R", help="time each shape R times, report the least")
    ap.add_argument("--threads", type=int, default=None, metavar="T",
                    help="threads of the word-set step (default: the usable cores, at most 4)")
    ap.add_argument("--matcher", choices=["fast", "exact"], default="fast",
                    help="time the vectorized matcher (default) or the row-at-a-time reference")
    args = ap.parse_args()

    def rechunk(suffix: str, mode: str) -> pa.Table:
        return partition(args.docs, args.per_doc, suffix, "aaaaaaaa" if mode == "base" else "bbbbbbbb", mode, args.words)

    before = rechunk("", "base")
    threads = default_threads() if args.threads is None else args.threads
    print(f"partition: {args.docs:,} documents x {args.per_doc} chunks of {args.words} words = {before.num_rows:,} chunks; "
          f"{threads} thread(s) for word sets")
    shapes = {
        "unchanged": ("unchanged rerun", lambda: before),
        "edit": ("every id changed, text lightly edited", lambda: rechunk("x", "edit")),
        "rewrite": ("every chunk rewritten", lambda: rechunk("x", "rewrite")),
        "mixed": ("mixed renames, edits, deletions", lambda: rechunk("", "mixed")),
    }
    failed = False
    for key in args.shapes.split(","):
        name, build = shapes[key]
        after = build()
        matcher = partial(compute_redirects, threads=threads) if args.matcher == "fast" else exact_redirects
        took = cpu = float("inf")
        for _ in range(max(1, args.repeat)):
            t0, c0 = time.perf_counter(), time.process_time()
            out = matcher(before, after, dataset="docs", partition_date=dt.date(2026, 11, 24), chunking_version="2")
            took, cpu = min(took, time.perf_counter() - t0), min(cpu, time.process_time() - c0)
        kinds = dict(sorted(Counter(out.column("match").to_pylist()).items()))
        print(f"{name:40s} {took:6.2f} s wall {cpu:6.2f} s cpu  {out.num_rows:,} redirect rows {kinds}")
        if args.check:
            same, rows = check(before, after, max(1, args.check // args.per_doc))
            failed |= same != rows
            print(f"{'':40s} exact matcher on {max(1, args.check // args.per_doc) * args.per_doc:,} chunks: "
                  f"{same:,} of {rows:,} redirect rows agree")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
