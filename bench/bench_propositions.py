"""Proposition extraction benchmarks, Codex path side by side with its reference in one run.

(a) offline extractor vs bare sentence segmentation (``sentencex``, the segmenter it
    uses) of the same source ranges: the ratio is what clause splitting, pronoun
    resolution, record lines and exact spans cost on top of segmentation.
(b) OpenAI chat path against the loopback server (separate process, 1 s per request by
    default: a chat answer of a few hundred tokens takes that or more; ``--latency-ms``
    to try others) at the default ``max_concurrency`` (4): throughput vs the ceiling
    ``max_concurrency / latency`` requests/s (target >= 90 %). Includes request
    building, exact token counting for the cost reservation, JSON validation and the
    alignment of every statement to the canonical text.

    python bench/bench_propositions.py [CORPUS_DIR] [--repeat N] [--latency-ms MS] [--batches N]

Texts: the Markdown docs and Calgary permits of the shared corpora (``../shared/corpora``)
when present, else the packaged sample landing data of the opted-in datasets.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from codex_pipeline.datasets import steps  # noqa: E402
from codex_pipeline.datasets.registry import default_registry, get_dataset  # noqa: E402
from codex_pipeline.datasets.sample_data import sample_root  # noqa: E402
from codex_pipeline.propositions.base import ChunkInput  # noqa: E402
from codex_pipeline.propositions.offline import OfflineExtractor, sentence_spans  # noqa: E402
from codex_pipeline.propositions.step import chunk_inputs  # noqa: E402

DAY = dt.date(2026, 11, 24)


def best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def load_inputs(corpus: Path) -> list[ChunkInput]:
    """Chunk inputs of the corpus's docs and permits (shared corpora) or of every opted-in sample dataset."""
    folders: list[tuple[str, Path]] = []
    if (corpus / "markdown" / "httpx").is_dir():
        folders.append(("docs", corpus / "markdown" / "httpx"))
    if (corpus / "permits").is_dir():
        folders.append(("permit_signals", corpus / "permits"))
    if not folders:
        folders = [(s.name, d) for s in default_registry() if s.propositions for d in sorted((sample_root() / s.name).iterdir())]
    out: list[ChunkInput] = []
    for name, folder in folders:
        spec = get_dataset(name)
        loaded = spec.load_day(folder)
        raw = steps.ingest(spec, DAY, loaded.documents, loaded.rejects).table
        out += chunk_inputs(steps.chunk(spec, DAY, steps.documents_from_raw(raw)).table, raw)
    return out


def bench_offline(inputs: list[ChunkInput], repeat: int) -> dict[str, float]:
    chars = sum(e - s for c in inputs for s, e in c.sources)
    ex = OfflineExtractor()

    def bare() -> int:
        return sum(len(sentence_spans(c.canonical, s, e)) for c in inputs for s, e in c.sources)

    sentences = bare()
    statements = sum(len(x.statements) for x in ex.extract(inputs).extractions)
    bare_s = best(bare, repeat)
    codex_s = best(lambda: ex.extract(inputs), repeat)
    print(f"(a) offline: {len(inputs):,} chunks, {chars / 1e6:.2f} M chars -> {statements:,} statements "
          f"({sentences:,} sentences), best of {repeat}")
    print(f"    bare sentencex segmentation {bare_s:.3f} s ({chars / bare_s / 1e6:.2f} M chars/s)   "
          f"offline extractor {codex_s:.3f} s ({chars / codex_s / 1e6:.2f} M chars/s, {len(inputs) / codex_s:,.0f} chunks/s)   "
          f"ratio {codex_s / bare_s:.2f}")
    return {"bare_s": bare_s, "codex_s": codex_s, "ratio": codex_s / bare_s, "chunks": len(inputs), "statements": statements}


def start_server(latency_ms: float, key: str) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "codex_pipeline_tests.loopback_openai", "--latency-ms", str(latency_ms), "--api-key", key],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT,
    )
    url = proc.stdout.readline().strip() if proc.stdout else ""
    if not url.startswith("http"):
        raise RuntimeError("loopback server did not start")
    return proc, url


def bench_openai(inputs: list[ChunkInput], repeat: int, latency_ms: float, n_batches: int) -> dict[str, float]:
    from codex_pipeline.propositions.openai_chat import OpenAIChatExtractor
    from codex_pipeline.transport import OpenAIConnection

    key = "sk-bench-not-a-real-key"
    proc, url = start_server(latency_ms, key)
    try:
        ex = OpenAIChatExtractor(connection=OpenAIConnection(key, url))  # the defaults: concurrency 4, 8 chunks per request
        sample = (inputs * (1 + n_batches * ex.max_batch_chunks // max(1, len(inputs))))[: n_batches * ex.max_batch_chunks]
        batches = len(ex._batches(sample))
        ex.extract(sample[: ex.max_batch_chunks * ex.max_concurrency])  # warm-up: connections
        seconds = best(lambda: ex.extract(sample), repeat)
        waves = -(-batches // ex.max_concurrency)
        ceiling_s = waves * latency_ms / 1000
        rps, ceiling_rps = batches / seconds, batches / ceiling_s
        print(f"(b) OpenAI chat path vs loopback server (own process, {latency_ms:g} ms per request), "
              f"{len(sample)} chunks in {batches} requests, max_concurrency={ex.max_concurrency}, best of {repeat}")
        print(f"    ceiling {ceiling_rps:6.1f} req/s   Codex {rps:6.1f} req/s = {rps / ceiling_rps:6.1%} of ceiling   "
              f"({len(sample) / seconds:,.0f} chunks/s)")
        ex.close()
        return {"ceiling_rps": ceiling_rps, "codex_rps": rps, "pct": rps / ceiling_rps}
    finally:
        if proc.stdin:
            proc.stdin.close()
        proc.wait(timeout=10)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", nargs="?", default=str(ROOT.parent / "shared" / "corpora"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--latency-ms", type=float, default=1000.0)  # a chat answer of a few hundred tokens
    ap.add_argument("--batches", type=int, default=40)
    args = ap.parse_args(argv)
    inputs = load_inputs(Path(args.corpus))
    bench_offline(inputs, args.repeat)
    bench_openai(inputs, args.repeat, args.latency_ms, args.batches)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
