"""Land a corpus, map its documents back to their files, run gold questions through ``Retriever``.

The materialization between :func:`land_corpus` and :func:`evaluate` is the caller's
(the CLI runs it through Dagster), so this module stays free of Dagster.
"""

from __future__ import annotations

import datetime as dt
import posixpath
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath
from typing import Any

from codex_pipeline.datasets.registry import DatasetRegistry
from codex_pipeline.evaluation.gold import Question, read_source
from codex_pipeline.evaluation.metrics import Score, Summary, merge, score, summarize
from codex_pipeline.evaluation.source_map import SourceMap, build_source_map
from codex_pipeline.retrieval import Hit, Retriever, SearchMode
from codex_pipeline.warehouse.storage import Warehouse

SPAN_KINDS = ("evidence", "chunk")
"""Which span of a hit is scored: the hit's evidence (what it cites as the answer) or its whole chunk."""


@dataclass(frozen=True)
class CorpusPart:
    """One dataset of an evaluation and the corpus folder its landing day is copied from."""

    dataset: str
    subdir: str = ""  # relative to the corpus folder; "" is the folder itself

    @classmethod
    def parse(cls, value: str) -> CorpusPart:
        """``DATASET`` or ``DATASET=SUBDIR`` (a pooled corpus: one folder per dataset); ``.`` is the corpus folder.

        The name is checked where the registry is known (the CLI's argument types, :func:`source_maps`)."""
        name, _, sub = value.partition("=")
        folder = posixpath.normpath(Path(sub.strip()).as_posix()) if sub.strip() else ""
        return cls(name.strip(), "" if folder == "." else folder)  # "./x.pdf" would match no gold source


def included(rel: PurePosixPath, include: Sequence[str]) -> bool:
    """Whether a corpus file (path relative to its part's folder) is landed: every file when ``include`` is empty,
    else one whose path or name matches a glob (``*.captions.txt`` keeps one rendering of a meeting)."""
    return not include or any(fnmatchcase(rel.as_posix(), g) or fnmatchcase(rel.name, g) for g in include)


def land_corpus(wh: Warehouse, parts: Sequence[CorpusPart], corpus: Path, day: dt.date,
                include: Sequence[str] = ()) -> dict[str, int]:
    """Copy each part's files (relative paths kept, hidden files and files ``include`` leaves out skipped)
    into its landing day folder."""
    copied: dict[str, int] = {}
    for part in parts:
        src = corpus / part.subdir if part.subdir else corpus
        if not src.is_dir():
            raise FileNotFoundError(f"{src} is not a folder: --dataset {part.dataset}={part.subdir} names a sub-folder "
                                    "of --corpus")
        dest = wh.landing_dir(part.dataset, day)
        dest.mkdir(parents=True, exist_ok=True)
        n = 0
        for f in sorted(src.rglob("*")):
            rel = f.relative_to(src)
            if f.is_dir() or any(p.startswith(".") for p in rel.parts) or not included(PurePosixPath(rel), include):
                continue
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, dest / rel)
            n += 1
        copied[part.dataset] = copied.get(part.dataset, 0) + n
    return copied


def source_group(parts: Sequence[CorpusPart]) -> Callable[[Question], str]:
    """How ``--per-source`` groups questions: by corpus sub-folder when several datasets are pooled from their own
    sub-folders, else by source file (a question goes with its first reference)."""
    subdirs = sorted((p.subdir for p in parts if p.subdir), key=len, reverse=True)
    pooled = len(parts) > 1 and bool(subdirs)

    def group(q: Question) -> str:
        source = q.references[0].source
        if pooled:
            return next((d for d in subdirs if source.startswith(d.rstrip("/") + "/")), source)
        return source

    return group


def source_maps(wh: Warehouse, registry: DatasetRegistry, parts: Sequence[CorpusPart], corpus: Path,
                day: dt.date) -> dict[str, SourceMap]:
    """A :class:`SourceMap` per document, from the same reader the pipeline ran on the landed files.

    Several parts may land one dataset (an agenda folder beside its transcripts' folder): the day is read
    once, and each document is mapped under the part whose folder holds its file.
    """
    files: dict[str, str] = {}
    subdirs: dict[str, list[str]] = {}
    for part in parts:
        src = corpus / part.subdir if part.subdir else corpus
        for f in src.rglob("*"):
            if f.is_file():
                files[f.relative_to(corpus).as_posix()] = read_source(f)
        subdirs.setdefault(part.dataset, []).append(part.subdir)
    out: dict[str, SourceMap] = {}
    for dataset, folders in subdirs.items():
        for doc in registry.get(dataset).load_day(wh.landing_dir(dataset, day)).documents:
            prefix = next((s for s in folders if (corpus / s / doc.source_file).is_file()), folders[0])
            out[doc.doc_id] = build_source_map(doc, files, prefix)
    return out


@dataclass(frozen=True)
class ScoredHit:
    """One hit as a question was scored on it: its 1-based ``rank``, the canonical ``spans`` scored (merged) and
    the ``files`` ranges they map to; ``hit`` is what the retriever returned (its score, ranks, evidence text)."""

    rank: int
    hit: Hit | _PropositionUnit
    spans: tuple[tuple[int, int], ...]
    files: dict[str, list[tuple[int, int]]]

    @property
    def unmapped_chars(self) -> int:
        """Scored canonical characters with no place in a source file (template text)."""
        return sum(e - s for s, e in self.spans) - sum(e - s for r in self.files.values() for s, e in r)


@dataclass(frozen=True)
class QuestionResult:
    """One question's score and the hits it was scored on (:mod:`.details` shows them with the gold)."""

    question: Question
    score: Score
    hits: list[ScoredHit] = field(default_factory=list)


@dataclass(frozen=True)
class Evaluation:
    """A run's scores: the summary, each question's result, and the ``k``, ``mode`` and ``spans`` it ran with."""

    summary: Summary
    results: list[QuestionResult]
    k: int
    mode: str
    spans: str
    unmapped_chars: int  # retrieved canonical characters with no place in a source file

    def per_source(self, group: Callable[[Question], str]) -> dict[str, Summary]:
        """The scores of each group of questions (``group``: a question's source file or corpus sub-folder)."""
        groups: dict[str, list[Score]] = {}
        for r in self.results:
            groups.setdefault(group(r.question), []).append(r.score)
        return {g: summarize(scores) for g, scores in sorted(groups.items())}

    def as_dict(self, group: Callable[[Question], str] | None = None) -> dict[str, Any]:
        """JSON-ready: the settings and summary, and per source with ``group`` (:func:`.details.detailed` adds
        every question's gold and hits to this)."""
        out: dict[str, Any] = {"k": self.k, "mode": self.mode, "spans": self.spans, **self.summary.as_dict(),
                               "unmapped_retrieved_chars": self.unmapped_chars}
        if group is not None:
            out["per_source"] = {g: s.as_dict() for g, s in self.per_source(group).items()}
        return out


def hit_spans(hit: Hit | _PropositionUnit, kind: str) -> tuple[tuple[int, int], ...]:
    """The canonical spans a hit is scored on: with ``kind`` ``evidence`` its evidence (its spans when it
    has none), else its spans."""
    return tuple(hit.evidence or hit.spans) if kind == "evidence" else tuple(hit.spans)


UNITS = ("chunks", "propositions")


@dataclass(frozen=True)
class _PropositionUnit:
    """A proposition hit as the scorer sees a chunk hit: its spans are the statement's evidence."""

    doc_id: str
    chunk_id: str
    section_id: str  # the parent chunk's id: a proposition has no section of its own
    spans: tuple[tuple[int, int], ...]
    evidence: tuple[tuple[int, int], ...] = ()
    dataset: str = ""
    score: float = 0.0
    ranks: Mapping[str, int] = field(default_factory=dict)
    evidence_text: tuple[str, ...] = ()


def _hits(retriever: Retriever, question: str, k: int, mode: SearchMode | str, units: str) -> list[Any]:
    if units == "chunks":
        return retriever.search(question, k=k, mode=mode)
    return [
        _PropositionUnit(p.doc_id, p.proposition_id, p.parent_chunk_id, tuple(p.spans), dataset=p.dataset,
                         score=p.score, ranks=dict(p.ranks), evidence_text=p.evidence_text)
        for p in retriever.search_propositions(question, k=k, mode=mode)
    ]


def evaluate(
    retriever: Retriever,
    questions: Sequence[Question],
    maps: dict[str, SourceMap],
    k: int = 5,
    mode: SearchMode | str = SearchMode.HYBRID,
    spans: str = "evidence",
    units: str = "chunks",
) -> Evaluation:
    """Score the top-``k`` hits of every question: chunks, or propositions (``units``) to compare the two."""
    if units not in UNITS:
        raise ValueError(f"units must be one of {', '.join(UNITS)}")
    if spans not in SPAN_KINDS:
        raise ValueError(f"spans must be one of {', '.join(SPAN_KINDS)}")
    results: list[QuestionResult] = []
    unmapped = 0
    for q in questions:
        retrieved: dict[str, list[tuple[int, int]]] = {}
        shown = []
        for at, hit in enumerate(_hits(retriever, q.question, k, mode, units), 1):
            canon = merge(hit_spans(hit, spans))
            smap = maps.get(hit.doc_id)
            scored = ScoredHit(at, hit, tuple(canon), smap.map(canon) if smap else {})
            unmapped += scored.unmapped_chars
            for f, ranges in scored.files.items():
                retrieved.setdefault(f, []).extend(ranges)
            shown.append(scored)
        reference: dict[str, list[tuple[int, int]]] = {}
        for ref in q.references:
            reference.setdefault(ref.source, []).append((ref.start, ref.end))
        results.append(QuestionResult(q, score(retrieved, reference), shown))
    return Evaluation(summarize([r.score for r in results]), results, k, SearchMode(mode).value, spans, unmapped)
