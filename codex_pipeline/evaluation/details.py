"""``codex eval --json --details``: every question's gold and hits, readable without the corpus at hand.

A failing question is read from this output alone: each gold reference carries its text
(the source file's slice, as :func:`~.gold.read_source` reads the file), and each hit its
rank, ids, score, ranks per list and what it cited, mapped back to source-file ranges with
their text, and whether that overlaps the gold. The summary keys stay those of ``--json``
without details (``questions`` is the count; the per-question list is ``details``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from codex_pipeline.evaluation.gold import Question, Reference, read_source
from codex_pipeline.evaluation.metrics import intersection, merge
from codex_pipeline.evaluation.runner import Evaluation, QuestionResult, ScoredHit


class SourceTexts:
    """Source files' texts by corpus-relative path, read once each as gold offsets count them."""

    def __init__(self, corpus: Path) -> None:
        self.corpus = corpus
        self._texts: dict[str, str] = {}

    def text(self, source: str) -> str:
        """The whole text of ``source`` (``""`` when it is not a file under the corpus)."""
        if source not in self._texts:
            path = self.corpus / source
            self._texts[source] = read_source(path) if path.is_file() else ""
        return self._texts[source]

    def slice(self, source: str, start: int, end: int) -> str:
        """Characters ``[start, end)`` of ``source``."""
        return self.text(source)[start:end]


def gold_ranges(question: Question) -> dict[str, list[tuple[int, int]]]:
    """The question's references as merged ranges per source file."""
    out: dict[str, list[tuple[int, int]]] = {}
    for ref in question.references:
        out.setdefault(ref.source, []).append((ref.start, ref.end))
    return {f: merge(r) for f, r in out.items()}


def gold_dict(ref: Reference, texts: SourceTexts) -> dict[str, Any]:
    """One gold reference with its text."""
    return {"source": ref.source, "start": ref.start, "end": ref.end, "text": texts.slice(ref.source, ref.start, ref.end)}


def hit_dict(scored: ScoredHit, gold: dict[str, list[tuple[int, int]]], texts: SourceTexts) -> dict[str, Any]:
    """One scored hit: ids, score, ranks per list, the cited file ranges with their text, and the gold overlap."""
    hit = scored.hit
    cited = [{"source": f, "start": s, "end": e, "text": texts.slice(f, s, e)}
             for f, ranges in sorted(scored.files.items()) for s, e in merge(ranges)]
    covered = sum(intersection(merge(scored.files.get(f, [])), ranges) for f, ranges in gold.items())
    return {"rank": scored.rank, "dataset": hit.dataset, "doc_id": hit.doc_id, "chunk_id": hit.chunk_id,
            "section_id": hit.section_id, "score": hit.score, "ranks": dict(hit.ranks),
            "spans": [list(s) for s in scored.spans], "cited": cited, "unmapped_chars": scored.unmapped_chars,
            "overlaps_gold": covered > 0, "gold_chars_cited": covered}


def question_dict(number: int, result: QuestionResult, texts: SourceTexts) -> dict[str, Any]:
    """One question (``number``: 1-based among the gold file's questions): scores in percent, gold, hits."""
    q, s = result.question, result.score
    gold = gold_ranges(q)
    return {"number": number, "line": q.line, "question": q.question, "recall": round(100 * s.recall, 1),
            "precision": round(100 * s.precision, 1), "iou": round(100 * s.iou, 1), "hit": s.hit,
            "gold": [gold_dict(r, texts) for r in q.references],
            "hits": [hit_dict(h, gold, texts) for h in result.hits]}


def detailed(evaluation: Evaluation, texts: SourceTexts, group: Callable[[Question], str] | None = None,
             numbers: Sequence[int] | None = None) -> dict[str, Any]:
    """``evaluation.as_dict(group)`` plus ``details``: every question's :func:`question_dict` (``numbers``: each
    result's 1-based question number, default 1, 2, …)."""
    out = evaluation.as_dict(group)
    nums = list(numbers) if numbers is not None else list(range(1, len(evaluation.results) + 1))
    out["details"] = [question_dict(n, r, texts) for n, r in zip(nums, evaluation.results)]
    return out
