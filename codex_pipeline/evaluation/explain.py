"""``codex eval --explain N``: one question laid open — its gold text, each hit's cited text and score parts.

Picking the question (:func:`pick_question`: a 1-based number, or words of the question),
the explanation as JSON (:func:`explanation`: :func:`~.details.question_dict` plus each
hit's :class:`~.score_parts.ScoreParts` and the retriever's own evidence text) and as text
for a person (:func:`render`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from codex_pipeline.evaluation.details import SourceTexts, question_dict
from codex_pipeline.evaluation.gold import Question
from codex_pipeline.evaluation.runner import Evaluation
from codex_pipeline.evaluation.score_parts import ScoreParts

TEXT_LIMIT = 1200
"""Characters of one text shown by :func:`render` (``--json`` shows all)."""


class ExplainError(ValueError):
    """``--explain`` names no single question; the message says what to give instead."""


def pick_question(questions: Sequence[Question], selector: str, gold: str = "the gold file") -> int:
    """The 1-based number of the question ``selector`` names: a number, else words (case-insensitive) that
    occur in exactly one question."""
    want = selector.strip()
    n = len(questions)
    if want.isdigit():
        if 1 <= int(want) <= n:
            return int(want)
        raise ExplainError(f"--explain {want}: {gold} has {n} question(s): give a number from 1 to {n} "
                           "or words of one question")
    found = [i for i, q in enumerate(questions, 1) if want.casefold() in q.question.casefold()] if want else []
    if len(found) == 1:
        return found[0]
    if not found:
        raise ExplainError(f"--explain {selector!r}: no question of {gold} contains these words: give a question "
                           f"number (1 to {n}) or words of one question")
    shown = ", ".join(map(str, found[:8])) + (", …" if len(found) > 8 else "")
    raise ExplainError(f"--explain {selector!r} matches {len(found)} questions of {gold} ({shown}): give more of the question's "
                       "words or its number")


def explanation(evaluation: Evaluation, number: int, parts: Sequence[ScoreParts], texts: SourceTexts) -> dict[str, Any]:
    """The one question of ``evaluation`` (numbered ``number``) with each hit's score parts and evidence text."""
    (result,) = evaluation.results
    out = {"k": evaluation.k, "mode": evaluation.mode, "spans": evaluation.spans,
           **question_dict(number, result, texts)}
    for shown, scored, p in zip(out["hits"], result.hits, parts):
        shown["score_parts"] = p.as_dict()
        shown["evidence_text"] = list(scored.hit.evidence_text)
    return out


def render(exp: dict[str, Any]) -> str:
    """The explanation for a person: the question and its scores, the gold texts, then each hit."""
    lines = [f"question {exp['number']} (gold line {exp['line']}): {exp['question']}",
             f"top-{exp['k']}, {exp['mode']}, {exp['spans']} spans: recall {exp['recall']:.1f}, precision "
             f"{exp['precision']:.1f}, IoU {exp['iou']:.1f}, hit {'yes' if exp['hit'] else 'no'}", "",
             f"gold ({len(exp['gold'])} reference(s)):"]
    for g in exp["gold"]:
        lines += [f"  {g['source']} [{g['start']}:{g['end']}]", *_quoted(g["text"], "    ")]
    lines += ["", f"hits ({len(exp['hits'])}):" if exp["hits"] else "hits: none"]
    for h in exp["hits"]:
        overlap = f"yes ({h['gold_chars_cited']} gold characters)" if h["overlaps_gold"] else "no"
        lines += [f"  #{h['rank']} {h['dataset']} {h['chunk_id']} (section {h['section_id']}, {h['doc_id']})",
                  f"     score: {_parts(h['score_parts'])}", f"     overlaps gold: {overlap}"]
        for run in _runs(h["cited"]):
            first, last = run[0], run[-1]
            pieces = f" in {len(run)} ranges (the few characters between them, e.g. quote marks, not cited)" \
                if len(run) > 1 else ""
            lines += [f"     cited {first['source']} [{first['start']}:{last['end']}]{pieces}:",
                      *_quoted("\n".join(c["text"] for c in run), "       ")]
        if h["unmapped_chars"]:
            lines.append(f"     {h['unmapped_chars']} cited characters have no place in a source file (template text)")
        if not h["cited"]:
            lines += ["     evidence (canonical text):", *_quoted("\n".join(h["evidence_text"]), "       ")]
    return "\n".join(lines)


GAP = 8
"""Cited ranges of one file at most this many characters apart are shown as one passage: a reply's quoted lines
map line by line, each range stopping before the next line's ``> `` marks."""


def _runs(cited: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """``cited`` (sorted per file) grouped into runs of ranges of one file at most :data:`GAP` characters apart."""
    runs: list[list[dict[str, Any]]] = []
    for c in cited:
        prev = runs[-1][-1] if runs else None
        if prev is not None and prev["source"] == c["source"] and c["start"] - prev["end"] <= GAP:
            runs[-1].append(c)
        else:
            runs.append([c])
    return runs


def _parts(p: dict[str, Any]) -> str:
    def one(name: str, value: float | None, rank: int | None) -> str:
        where = f"rank {rank}" if rank is not None else "not in its list"
        return f"{name} {'n/a' if value is None else f'{value:.4f}'} ({where})"

    return f"fused {p['fused']:.4f} · {one('bm25', p['bm25'], p['bm25_rank'])} · " \
           f"{one('cosine', p['cosine'], p['vector_rank'])}"


def _quoted(text: str, indent: str) -> list[str]:
    """``text`` line by line behind ``| `` (so its own blank lines and edges show), cut at :data:`TEXT_LIMIT`."""
    shown = text[:TEXT_LIMIT]
    out = [f"{indent}| {line}" for line in shown.split("\n")]
    if len(text) > TEXT_LIMIT:
        out.append(f"{indent}… ({len(text) - TEXT_LIMIT} more characters; --json shows all)")
    return out
