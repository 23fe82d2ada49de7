"""Every file of a folder through the ``documents`` reader and chunker: what a landing day of it would give.

    python bench/check_documents.py DIR [--no-ocr] [--show N]

The way to try the reader on files nobody here has seen (other publishers' PDFs, DOCX, HTML,
Markdown, hostile files included): documents read and by format, rejects grouped by reason, the
chunk contract over the chunks, and the time. Nothing is written; no Dagster. The held-out figures
in ``docs/datasets/documents.md`` ("Tried on PDFs, DOCX and HTML files from other publishers") come
from it and from ``bench/bench_pdf.py --only-check``.
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import re
import time
from pathlib import Path

from codex_pipeline.core.contract_check import validate_chunks
from codex_pipeline.core.documents import Reject
from codex_pipeline.datasets import steps as pipeline
from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.sources.documents import iter_documents_day
from codex_pipeline.sources.pdf_text import PdfLimits

DAY = dt.date(2026, 12, 1)
_DETAIL = re.compile(r"(?<![\w-])\d+(?![\w-])|\(.*\)|'[^']*'|\"[^\"]*\"")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--no-ocr", action="store_true", help="leave scanned pages unread (named rejects)")
    ap.add_argument("--show", type=int, default=3, help="example files per reject reason")
    args = ap.parse_args()
    started = time.perf_counter()
    rejects: list[Reject] = []
    docs = list(iter_documents_day(args.folder, rejects, PdfLimits(ocr=not args.no_ocr)))
    read_s = time.perf_counter() - started
    out = pipeline.chunk(get_dataset("documents"), DAY, docs)
    report = validate_chunks(out.table, {d.doc_id: d.text for d in docs})
    files = sum(1 for p in args.folder.rglob("*") if p.is_file())
    formats = collections.Counter(str((d.payload or {}).get("format")) for d in docs)
    print(f"{files} files: {len(docs)} documents {dict(formats)}, {len(rejects)} rejects "
          f"({len({r.source_file for r in rejects})} files) in {read_s:.1f}s")
    by_reason: dict[str, list[str]] = collections.defaultdict(list)
    for r in rejects:  # grouped by the reason with its numbers and quoted details blanked
        by_reason[_DETAIL.sub("…", r.reason)[:110]].append(r.source_file + (f" ({r.record_ref})" if r.record_ref else ""))
    for reason, where in sorted(by_reason.items(), key=lambda kv: -len(kv[1])):
        print(f"  {len(where):4d}  {reason}   e.g. {', '.join(where[: args.show])}")
    print(f"chunks {out.table.num_rows}, chunk rejects {out.rejects.num_rows}, contract "
          f"{'PASS' if report.passed else report.failed_checks}, {time.perf_counter() - started:.1f}s in all")


if __name__ == "__main__":
    main()
