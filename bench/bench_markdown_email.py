"""Benchmark: docs (Markdown) and email_threads chunking against a bare tiktoken encode.

    python bench/bench_markdown_email.py [--markdown DIR] [--email DIR] [--reps N]

Markdown: the httpx docs chunked into full contract rows by ``pipeline.chunk`` (the
path the Dagster asset runs), timed side by side with ``encode_ordinary`` of the same
texts; the medians' ratio must stay at or under 1.3. The reader's Markdown parse (done
once at ingest, stored as ``raw.blocks``) is timed the same way and reported apart: it is
not part of the chunk step. Email: the python-committers
mbox files read, threaded and chunked into rows, reported in MB/s beside the encode
floor of the same bytes. Corpus folders default to ``../shared/corpora`` beside the repo.
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from codex_pipeline.chunkers.markdown import structure
from codex_pipeline.core.rows import ChunkRun, RowBuffer
from codex_pipeline.core.tokens import encode_array, encoding
from codex_pipeline.datasets import steps as pipeline
from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.sources.email.reader import load_email_day
from codex_pipeline.sources.markdown import load_docs_day, markdown_document, parse_blocks

REPO = Path(__file__).resolve().parents[1]
DEFAULT_MARKDOWN = REPO / ".." / "shared" / "corpora" / "markdown" / "httpx"
DEFAULT_EMAIL = REPO / ".." / "shared" / "corpora" / "email"
DAY = dt.date(2026, 11, 24)
LIMIT = 1.3


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _side_by_side(a, b, reps: int) -> tuple[float, float]:
    """Medians of ``a`` and ``b`` timed alternately, after one warm-up of each."""
    a(), b()
    ta, tb = [], []
    for _ in range(reps):
        ta.append(_timed(a))
        tb.append(_timed(b))
    return statistics.median(ta), statistics.median(tb)


def _dist(table) -> str:
    tok = np.asarray(table.column("token_count").to_pylist())
    return (f"{table.num_rows} chunks, tokens p50 {int(np.percentile(tok, 50))} / p95 {int(np.percentile(tok, 95))} "
            f"/ max {int(tok.max())}")


def bench_markdown(folder: Path, reps: int) -> float:
    loaded = load_docs_day(folder)
    docs = loaded.documents
    spec = get_dataset("docs")
    enc = encoding()
    texts = [d.text for d in docs]
    chars = sum(map(len, texts))
    t_codex, t_tiktoken = _side_by_side(
        lambda: pipeline.chunk(spec, DAY, docs), lambda: [enc.encode_ordinary(t) for t in texts], reps
    )
    out = pipeline.chunk(spec, DAY, docs)
    ratio = t_codex / t_tiktoken
    print(f"docs   {len(docs)} files, {chars:,} chars: {_dist(out.table)}; rejects {len(loaded.rejects) + out.rejects.num_rows}")
    print(f"docs   chunk step: pipeline.chunk (contract rows) {t_codex * 1e3:.2f} ms | tiktoken encode_ordinary "
          f"{t_tiktoken * 1e3:.2f} ms | ratio {ratio:.2f}x (limit {LIMIT}x) {'OK' if ratio <= LIMIT else 'OVER'}")
    _markdown_breakdown(docs, spec, reps)
    _markdown_reader(docs, reps)
    return ratio


def _markdown_reader(docs, reps: int) -> None:
    """The reader's work on texts already in memory (no file I/O): the whole document build, and the parse alone."""
    enc = encoding()
    texts = [(d.record_id, d.text) for d in docs]
    starts = [(d.text, d.payload["body_start"]) for d in docs]
    t_read, t_enc = _side_by_side(lambda: [markdown_document(r, t) for r, t in texts],
                                  lambda: [enc.encode_ordinary(t) for _, t in texts], reps)
    t_parse, t_enc2 = _side_by_side(lambda: [parse_blocks(t, b) for t, b in starts],
                                    lambda: [enc.encode_ordinary(t) for _, t in texts], reps)
    blocks = sum(len(d.blocks) for d in docs)
    print(f"docs   reader (once per ingest): markdown_document {t_read * 1e3:.2f} ms = {t_read / t_enc:.2f}x encode_ordinary "
          f"({t_enc * 1e3:.2f} ms); the parse alone (parse_blocks) {t_parse * 1e3:.2f} ms = {t_parse / t_enc2:.2f}x; "
          f"{blocks} blocks")


def _median_ms(fn, reps: int) -> float:
    fn()
    return statistics.median(_timed(fn) for _ in range(reps)) * 1e3


def _markdown_breakdown(docs, spec, reps: int) -> None:
    """Where pipeline.chunk's time goes, each part timed alone (parts run hot, so they sum below the whole)."""
    texts = [d.text for d in docs]
    drafts = [spec.chunker(d) for d in docs]
    run = ChunkRun(spec.name, DAY, spec.chunking_version, dt.datetime.now(dt.UTC))

    def rows() -> None:
        buf = RowBuffer(run)
        for d, dr in zip(docs, drafts):
            buf.add_document(d, dr)
        buf.to_table()

    encode = _median_ms(lambda: [encode_array(t) for t in texts], reps)
    scan = _median_ms(lambda: [structure(d) for d in docs], reps)
    chunker = _median_ms(lambda: [spec.chunker(d) for d in docs], reps)
    print(f"docs   parts alone: encode_to_numpy {encode:.2f} ms | structure from blocks {scan:.2f} ms "
          f"| sizing, fusing, splitting, drafts {chunker - encode - scan:.2f} ms | contract rows {_median_ms(rows, reps):.2f} ms")


def bench_email(folder: Path, reps: int) -> None:
    files = sorted(folder.glob("*.mbox"))
    size = sum(p.stat().st_size for p in files)
    spec = get_dataset("email_threads")
    enc = encoding()
    raw_texts = [p.read_bytes().decode("utf-8", "replace") for p in files]

    def codex() -> None:
        loaded = load_email_day(folder)
        pipeline.chunk(spec, DAY, loaded.documents)

    t_codex, t_tiktoken = _side_by_side(codex, lambda: [enc.encode_ordinary(t) for t in raw_texts], reps)
    loaded = load_email_day(folder)
    t_load = statistics.median(_timed(lambda: load_email_day(folder)) for _ in range(max(3, reps // 3)))
    out = pipeline.chunk(spec, DAY, loaded.documents)
    msgs = sum(d.payload["message_count"] for d in loaded.documents)
    mb = size / 1e6
    print(f"email  {len(files)} mbox files, {size:,} bytes, {msgs} messages, {len(loaded.documents)} threads: "
          f"{_dist(out.table)}; rejects {len(loaded.rejects) + out.rejects.num_rows}")
    print(f"email  read+thread+chunk {mb / t_codex:.2f} MB/s ({t_codex * 1e3:.1f} ms; read+thread alone {t_load * 1e3:.1f} ms) "
          f"| tiktoken encode_ordinary floor {mb / t_tiktoken:.2f} MB/s ({t_tiktoken * 1e3:.1f} ms) "
          f"| {t_codex / t_tiktoken:.1f}x the floor's time")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", type=Path, default=DEFAULT_MARKDOWN, help="folder of Markdown files (httpx docs)")
    ap.add_argument("--email", type=Path, default=DEFAULT_EMAIL, help="folder of .mbox files (python-committers)")
    ap.add_argument("--reps", type=int, default=21, help="timed repetitions of each side (median reported)")
    args = ap.parse_args(argv)
    for p in (args.markdown, args.email):
        if not p.is_dir():
            print(f"corpus folder not found: {p}", file=sys.stderr)
            return 2
    ratio = bench_markdown(args.markdown.resolve(), args.reps)
    bench_email(args.email.resolve(), max(5, args.reps // 3))
    return 0 if ratio <= LIMIT else 1


if __name__ == "__main__":
    sys.exit(main())
