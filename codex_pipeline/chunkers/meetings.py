"""civic_intelligence: agendas, minutes and transcripts without speakers, cut at the reader's blocks.

Agendas and minutes (``payload["meeting"]["kind"]`` ``agenda`` / ``minutes``), one tree per item:

* ``agenda_item`` — ``item.{key}``: the item's heading and its own text when that is short (an
  agenda entry: title, resolution number, sponsor); for a long item (minutes' discussion) the
  heading and the vote lines of its motions, its text going to ``item_text`` children. A
  sub-item (``item.9.a``) is a child of its item.
* ``item_text`` — ``item.{key}.text.{m}``: the item's own text outside its motions and
  conditions: the reader's paragraphs (the PDF layout's ``para`` / ``item`` / ``table`` blocks, a
  text file's blank-line paragraphs) packed in order up to ``text_tokens``; a paragraph over that
  is cut at line, sentence and word ends.
* ``motion`` — ``item.{key}.motion.{m}``: a motion with its vote line, mover, seconder, ayes,
  noes, abstentions, absent and result in its metadata (``codex.civic_intelligence_votes``).
* ``condition`` — ``item.{key}.condition.{k}``: a condition of approval.

Every chunk is page-addressed as in ``documents``; running headers and footers are in no chunk.

Transcripts without speakers: ``agenda_item`` — ``item.{key}`` composed from the agenda title it
was aligned with (or the announcement that started it) and the opening of its first segment; its
``transcript_segment`` children (``item.{key}.segment.{m}``) are the reader's sentence-bounded
segments, each with the caption timestamp before it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from codex_pipeline.chunkers.record_view import RecordLimits, blocks_needed
from codex_pipeline.core.contract import MAX_CHUNK_TOKENS, ChunkType
from codex_pipeline.core.documents import Block, PageIndex, SourceDocument
from codex_pipeline.core.rows import ChunkDraft
from codex_pipeline.core.splitting import bounded_split, trim
from codex_pipeline.core.tokens import TokenizedText, count_tokens_batch

PARAGRAPH_KINDS = frozenset({"para", "item", "table"})  # the reader's layout units an item's text is packed from
ITEM_TOKENS = 400  # an item whose own text is within this is one agenda_item chunk, text and all
TEXT_TOKENS = 512  # item_text pieces are packed up to this: the documents dataset's size for the same PDFs' paragraphs
EXCERPT_CHARS = 300  # the opening of a transcript item quoted in its summary


@dataclass(frozen=True)
class MeetingLimits(RecordLimits):
    """``item_tokens``: an item's own text up to this stays in its agenda_item chunk; ``text_tokens``: size of
    the item_text pieces of a longer one; ``excerpt_chars``: the transcript opening quoted in an item summary."""

    item_tokens: int = ITEM_TOKENS
    text_tokens: int = TEXT_TOKENS
    excerpt_chars: int = EXCERPT_CHARS


def _subtract(span: tuple[int, int], holes: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """``span`` without the ``holes`` (sorted), as the pieces left."""
    out = []
    s, e = span
    for hs, he in holes:
        if he <= s or hs >= e:
            continue
        if hs > s:
            out.append((s, hs))
        s = max(s, he)
    if s < e:
        out.append((s, e))
    return out


def _trim(text: str, spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans with surrounding whitespace removed; empty ones dropped."""
    return [t for t in (trim(text, s, e) for s, e in spans) if t[1] > t[0]]


def _page_extra(pages: PageIndex, spans: Sequence[tuple[int, int]]) -> dict[str, Any] | None:
    """``{"pages": [first, last]}`` for a chunk that runs onto later pages."""
    first, last = pages.at(spans[0][0]), pages.at(spans[-1][1] - 1)
    return {"pages": [first, last]} if first is not None and last is not None and last != first else None


def _joined(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """A chunk's text: its one span verbatim, or its spans joined by newlines."""
    return text[spans[0][0] : spans[0][1]] if len(spans) == 1 else "\n".join(text[s:e] for s, e in spans)


def _draft(text: str, sid: str, kind: ChunkType, spans: list[tuple[int, int]], tokens: int, parent: str | None,
           pages: PageIndex, meta: dict[str, Any]) -> ChunkDraft:
    return ChunkDraft(sid, kind, _joined(text, spans), tuple(spans), tokens, parent, page=pages.at(spans[0][0]),
                      anchor_extra=_page_extra(pages, spans), metadata=meta)


def chunk_meeting_record(doc: SourceDocument, limits: MeetingLimits = MeetingLimits()) -> list[ChunkDraft]:
    """Chunk tree of an agenda or minutes (see the module docstring)."""
    text = doc.text
    pages = PageIndex(doc.blocks)
    meeting = (doc.payload or {})["meeting"]
    running = sorted((b.start, b.end) for b in doc.blocks if b.kind == "running")
    units = sorted((b.start, b.end) for b in doc.blocks if b.kind in PARAGRAPH_KINDS)
    items = blocks_needed(doc, "agenda_item")
    parts: dict[str, list[Block]] = {}
    for b in doc.blocks:
        if b.kind in ("motion", "condition"):
            parts.setdefault(b.meta["item"], []).append(b)
    common = {"record_kind": meeting["kind"], "meeting_id": meeting.get("meeting_id")}
    label = record_label(doc)
    by_key = {b.key: b for b in items}
    out: list[ChunkDraft] = []
    for item in items:
        sid = f"item.{item.key}"
        parent = f"item.{item.meta['parent']}" if item.meta.get("parent") else None
        path = [label, *(by_key[k].meta["title"] for k in _ancestors(by_key, item)), item.meta["title"]]
        own = parts.get(item.key, [])
        title = (item.start, item.start + item.meta["title_end"])
        holes = sorted([*running, *((b.start, b.end) for b in own)])
        free = _trim(text, _subtract((title[1], item.end), holes))
        item_meta = common | {"item": item.key, "number": item.meta.get("number"), "title": item.meta["title"],
                              "headers": path}
        if item.meta.get("consent"):
            item_meta["consent"] = True
        head_spans = _trim(text, _subtract(title, running))
        whole = [*head_spans, *free] or [(item.start, item.start)]
        n_whole = count_tokens_batch([_joined(text, whole)])[0]
        if n_whole <= limits.item_tokens:
            out.append(_draft(text, sid, ChunkType.AGENDA_ITEM, whole, n_whole, parent, pages, item_meta))
        else:
            votes = [(b.start + b.meta["vote"][0], b.start + b.meta["vote"][1]) for b in own
                     if b.kind == "motion" and b.meta.get("vote")]
            spans = [*head_spans, *votes] or [free[0]]
            out.append(_draft(text, sid, ChunkType.AGENDA_ITEM, spans, count_tokens_batch([_joined(text, spans)])[0],
                              parent, pages, item_meta | {"summary": "heading and vote lines"}))
            out.extend(_text_pieces(text, sid, free, units, pages, common | {"item": item.key, "headers": path}, limits))
        motions = [b for b in own if b.kind == "motion"]
        conditions = [b for b in own if b.kind == "condition"]
        sizes = count_tokens_batch([text[b.start : b.end] for b in (*motions, *conditions)])
        for b, n in zip(motions, sizes):
            meta = common | {k: v for k, v in b.meta.items() if k != "vote"} | {"headers": path}
            out.append(_draft(text, f"{sid}.motion.{b.key}", ChunkType.MOTION, [(b.start, b.end)], n, sid, pages, meta))
        for b, n in zip(conditions, sizes[len(motions) :]):
            out.append(_draft(text, f"{sid}.condition.{b.key}", ChunkType.CONDITION, [(b.start, b.end)], n, sid, pages,
                              common | dict(b.meta) | {"headers": path}))
    return out


def record_label(doc: SourceDocument) -> str:
    """``Rivergrove City Council minutes, December 10, 2018``: the record a chunk comes from, as a reader names it.

    It heads every chunk's header path (``metadata.headers``), which search reads with the chunk's words
    (``retrieval.units.context_prefix``): a question that names the meeting finds its passages, not only the
    record's title lines.
    """
    meeting = (doc.payload or {})["meeting"]
    body = meeting.get("body") or doc.title or doc.record_id
    if not meeting.get("date"):
        return f"{body} {meeting['kind']}"
    day = dt.date.fromisoformat(meeting["date"])
    return f"{body} {meeting['kind']}, {day:%B} {day.day}, {day.year}"


def _ancestors(by_key: dict[str, Block], item: Block) -> list[str]:
    """Keys of the items above ``item``, outermost first."""
    out: list[str] = []
    parent = item.meta.get("parent")
    while parent and parent in by_key and parent not in out:
        out.append(parent)
        parent = by_key[parent].meta.get("parent")
    return out[::-1]


def _paragraphs(text: str, free: list[tuple[int, int]], units: Sequence[tuple[int, int]]) -> list[list[tuple[int, int]]]:
    """The free runs of an item, each as its paragraphs: the reader's units clipped to the run (the run's text
    outside every unit is a paragraph of its own, so nothing is left out)."""
    out = []
    for s, e in free:
        cuts = sorted({s, e, *(c for u in units for c in u if s < c < e)})
        out.append(_trim(text, list(zip(cuts, cuts[1:]))))
    return out


def _text_pieces(text: str, sid: str, free: list[tuple[int, int]], units: Sequence[tuple[int, int]], pages: PageIndex,
                 meta: dict[str, Any], limits: MeetingLimits) -> list[ChunkDraft]:
    """The item's own text outside its motions: paragraphs packed in order up to ``text_tokens`` within each run
    between holes; a paragraph over that cut by ``bounded_split``."""
    pieces: list[tuple[int, int]] = []
    for run in _paragraphs(text, free, units):
        sizes = count_tokens_batch([text[s:e] for s, e in run])
        group: list[tuple[int, int]] = []
        used = 0
        for (s, e), n in zip(run, sizes):
            if group and used + n > limits.text_tokens:
                pieces.append((group[0][0], group[-1][1]))
                group, used = [], 0
            if n > limits.text_tokens:
                tt = TokenizedText(text[s:e])
                pieces.extend((s + p.start, s + p.end) for p in
                              bounded_split(tt, cap=limits.text_tokens, target_max=limits.text_tokens))
                continue
            group.append((s, e))
            used += n
        if group:
            pieces.append((group[0][0], group[-1][1]))
    counts = count_tokens_batch([text[s:e] for s, e in pieces])
    return [_draft(text, f"{sid}.text.{k}", ChunkType.ITEM_TEXT, [span], n, sid, pages, meta)
            for k, (span, n) in enumerate(zip(pieces, counts), 1)]


def chunk_transcript_items(doc: SourceDocument, limits: MeetingLimits = MeetingLimits()) -> list[ChunkDraft]:
    """Chunk tree of a transcript without speakers (see the module docstring)."""
    text = doc.text
    meeting = (doc.payload or {})["meeting"]
    segs = blocks_needed(doc, "segment")
    common = {"record_kind": "transcript", "meeting_id": meeting.get("meeting_id")}
    label = record_label(doc)
    out: list[ChunkDraft] = []
    items = blocks_needed(doc, "agenda_item")
    summaries = [_summary(text, item, meeting, limits) for item in items]
    for item, (summary, span), n in zip(items, summaries, count_tokens_batch([s for s, _ in summaries])):
        sid = f"item.{item.key}"
        meta = common | {"item": item.key, "title": item.meta["title"], "basis": item.meta["basis"],
                         "headers": [label, item.meta["title"]]}
        if meeting.get("aligned_record"):
            meta["aligned_record"] = meeting["aligned_record"]
        if n > MAX_CHUNK_TOKENS:  # cannot happen with the bounded excerpt; fail loudly, not silently
            raise ValueError(f"{sid}: summary has {n} tokens")
        out.append(ChunkDraft(sid, ChunkType.AGENDA_ITEM, summary, (span,), n, None,
                              anchor_extra={"composed": "item summary from its agenda title and opening words",
                                            "char_span": [item.start, item.end], "spans": [list(span)]},
                              metadata=meta))
        for b in segs:
            if item.start <= b.start < item.end:
                extra = {"clock": b.meta["clock"], "clock_offset": b.meta["clock_offset"]} if "clock" in b.meta else None
                out.append(ChunkDraft(f"{sid}.segment.{b.key}", ChunkType.TRANSCRIPT_SEGMENT, text[b.start : b.end],
                                      ((b.start, b.end),), b.meta["tokens"], sid, anchor_extra=extra,
                                      metadata=common | {"item": item.key, "headers": [label, item.meta["title"]]}))
    return out


def _summary(text: str, item: Block, meeting: dict[str, Any], limits: MeetingLimits) -> tuple[str, tuple[int, int]]:
    """``Agenda item {key}: {title} ({how it was found}). Opening: "…"`` and the span of the quoted opening."""
    s = item.start
    e = min(item.end, s + limits.excerpt_chars)
    if e < item.end:
        cut = text.rfind(" ", s, e)
        e = cut if cut > s else e
    basis = {"agenda": f"aligned with the agenda {meeting.get('aligned_record')}",
             "announcement": "started where the chair announced it"}.get(item.meta["basis"], item.meta["basis"])
    head = f"Agenda item {item.key}: {item.meta['title']} ({basis})." if item.key not in ("opening", "meeting") \
        else f"{item.meta['title']} ({basis})."
    return f'{head} Opening: "{text[s:e]}{"…" if e < item.end else ""}"', (s, e)
