"""How ``codex search`` prints hits: one ``key=value`` line per hit (easy to grep and parse), then detail lines."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from codex_pipeline.retrieval import Hit, PropositionHit, SearchResults

PREVIEW_CHARS = 240
CONTEXT_CHARS = 100


def print_hits(hits: Sequence[Hit], as_json: bool, searched: Sequence[str]) -> None:
    """Chunk hits: score and ids, then locator, evidence span and text, and a short context."""
    _print(hits, as_json, render_hit, f"  (no hits in {', '.join(searched) or 'any dataset: no search index yet'})")


def print_proposition_hits(hits: Sequence[PropositionHit], as_json: bool) -> None:
    """Proposition hits: score and ids, then the statement, its evidence spans and its parent chunk."""
    _print(hits, as_json, render_proposition,
           "  (no propositions: materialize [dataset, propositions] for a dataset that opts in)")


def _print(hits: Sequence[Any], as_json: bool, render: Callable[[int, Any], str], nothing: str) -> None:
    if as_json:
        print(json.dumps([h.as_dict() for h in hits], ensure_ascii=False, indent=1))
        return
    for i, hit in enumerate(hits, 1):
        print(render(i, hit))
    if not hits:
        print(nothing)


def print_warnings(warnings: Sequence[str]) -> None:
    """Each warning as a ``codex search: warning:`` line on stderr."""
    for w in warnings:
        print(f"codex search: warning: {w}", file=sys.stderr)


def render_hit(i: int, hit: Hit) -> str:
    """Hit ``i`` (its 1-based rank) as its ``key=value`` line, then its locator, evidence and context."""
    ranks = ",".join(f"{k}:{v}" for k, v in sorted(hit.ranks.items()))
    evidence = "; ".join(f"[{s}:{e}]" for s, e in hit.evidence) or "-"
    ev_text = _flat(" … ".join(hit.evidence_text)) or _flat(hit.text)
    before = _flat(hit.context.before)[-CONTEXT_CHARS:]
    after = _flat(hit.context.after)[:CONTEXT_CHARS]
    lines = [
        f"score={hit.score:.4f} rank={i} dataset={hit.dataset} chunk_type={hit.chunk_type} "
        f"partition_date={hit.partition_date.isoformat()} doc_id={hit.doc_id} section_id={hit.section_id} "
        f"chunk_id={hit.chunk_id} ranks={ranks or '-'}",
        f"    locator:  {hit.locator}",
        f"    evidence: {evidence} {_preview(ev_text)}",
    ]
    if before or after:
        lines.append(f"    context:  …{before} ⟦hit⟧ {after}…")
    return "\n".join(lines)


def render_proposition(i: int, h: PropositionHit) -> str:
    """Proposition hit ``i`` (its 1-based rank) as its ``key=value`` line, then the statement, its spans
    (``unaligned`` without) and its parent chunk's text."""
    ranks = ",".join(f"{k}:{v}" for k, v in sorted(h.ranks.items())) or "-"
    spans = "; ".join(f"[{s}:{e}]" for s, e in h.spans) or "unaligned"
    return "\n".join([
        f"score={h.score:.4f} rank={i} dataset={h.dataset} proposition_id={h.proposition_id} "
        f"parent_chunk_id={h.parent_chunk_id} doc_id={h.doc_id} partition_date={h.partition_date.isoformat()} "
        f"extractor={h.extractor} ranks={ranks}",
        f"    proposition: {h.text}",
        f"    evidence: {spans} alignment={h.alignment_score if h.alignment_score is not None else '-'}",
        f"    parent ({h.parent_chunk_type}): {_preview(_flat(h.parent_text))}",
    ])


def _preview(text: str) -> str:
    return f"{text[:PREVIEW_CHARS]}{'…' if len(text) > PREVIEW_CHARS else ''}"


def _flat(text: str) -> str:
    return " ".join(text.split())


def strict_exit(results: SearchResults[Any], strict: bool) -> int:
    """The exit code: 0, or 1 under ``--strict`` when a dataset was left out (its warning, printed first, says why)."""
    if strict and results.skipped:
        print(f"codex search: error: {', '.join(results.skipped)} not searched (no usable search index, see the "
              "warning above) and --strict was given: materialize the [dataset, search_index] asset, or search "
              "without --no-refresh to build it", file=sys.stderr)
        return 1
    return 0
