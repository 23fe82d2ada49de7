"""Benchmark: the documents dataset's PDF path against pdfium's bare text extraction.

    python bench/bench_pdf.py [--pdf DIR] [--reps N] [--check [--ocr]]
    python bench/bench_pdf.py --pdf DIR --only-check [--ocr]   # a folder of PDFs nobody here has seen

Side by side in one run, in pages per second over every PDF of the folder (default
``../shared/corpora/pdf`` beside the repo; scans are rejected, so they cost an open only):

- ``bare``: ``pypdfium2`` opening each file and taking each page's text (the floor);
- ``step``: what the Dagster assets run: the reader (``sources.documents.pdf_document``:
  lines, boxes, running lines, headings, blocks) plus ``pipeline.chunk`` (contract rows:
  ids, anchors, locators); the ratio step/bare has a target of 1.5;
- ``pypdf`` and ``pdfplumber`` bare extraction, when installed;
- two chunking paths a user would pick instead, when installed: pypdf's page text through
  LlamaIndex's ``SentenceSplitter`` (512 tokens, overlap 64: one node per piece, page in the
  node's metadata) and through LangChain's ``RecursiveCharacterTextSplitter`` (2,000 characters,
  overlap 200, ``langchain-text-splitters``), the LangChain ``PyPDFLoader`` way without its
  community package.

``bare`` and ``step`` are timed in alternation (pairs, so a busy machine slows both alike) in
wall-clock and in process CPU time; the CPU ratio is the stable one on a shared machine.

``--check`` also reports what ``docs/datasets/documents.md`` states: every PDF chunked or
rejected with a reason, offset mismatches, the chunk contract, and page accuracy (the first 8
words of each chunk on its cited pages (its start page to its last) in poppler's ``pdftotext -f p -l p``; needs poppler-utils).
``--only-check`` skips the timings, whose bare paths stop at the first file they cannot open: the
way to try the reader on a folder of other publishers' PDFs, hostile ones included.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import shutil
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from codex_pipeline.core.contract_check import validate_chunks
from codex_pipeline.core.documents import Reject, SourceDocument
from codex_pipeline.datasets import steps as pipeline
from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.sources.documents import read_file
from codex_pipeline.sources.pdf_text import PdfLimits

REPO = Path(__file__).resolve().parents[1]
DEFAULT_PDF = REPO / ".." / "shared" / "corpora" / "pdf"
DAY = dt.date(2026, 12, 1)
TARGET = 1.5
_WORD = re.compile(r"\w+")


def bare_pdfium(files: list[Path]) -> int:
    import pypdfium2 as pdfium

    pages = 0
    for f in files:
        doc = pdfium.PdfDocument(str(f))
        for i in range(len(doc)):
            page = doc[i]
            tp = page.get_textpage()
            tp.get_text_range()
            tp.close()
            page.close()
            pages += 1
        doc.close()
    return pages


def step(files: list[Path], root: Path, ocr: bool = False) -> tuple[list[SourceDocument], list[Reject], int]:
    rejects: list[Reject] = []
    limits = PdfLimits(ocr=ocr)  # timed: the text-layer path; OCR is measured apart (docs/datasets/documents.md)
    docs = [d for f in files if (d := read_file(f, root, rejects, limits)) is not None]  # the assets' guarded path
    table = pipeline.chunk(get_dataset("documents"), DAY, docs).table
    return docs, rejects, table.num_rows


def other(name: str, files: list[Path]) -> Callable[[], object] | None:
    try:
        if name == "pypdf":
            import pypdf

            return lambda: [p.extract_text() for f in files for p in pypdf.PdfReader(f).pages]
        import pdfplumber

        def plumber() -> None:
            for f in files:
                with pdfplumber.open(f) as pdf:
                    for p in pdf.pages:
                        p.extract_text()
        return plumber
    except ImportError:
        return None


def chunker(name: str, files: list[Path]) -> Callable[[], int] | None:
    """pypdf page text through another library's splitter: chunks made over all files."""
    try:
        import pypdf

        if name == "llamaindex":
            from llama_index.core import Document
            from llama_index.core.node_parser import SentenceSplitter

            splitter = SentenceSplitter(chunk_size=512, chunk_overlap=64)

            def llama() -> int:
                docs = [Document(text=p.extract_text(), metadata={"file": f.name, "page": i + 1})
                        for f in files for i, p in enumerate(pypdf.PdfReader(f).pages)]
                return len(splitter.get_nodes_from_documents(docs))
            return llama
        from langchain_text_splitters import RecursiveCharacterTextSplitter

        cutter = RecursiveCharacterTextSplitter(chunk_size=2000, chunk_overlap=200)

        def lang() -> int:
            return sum(len(cutter.split_text(p.extract_text())) for f in files for p in pypdf.PdfReader(f).pages)
        return lang
    except ImportError:
        return None


def timed(fn: Callable[[], object], reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def paired(a: Callable[[], object], b: Callable[[], object], reps: int) -> tuple[float, float, float, float]:
    """Median wall and CPU seconds of ``a`` and ``b`` run in alternation: (wall a, wall b, cpu a, cpu b)."""
    runs: list[tuple[float, float]] = []
    for _ in range(reps):
        for fn in (a, b):
            w, c = time.perf_counter(), time.process_time()
            fn()
            runs.append((time.perf_counter() - w, time.process_time() - c))
    med = [statistics.median(r[k] for r in runs[i::2]) for k in (0, 1) for i in (0, 1)]
    return med[0], med[1], med[2], med[3]


def check(root: Path, files: list[Path], ocr: bool) -> None:
    docs, rejects, _ = step(files, root, ocr)
    chunked = pipeline.chunk(get_dataset("documents"), DAY, docs)
    table = chunked.table
    report = validate_chunks(table, {d.doc_id: d.text for d in docs})
    names = {f.relative_to(root).as_posix() for f in files}
    unchunked = {r["source_file"]: r["reason"] for r in chunked.rejects.to_pylist()}
    done = {d.source_file for d in docs} | {r.source_file for r in rejects if r.record_ref is None}
    print(f"PDFs {len(names)}: chunked {len(docs) - len(unchunked)}, rejected {len(names) - len(docs) + len(unchunked)}, "
          f"neither: {sorted(names - done)}")
    for r in rejects:
        print(f"  reject {r.source_file} {r.record_ref or ''}: {r.reason}")
    for name, reason in unchunked.items():
        print(f"  reject {name} (chunk stage): {reason}")
    print(f"contract: {'PASS' if report.passed else report.failed_checks} ({table.num_rows} chunks)")
    by_doc = {d.doc_id: d for d in docs}
    mismatches = checked = good = ocr_chunks = 0
    words_of: dict[tuple[str, int], set[str]] = {}
    have_poppler = shutil.which("pdftotext") is not None
    for row in table.to_pylist():
        doc = by_doc[row["doc_id"]]
        anchor = json.loads(row["evidence_anchor"])
        spans = anchor.get("spans") or [anchor["char_span"]]
        parts = [doc.text[s:e] for s, e in spans]
        if any(p not in row["chunk_text"] for p in parts) or (len(parts) == 1 and parts[0] != row["chunk_text"]):
            mismatches += 1
        if not have_poppler:
            continue
        if "ocr_confidence" in json.loads(row["metadata"] or "{}"):
            ocr_chunks += 1  # pdftotext has no text (or the scanner's OCR layer) for an OCR page: nothing to check against
            continue
        first, last = anchor.get("pages") or (anchor["page"], anchor["page"])
        on_pages: set[str] = set()
        for page in range(first, last + 1):  # a chunk running over a page break: its first words may be on the next
            key = (doc.source_file, page)
            if key not in words_of:
                out = subprocess.run(["pdftotext", "-f", str(page), "-l", str(page), str(root / key[0]), "-"],
                                     capture_output=True, text=True).stdout
                words_of[key] = set(_WORD.findall(out.lower()))
            on_pages |= words_of[key]
        checked += 1
        good += all(w in on_pages for w in _WORD.findall(row["chunk_text"].lower())[:8])
    print(f"offset mismatches: {mismatches}")
    if have_poppler:
        print(f"page accuracy: {good}/{checked} ({good / max(checked, 1):.1%}) text-layer chunks whose first 8 words are "
              f"on their cited pages per pdftotext ({ocr_chunks} chunks read by OCR not checked)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pdf", type=Path, default=DEFAULT_PDF)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--check", action="store_true", help="also the offsets, contract and page accuracy figures")
    ap.add_argument("--ocr", action="store_true",
                    help="--check with OCR on: scans and OCR layers read by tesseract (minutes)")
    ap.add_argument("--only-check", action="store_true", help="--check without the timings")
    args = ap.parse_args()
    root = args.pdf.resolve()
    files = sorted(root.rglob("*.pdf"))
    if args.only_check:
        check(root, files, args.ocr)
        return
    pages = bare_pdfium(files)  # also the warm-up
    step(files, root)
    t_bare, t_step, c_bare, c_step = paired(lambda: bare_pdfium(files), lambda: step(files, root), args.reps)
    print(f"{len(files)} PDFs, {pages} pages, median of {args.reps} alternating pairs")
    print(f"  bare pypdfium2 text:   {pages / t_bare:8.1f} pages/s  (CPU {pages / c_bare:.1f})")
    print(f"  documents raw+chunks:  {pages / t_step:8.1f} pages/s  (CPU {pages / c_step:.1f})  "
          f"ratio {t_step / t_bare:.2f} wall, {c_step / c_bare:.2f} CPU (target <= {TARGET})")
    for name in ("pypdf", "pdfplumber"):
        fn = other(name, files)
        if fn is None:
            print(f"  {name}: not installed")
            continue
        print(f"  bare {name} text: {pages / timed(fn, 1):10.1f} pages/s (one run)")
    for name, label in (("llamaindex", "pypdf + LlamaIndex SentenceSplitter"),
                        ("langchain", "pypdf + LangChain RecursiveCharacterTextSplitter")):
        split = chunker(name, files)
        if split is None:
            print(f"  {label}: not installed")
            continue
        chunks: list[int] = []
        secs = timed(lambda: chunks.append(split()), 1)  # noqa: B023 - called at once
        print(f"  {label}: {pages / secs:8.1f} pages/s, {chunks[-1]} chunks (one run; no page-exact offsets, "
              "running lines kept)")
    if args.check:
        check(root, files, args.ocr)


if __name__ == "__main__":
    main()
