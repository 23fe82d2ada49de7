"""CPU cost of the chunk contract check beside the chunk step it guards (target: <= 25%).

Builds a deterministic ~10 MB ``narrative`` partition from the prose of the shared
corpora (``*.md``, ``*.txt``, ``*.mbox``): their paragraphs, drawn by a seeded RNG
into documents of 20-400 KB, so no two documents are copies of each other. Chunks it
with ``datasets.steps.chunk`` (the step the Dagster asset runs) and checks the output
with ``validate_chunks`` as the asset does, timing both in CPU seconds
(``time.process_time``, which counts every thread), alternately so both see the same
machine state, and reporting the minimum of several repeats.

    python bench/bench_contract_check.py [CORPUS_DIR] [--mb 10] [--repeat 5] [--fresh 0.2] [--profile]
    python bench/bench_contract_check.py [CORPUS_DIR] --instructions   # callgrind, 1 MB, as bench/check.py counts it

``--instructions`` counts executed instructions of ``validate_chunks`` on a 1 MB partition
against ``encode_ordinary`` of its texts in the same process (bench/check.py's contract bench).
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import pstats
import random
import time
from collections.abc import Callable
from pathlib import Path

from codex_pipeline.core.contract_check import validate_chunks
from codex_pipeline.core.documents import SourceDocument
from codex_pipeline.datasets import steps
from codex_pipeline.datasets.registry import get_dataset

DEFAULT_CORPUS = Path(__file__).resolve().parents[1] / ".." / "shared" / "corpora"
DAY = dt.date(2026, 11, 24)
TARGET = 0.25


# The held-out folds (corpora/independent/, added 2026-12-03) came after bench/baseline.json was recorded: a
# regression check needs the input it was recorded on, so the benches' prose leaves them out.
LATER_FOLDERS = {"independent"}


def prose_files(corpus: Path) -> list[Path]:
    """The ``*.md``, ``*.txt`` and ``*.mbox`` files below ``corpus`` (READMEs and :data:`LATER_FOLDERS` aside)."""
    return sorted(p for p in corpus.rglob("*") if p.suffix in {".md", ".txt", ".mbox"} and p.name != "README.md"
                  and not LATER_FOLDERS & set(p.relative_to(corpus).parts))


def paragraphs(corpus: Path) -> list[str]:
    files = prose_files(corpus)
    paras: list[str] = []
    for p in files:
        text = p.read_text(encoding="utf-8", errors="replace").replace("\r\n", "\n")
        paras.extend(s.strip("\n") for s in text.split("\n\n") if s.strip())
    return paras


def partition(corpus: Path, megabytes: float, fresh: float = 0.0, seed: int = 20261124) -> list[SourceDocument]:
    """Documents of shuffled corpus paragraphs until ``megabytes`` of UTF-8 text.

    ``fresh``: the share of words replaced by random letters, so the partition has the
    larger vocabulary of 10 MB of real text rather than the ~1 MB the corpora hold (the
    token check encodes each distinct word once, so vocabulary is what it pays for).
    """
    rng = random.Random(seed)
    paras = paragraphs(corpus)
    docs: list[SourceDocument] = []
    total, goal = 0, int(megabytes * 1_000_000)
    while total < goal:
        size = rng.randint(20_000, 400_000)
        parts, n = [], 0
        while n < size:
            para = rng.choice(paras)
            if fresh:
                para = _freshen(para, fresh, rng)
            parts.append(para)
            n += len(para.encode()) + 2
        text = "\n\n".join(parts) + "\n"
        name = f"bench/doc-{len(docs):04d}.txt"
        docs.append(SourceDocument(f"urn:aprs:narrative:{name}", name, text, name))
        total += len(text.encode())
    return docs


def _freshen(para: str, share: float, rng: random.Random) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = para.split(" ")
    for i, w in enumerate(words):
        if w.isalpha() and rng.random() < share:
            words[i] = "".join(rng.choice(letters) for _ in w)
    return " ".join(words)


def cpu_seconds(fn: Callable[[], object]) -> float:
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--mb", type=float, default=10.0)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--fresh", type=float, default=0.0, help="share of words replaced by random ones (default 0)")
    ap.add_argument("--profile", action="store_true", help="also print a cProfile of one contract check")
    ap.add_argument("--instructions", action="store_true",
                    help="count instructions under callgrind instead (validate_chunks / encode_ordinary, 1 MB)")
    args = ap.parse_args()
    if args.instructions:
        import check

        found = check.measure(check.Case("contract", args.corpus.name, (args.corpus.resolve(),)))
        print(f"partition: {found['texts']} documents, {found['bytes'] / 1e6:.2f} MB")
        print(f"instructions: validate_chunks {found['work'] / 1e6:.1f} M, encode_ordinary {found['encode_ordinary'] / 1e6:.1f} M")
        print(f"ratio validate_chunks / encode_ordinary (instructions): {found['ratio']:.3f}")
        return
    spec = get_dataset("narrative")
    docs = partition(args.corpus.resolve(), args.mb, args.fresh)
    texts = {d.doc_id: d.text for d in docs}
    mb = sum(len(d.text.encode()) for d in docs) / 1e6
    table = steps.chunk(spec, DAY, docs).table  # warm-up: vocabulary tables, imports
    first_cpu = cpu_seconds(lambda: validate_chunks(table, texts))
    report = validate_chunks(table, texts)
    if not report.passed:
        raise SystemExit(f"the contract failed on the bench partition: {report.failures}")
    chunk_runs, check_runs = [], []
    for _ in range(args.repeat):
        chunk_runs.append(cpu_seconds(lambda: steps.chunk(spec, DAY, docs)))
        check_runs.append(cpu_seconds(lambda: validate_chunks(table, texts)))
    chunk_cpu, check_cpu = min(chunk_runs), min(check_runs)
    share = check_cpu / chunk_cpu
    words = {w for d in docs for w in d.text.split()}
    print(f"partition: {len(docs)} documents, {mb:.2f} MB, {len(words)} distinct words "
          f"-> {table.num_rows} narrative_window rows")
    print(f"chunk step      (steps.chunk): {chunk_cpu:6.3f} s CPU (min of {args.repeat})")
    print(f"contract check (validate_chunks): {check_cpu:6.3f} s CPU (first call in the process: {first_cpu:.3f} s)")
    print(f"check / chunk: {share:.1%}  (target <= {TARGET:.0%})")
    if args.profile:
        prof = cProfile.Profile()
        prof.runcall(validate_chunks, table, texts)
        pstats.Stats(prof).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
