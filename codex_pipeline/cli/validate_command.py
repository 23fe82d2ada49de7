"""``codex validate [--dataset DS] [--sample 20] [--gold FILE --corpus DIR]``: seed 003's validator.

On a sample of each dataset's published chunks: unique ids, locator order equal to reading
order within each section / page, offsets that reproduce the text, ids unchanged when the raw
records are re-chunked in memory (:mod:`codex_pipeline.datasets.validation`). With ``--gold``
(the ``codex eval`` format), ``citation_match``: the share of gold references of which the
top hit's chunk spans cover at least half, mapped back to the source files; it must reach
0.90. Exits 1 with a report naming each problem when anything fails, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codex_pipeline.cli.arg_types import day as day_arg
from codex_pipeline.cli.dataset_names import DatasetNames
from codex_pipeline.cli.query_embedder import configured_embedder, query_embedder
from codex_pipeline.datasets import steps
from codex_pipeline.datasets.registry import DatasetRegistry
from codex_pipeline.datasets.validation import DEFAULT_SAMPLE, ValidationReport, validate_dataset
from codex_pipeline.settings import CodexSettings
from codex_pipeline.warehouse.storage import Warehouse

CITATION_TARGET = 0.90
COVERED = 0.5  # a reference counts as cited when the top hit covers at least this share of its characters


def add_validate_command(sub: Any, names: DatasetNames) -> None:
    """Register ``codex validate`` on the CLI's subparsers."""
    v = sub.add_parser("validate", help="seed-003 validator: unique ids, locator order, offsets, stable ids (+ gold)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    v.add_argument("--dataset", "-d", action="append", default=[], metavar="DS[=SUBDIR]", type=names.dataset_part,
                   help="dataset(s) to validate (default: every chunked dataset with published chunks); "
                        "with --gold, SUBDIR is the folder of --corpus the dataset was landed from")
    v.add_argument("--sample", type=int, default=DEFAULT_SAMPLE, help=f"chunks sampled per dataset (default {DEFAULT_SAMPLE})")
    v.add_argument("--seed", type=int, default=0, help="sample seed (default 0: the same sample every run)")
    v.add_argument("--day", action="append", default=[], type=day_arg, help="only these partitions (YYYY-MM-DD, repeatable)")
    v.add_argument("--gold", type=Path, default=None, help="gold questions (codex eval format) for citation_match")
    v.add_argument("--corpus", type=Path, default=None, help="folder the gold sources are relative to "
                   "(default: the gold file's folder)")
    v.add_argument("--mode", choices=["hybrid", "vector", "bm25"], default="hybrid",
                   help="retrieval mode for --gold (default hybrid, as codex search)")
    v.add_argument("--json", action="store_true", help="print the report as JSON")
    v.set_defaults(func=cmd_validate)


@dataclass
class CitationResult:
    """What :func:`citation_match` found: ``matched`` of ``references`` gold references covered by the
    top hit; ``misses`` describes each other one."""

    references: int
    matched: int
    misses: list[str]

    @property
    def match(self) -> float:
        """The share of references matched (0.0 when there are none)."""
        return self.matched / self.references if self.references else 0.0

    @property
    def passed(self) -> bool:
        """Whether :attr:`match` reaches :data:`CITATION_TARGET`."""
        return self.match >= CITATION_TARGET


def cmd_validate(args: argparse.Namespace) -> int:
    """``codex validate``: exit 1 when a check fails (the report names it), 2 on bad arguments or
    when there are no published chunks to validate."""
    wh = Warehouse(args.data_dir)
    try:
        parts = [_part(v, args.names.registry) for v in args.dataset]
        days = [dt.date.fromisoformat(d) for d in args.day] or None
    except (KeyError, ValueError) as exc:
        print(f"codex validate: {exc}", file=sys.stderr)
        return 2
    if args.sample < 1:
        print("codex validate: --sample must be at least 1", file=sys.stderr)
        return 2
    registry = args.names.registry
    names = [n for n, _ in parts] or [n for n in registry.names(chunked=True) if wh.partitions(n, "chunks")]
    if not names:
        print(f"codex validate: no published chunks under {wh.root}: materialize first (codex materialize DAY)",
              file=sys.stderr)
        return 2
    reports = [validate_dataset(wh, registry.get(n), sample=args.sample, seed=args.seed, days=days) for n in names]
    citations = None
    if args.gold is not None:
        try:
            citations = citation_match(wh, args.gold, args.corpus or args.gold.parent, parts or [(n, "") for n in names],
                                       args.settings, args.mode)
        except (ValueError, OSError) as exc:
            print(f"codex validate: {exc}", file=sys.stderr)
            return 2
    ok = all(r.passed for r in reports) and (citations is None or citations.passed)
    if args.json:
        out: dict[str, Any] = {"passed": ok, "datasets": [r.as_dict() for r in reports]}
        if citations is not None:
            out["citation_match"] = {"value": round(citations.match, 4), "target": CITATION_TARGET,
                                     "references": citations.references, "matched": citations.matched,
                                     "misses": citations.misses}
        print(json.dumps(out, indent=1))
    else:
        _print(reports, citations)
    return 0 if ok else 1


def _part(value: str, registry: DatasetRegistry) -> tuple[str, str]:
    name, _, sub = value.partition("=")
    spec = registry.get(name.strip())  # KeyError names the known datasets
    if not spec.chunked:
        raise KeyError(f"{spec.name} is not chunked: nothing to validate")
    return spec.name, Path(sub.strip()).as_posix() if sub.strip() else ""


def _print(reports: Sequence[ValidationReport], citations: CitationResult | None) -> None:
    for r in reports:
        print("\n".join(r.lines()))
    if citations is not None:
        mark = "ok  " if citations.passed else "FAIL"
        print(f"gold: {mark} citation_match {citations.match:.3f} ({citations.matched}/{citations.references} "
              f"references covered by the top hit; target {CITATION_TARGET:.2f})")
        for m in citations.misses[:20]:
            print(f"  [citation_match] {m}")
    failed = [r.dataset for r in reports if not r.passed]
    if failed or (citations is not None and not citations.passed):
        print(f"codex validate: FAILED ({', '.join(failed + (['citation_match'] if citations and not citations.passed else []))})")
    else:
        print("codex validate: all checks passed")


def citation_match(wh: Warehouse, gold: Path, corpus: Path, parts: Sequence[tuple[str, str]],
                   settings: CodexSettings, mode: str = "hybrid") -> CitationResult:
    """Share of gold references whose characters the top hit's chunk covers at least :data:`COVERED` of."""
    from codex_pipeline.evaluation.gold import load_gold, read_source
    from codex_pipeline.evaluation.metrics import intersection, merge
    from codex_pipeline.evaluation.source_map import build_source_map
    from codex_pipeline.retrieval import Retriever, SearchMode

    questions = load_gold(gold, corpus)
    files = {f.relative_to(corpus).as_posix(): read_source(f) for f in corpus.rglob("*") if f.is_file()}
    maps = {}
    for name, sub in parts:
        for day in wh.partitions(name, "raw"):
            for doc in steps.documents_from_raw(wh.read(name, "raw", day)):
                maps[doc.doc_id] = build_source_map(doc, files, sub)
    kind = configured_embedder(settings)
    embedder = query_embedder(kind, settings) if kind == "openai" else None  # the local model: built by the Retriever
    retriever = Retriever(wh.root, [n for n, _ in parts], embedder=embedder, embedder_kind=kind)
    total = matched = 0
    misses = []
    for q in questions:
        hits = retriever.search(q.question, k=1, mode=SearchMode(mode))
        mapped: dict[str, list[tuple[int, int]]] = {}
        if hits and hits[0].doc_id in maps:
            mapped = maps[hits[0].doc_id].map(merge(tuple(hits[0].spans)))
        for ref in q.references:
            total += 1
            got = intersection(merge(mapped.get(ref.source, [])), [(ref.start, ref.end)])
            if got >= COVERED * (ref.end - ref.start):
                matched += 1
            else:
                top = f"top hit {hits[0].chunk_id} ({hits[0].doc_id})" if hits else "no hit"
                misses.append(f"line {q.line} {q.question[:60]!r}: {ref.source}[{ref.start}:{ref.end}] "
                              f"{got}/{ref.end - ref.start} chars covered by {top}")
    return CitationResult(total, matched, misses)
