"""Token-window fallback vs a bare tiktoken encode, side by side (issue 2 target: <= 1.2x).

Chunks the prose of the shared corpora (``*.md``, ``*.txt``, ``*.mbox``) with the
600/50 fallback into full contract rows (exact token counts, ids, offsets, anchors,
locators) and times it against ``encode_ordinary`` of the same texts in the same run.

    python bench/bench_fallback.py [CORPUS_DIR] [--repeat N]
    python bench/bench_fallback.py [CORPUS_DIR] --instructions   # callgrind, as bench/check.py counts it

``--instructions`` measures the narrative dataset's chunk step (``datasets.steps.chunk``) as the
pipeline runs it: on documents read back from a ``raw`` table, which carry the revision digest
computed at ingest (the ingest runs before the counted region).
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import time
from pathlib import Path

import tiktoken

from codex_pipeline.chunkers.narrative import chunk_narrative
from codex_pipeline.core.documents import SourceDocument
from codex_pipeline.core.rows import ChunkRun, RowBuffer
from codex_pipeline.core.tokens import encoding

DEFAULT_CORPUS = Path(__file__).resolve().parents[1] / ".." / "shared" / "corpora"


def load_texts(corpus: Path) -> list[tuple[str, str]]:
    files = sorted(p for p in corpus.rglob("*") if p.suffix in {".md", ".txt", ".mbox"} and p.name != "README.md")
    return [(p.relative_to(corpus).as_posix(), p.read_text(encoding="utf-8", errors="replace")) for p in files]


def codex_rows(texts: list[tuple[str, str]]) -> int:
    run = ChunkRun("narrative", dt.date(2026, 11, 24), "bench", dt.datetime.now(dt.UTC))
    buf = RowBuffer(run)
    for name, text in texts:
        doc = SourceDocument(f"urn:aprs:narrative:{name}", name, text, name)
        buf.add_document(doc, chunk_narrative(doc))
    return buf.to_table().num_rows


def bare_encode(enc: tiktoken.Encoding, texts: list[tuple[str, str]]) -> int:
    return sum(len(enc.encode_ordinary(t)) for _, t in texts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--instructions", action="store_true",
                    help="count instructions under callgrind instead (load-independent; bench/check.py's fallback bench)")
    args = ap.parse_args()
    if args.instructions:
        import check

        found = check.measure(check.Case("fallback", args.corpus.name, (args.corpus.resolve(),)))
        print(f"corpus: {found['texts']} files, {found['bytes'] / 1e6:.2f} MB")
        print(f"instructions: codex fallback {found['work'] / 1e6:.1f} M, encode_ordinary {found['encode_ordinary'] / 1e6:.1f} M")
        print(f"ratio codex / encode_ordinary (instructions): {found['ratio']:.3f}")
        return
    texts = load_texts(args.corpus.resolve())
    enc = encoding()
    mb = sum(len(t.encode()) for _, t in texts) / 1e6
    rows = codex_rows(texts)  # warm-up: vocab tables, imports
    tokens = bare_encode(enc, texts)
    base, codex = [], []
    for _ in range(args.repeat):  # interleaved so both see the same machine state
        t0 = time.perf_counter(); bare_encode(enc, texts); base.append(time.perf_counter() - t0)
        t0 = time.perf_counter(); codex_rows(texts); codex.append(time.perf_counter() - t0)
    b, c = statistics.median(base), statistics.median(codex)
    print(f"corpus: {len(texts)} files, {mb:.2f} MB, {tokens} tokens -> {rows} narrative_window rows")
    print(f"bare tiktoken encode_ordinary: {b * 1000:8.1f} ms (median of {args.repeat})")
    print(f"codex fallback, contract rows: {c * 1000:8.1f} ms")
    print(f"ratio codex / encode_ordinary: {c / b:.3f}  (target <= 1.20)")


if __name__ == "__main__":
    main()
