"""Check that every gold span can be cited at all: some document's text maps onto all of it.

``codex eval`` scores a hit by mapping its canonical-text spans back to file offsets
(:mod:`codex_pipeline.evaluation.source_map`); evidence no document maps to (a CSV
cell the reader rewrote, a header line a rendering dropped) can never be retrieved,
whatever the ranking. This loads the corpus with the dataset's own reader, as the
pipeline does, and prints, per reference, the best share of it one document covers,
and which document; exit 1 when any reference is covered less than fully.

    python eval/check_reachable.py ../shared/corpora eval/seattle.gold.jsonl \\
        seattle_preapplications=permits [--include GLOB] [--show]
"""

from __future__ import annotations

import json
import sys
from fnmatch import fnmatchcase
from pathlib import Path

from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.evaluation.gold import read_source
from codex_pipeline.evaluation.source_map import build_source_map


def main(corpus: Path, gold: Path, part: str, include: list[str], show: bool) -> int:
    dataset, _, sub = part.partition("=")
    folder = corpus / sub if sub else corpus
    files = {f.relative_to(corpus).as_posix(): read_source(f) for f in folder.rglob("*") if f.is_file()}
    docs = [d for d in get_dataset(dataset).load_day(folder).documents
            if not include or any(fnmatchcase(Path(d.source_file).name, g) for g in include)]
    # file → [(file_start, file_end, doc_id)] of every mapped segment
    covered: dict[str, list[tuple[int, int, str]]] = {}
    for d in docs:
        for c0, c1, f, f0 in build_source_map(d, files, sub).segments:
            covered.setdefault(f, []).append((f0, f0 + c1 - c0, d.doc_id))
    bad = total = 0
    for n, line in enumerate(gold.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        for r in json.loads(line)["references"]:
            total += 1
            per_doc: dict[str, int] = {}
            for s, e, doc in covered.get(r["source"], []):
                per_doc[doc] = per_doc.get(doc, 0) + max(0, min(e, r["end"]) - max(s, r["start"]))
            doc, got = max(per_doc.items(), key=lambda kv: kv[1], default=("-", 0))
            share = got / (r["end"] - r["start"])
            if share < 1.0:
                bad += 1
            if share < 1.0 or show:
                print(f"{gold}:{n}: {r['source']} {r['start']}:{r['end']} {100 * share:.0f}% in {doc}")
    print(f"{gold}: {total} references, {bad} not fully reachable", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    args = sys.argv[1:]
    inc = [args[i + 1] for i, a in enumerate(args) if a == "--include"]
    pos = [a for i, a in enumerate(args) if not a.startswith("--") and (i == 0 or args[i - 1] != "--include")]
    sys.exit(main(Path(pos[0]), Path(pos[1]), pos[2], inc, "--show" in args))
