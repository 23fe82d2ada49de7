"""Spans, evidence and bounded context of a hit, cut from the document's canonical text.

Budget: ``context_tokens_per_side`` cl100k tokens
(:class:`~codex_pipeline.retrieval.settings.RetrievalSettings`) before the hit and as many
after it (256 in all), never leaving the hit's family — the stretch its parent and
the parent's children cover (an agenda item and its turns, a case summary and its
citations) — or, for a top-level chunk, its document.
256 tokens is about two short paragraphs: enough to read a turn's lead-in or a
condition's neighbour, small enough that ten hits stay under 4,000 context tokens.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from codex_pipeline.core.tokens import TokenizedText, count_tokens
from codex_pipeline.retrieval.lexical import analyze, sentence_bounds
from codex_pipeline.retrieval.query import AnalyzedQuery
from codex_pipeline.retrieval.settings import DEFAULT
from codex_pipeline.retrieval.types import Context, Span

_CHARS_PER_TOKEN_MAX = 8  # a window this many chars per token always holds the budget's worth of text


def anchor_spans(anchor_json: str) -> tuple[Span, ...]:
    """The character spans an evidence anchor names: ``spans`` when composed, else ``char_span``."""
    anchor = json.loads(anchor_json) if anchor_json else {}
    if anchor.get("spans"):
        return tuple((int(s), int(e)) for s, e in anchor["spans"])
    if anchor.get("char_span"):
        s, e = anchor["char_span"]
        return ((int(s), int(e)),)
    return ()


def evidence(query: AnalyzedQuery, text: str, spans: Sequence[Span], chunk_text: str) -> tuple[Span, ...]:
    """The sentence of a verbatim chunk that matches most query terms, else the chunk's spans.

    Only a verbatim chunk (one span whose text is the chunk text) can be narrowed
    exactly; a composed chunk's evidence is its spans.
    """
    if len(spans) != 1 or query.empty:
        return tuple(spans)
    start, end = spans[0]
    if text[start:end] != chunk_text:
        return tuple(spans)
    wanted = query.matched
    if not wanted:
        return tuple(spans)
    best: tuple[int, Span] | None = None
    for s, e in sentence_bounds(chunk_text):
        hits = len(wanted & set(analyze(chunk_text[s:e])))
        if hits and (best is None or hits > best[0]):
            best = (hits, (start + s, start + e))
    return (best[1],) if best else tuple(spans)


def context(text: str, spans: Sequence[Span], bounds: Span | None, parent_chunk_id: str | None,
            budget: int = DEFAULT.context_tokens_per_side) -> Context:
    """Up to ``budget`` tokens of ``text`` on each side of ``spans``, inside ``bounds`` (default: all of ``text``)."""
    lo, hi = bounds if bounds else (0, len(text))
    first = min(s for s, _ in spans) if spans else lo
    last = max(e for _, e in spans) if spans else lo
    lo, hi = min(lo, first), max(hi, last)
    window = budget * _CHARS_PER_TOKEN_MAX
    before = _tail(text[max(lo, first - window):first], budget)
    after = _head(text[last:min(hi, last + window)], budget)
    return Context(before, after, parent_chunk_id, (lo, hi), count_tokens(before) + count_tokens(after))


def _head(text: str, budget: int) -> str:
    """The longest prefix of ``text`` within ``budget`` tokens, ending at a word boundary."""
    return _cut(text, budget, head=True)


def _tail(text: str, budget: int) -> str:
    """The longest suffix of ``text`` within ``budget`` tokens, starting at a word boundary."""
    return _cut(text, budget, head=False)


def _cut(text: str, budget: int, head: bool) -> str:
    """One encode (char offsets of every token from it); a word-boundary snap, re-checked (BPE of a slice may differ)."""
    while True:
        encoded = TokenizedText(text)
        n = len(encoded)
        if n <= budget:
            return text
        starts = encoded.char_starts
        if head:
            end = int(starts[budget])
            cut = text.rfind(" ", 0, end)
            text = text[: cut if cut > 0 else end].rstrip()
        else:
            start = int(starts[n - budget])
            cut = text.find(" ", start - 1)
            text = text[cut + 1 if 0 <= cut < len(text) - 1 else start:].lstrip()
