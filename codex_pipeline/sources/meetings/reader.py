"""Agendas, minutes and transcripts without speakers as civic documents: text, blocks, and what was detected.

An agenda or minutes (PDF or DOCX through the ``documents`` readers' page text, or plain text)
becomes one document whose blocks are its ``agenda_item`` outline (:mod:`.outline`), the
``motion`` blocks of its vote lines (:mod:`.votes`), ``condition`` blocks, and the PDF's
``page`` and ``running`` blocks (for page-exact addresses and to leave headers out). A
transcript without speakers becomes ``segment`` blocks (:mod:`.speech`) grouped under
``agenda_item`` blocks: aligned with the same meeting's agenda when one landed the same day
(:mod:`.align`), else started at the chair's announcements, else one item.

``payload["meeting"]`` says what was detected: the record kind, body, date, the meeting id an
agenda, its minutes and its transcript share, and how items were found.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from codex_pipeline.core.documents import Block, Reject, SourceDocument
from codex_pipeline.core.ids import make_doc_id
from codex_pipeline.core.splitting import trim
from codex_pipeline.core.tokens import count_tokens_batch
from codex_pipeline.sources.meetings.align import AgendaEntry, align_items
from codex_pipeline.sources.meetings.facts import MeetingFacts, meeting_body, meeting_date, record_kind
from codex_pipeline.sources.meetings.outline import Item, Outline, parse_outline
from codex_pipeline.sources.meetings.speech import Segment, chair_announcements, segments, sentences, transcript_style
from codex_pipeline.sources.meetings.votes import Motion, find_motions

DATASET = "civic_intelligence"
_KEPT_LAYOUT = ("page", "running", "para", "item", "table")  # the documents reader's blocks kept: pages (addresses),
# running lines (never in a chunk) and the paragraphs an item's text is packed from; not its headings (the locator
# would take them for the section tree: a civic document's sections are its agenda items)
WHOLE_MEETING = "meeting"  # the key of the one item of a transcript with no agenda and no announcement
MIN_ITEM_CHARS = 200  # a spoken announcement this close after the last one is part of the same item
WHOLE_RECORD = "record"
PREAMBLE = "preamble"  # the key of the text of an agenda or minutes before its first item  # the key of the one item of an agenda or minutes whose items were not found
OPENING = "opening"  # the key of a transcript's stretch before its first item


def _motion_meta(m: Motion, item: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"item": item}
    for f in ("mover", "seconder", "result", "ayes_count", "noes_count", "abstain_count", "absent_count"):
        value = getattr(m, f)
        if value is not None:
            meta[f] = value
    for f in ("ayes", "noes", "abstain", "absent", "items"):
        if getattr(m, f):
            meta[f] = list(getattr(m, f))
    if m.unanimous:
        meta["unanimous"] = True
    if m.vote_span is not None:
        meta["vote"] = [m.vote_span[0] - m.start, m.vote_span[1] - m.start]  # relative to the block, as turns' times
    return meta


def record_blocks(text: str, layout: Sequence[Block] = (), title: str = "Meeting record"
                  ) -> tuple[Outline, list[Motion], tuple[Block, ...]]:
    """The outline, the motions and every block of an agenda's or minutes' text (``layout``: the PDF's blocks).

    A record with no item structure found is one item keyed ``record`` (titled ``title``), so its
    motions and text still land in the tree.
    """
    kept = [b for b in layout if b.kind in _KEPT_LAYOUT]
    outline = parse_outline(text, [(b.start, b.end) for b in kept if b.kind == "running"])
    if not outline.items:
        outline.items.append(Item(WHOLE_RECORD, None, title, 0, 0, len(text), None, 0))
    elif text[: outline.items[0].start].strip():  # the record's opening (its title, date, who was present)
        outline.items.insert(0, Item(PREAMBLE, None, title, 0, 0, outline.items[0].start, None, 0))
    blocks: list[Block] = list(kept)
    motions: list[Motion] = []
    for item in outline.items:
        blocks.append(Block("agenda_item", item.start, item.end, item.key, {
            "number": item.number, "title": item.title, "title_end": item.title_end - item.start,
            "parent": item.parent, "depth": item.depth, "consent": item.consent}))
        own = find_motions(text, item.start, item.end)
        motions.extend(own)
        blocks.extend(Block("motion", m.start, m.end, str(k), _motion_meta(m, item.key)) for k, m in enumerate(own, 1))
        conditions = [c for c in outline.conditions if item.start <= c.start < item.end]
        blocks.extend(Block("condition", c.start, c.end, str(k), {"item": item.key, "kind": "condition"})
                      for k, c in enumerate(conditions, 1))
    order = {"page": 0, "agenda_item": 1, "running": 2, "motion": 3, "condition": 4}
    return outline, motions, tuple(sorted(blocks, key=lambda b: (b.start, order.get(b.kind, 9), -b.end)))


def record_document(doc: SourceDocument, name: str, rejects: list[Reject]) -> SourceDocument | None:
    """An agenda or minutes read by the ``documents`` readers, as a civic document; None (rejected) if it is neither.

    ``doc`` is what the documents reader made of the file (its text, layout blocks and payload).
    """
    outline, motions, blocks = record_blocks(doc.text, doc.blocks, doc.title or name)
    kind = record_kind(name, doc.text, motions=len(motions), transcript=False)
    numbered = sum(1 for i in outline.items if i.number is not None)
    if kind is None:  # numbered sections alone make no agenda: an ordinance has them too
        rejects.append(Reject(doc.source_file, f"not an agenda, minutes or transcript ({numbered} numbered agenda items, "
                                               f"{len(motions)} motions, no 'agenda', 'minutes', 'order of business' or 'notice of meeting' "
                                               "in its name or opening): land it in the documents dataset"))
        return None
    facts = MeetingFacts(kind, meeting_body(doc.text), meeting_date(name, doc.text))
    meeting = _meeting_payload(facts) | {
        "format": (doc.payload or {}).get("format", "text"), "items": len(outline.items), "numbered_items": numbered,
        "motions": len(motions), "outline": outline.mode, "conditions": len(outline.conditions)}
    return dataclasses.replace(doc, doc_id=make_doc_id(DATASET, doc.record_id), blocks=blocks,
                               payload={**(doc.payload or {}), "meeting": meeting})


def _meeting_payload(facts: MeetingFacts) -> dict[str, Any]:
    return {"kind": facts.kind, "body": facts.body, "date": facts.date.isoformat() if facts.date else None,
            "meeting_id": facts.meeting_id}


def transcript_document(rel: str, record_id: str, text: str, agendas: Sequence[SourceDocument] = ()) -> SourceDocument:
    """A transcript without speakers: segments under agenda items (see the module docstring).

    ``agendas``: the agendas (and minutes) landed the same day; the one of the same meeting
    (same date, and same body when both name one) gives the items.
    """
    style = transcript_style(text) or "one_line"
    units = sentences(text)
    segs = segments(text, sentence_spans=units)
    facts = MeetingFacts("transcript", meeting_body(text), meeting_date(rel, text))
    agenda = _same_meeting(facts, agendas)
    spoken = chair_announcements(text, segs, units)
    unit_starts = [s for s, _ in units]
    starts: list[tuple[str, str, int, str]] = []  # (key, title, char offset where it starts, basis)
    if agenda is not None:
        entries = [AgendaEntry(b.key, b.meta.get("number"), b.meta["title"]) for b in agenda.blocks_of("agenda_item")]
        announced = [(max(0, bisect.bisect_right(unit_starts, pos) - 1), ref) for pos, ref, _ in spoken]
        found = align_items([text[s:e] for s, e in units], entries, announced)
        starts = [(f.key, f.title, units[f.segment][0], "agenda") for f in found]
    if not starts and spoken:
        starts = _announced_items(text, spoken)
    if not starts:
        starts = [(WHOLE_MEETING, "Whole meeting", segs[0].start if segs else 0, "whole meeting")]
    if segs and starts[0][2] > segs[0].start:
        starts.insert(0, (OPENING, "Opening of the meeting", segs[0].start, "before the first item"))
    cut = split_at(text, segs, [s for _, _, s, _ in starts], unit_starts)
    blocks: list[Block] = []
    for k, (key, title, at, basis) in enumerate(starts):
        until = starts[k + 1][2] if k + 1 < len(starts) else len(text) + 1
        own = [s for s in cut if at <= s.start < until]
        if not own:
            continue
        blocks.append(Block("agenda_item", own[0].start, own[-1].end, key, {"title": title, "basis": basis}))
        blocks.extend(_segment_block(s, m) for m, s in enumerate(own, 1))
    meeting = _meeting_payload(facts) | {
        "style": style, "segments": len(segs), "items": sum(1 for b in blocks if b.kind == "agenda_item"),
        "announcements": len(spoken), "aligned_to": None, "aligned_record": None}
    if agenda is not None:  # the transcript joins the agenda's meeting
        of_agenda = (agenda.payload or {})["meeting"]
        meeting |= {"body": facts.body or of_agenda["body"], "meeting_id": of_agenda["meeting_id"],
                    "aligned_to": agenda.doc_id, "aligned_record": agenda.source_file}
    return SourceDocument(doc_id=make_doc_id(DATASET, record_id), record_id=record_id, text=text, source_file=rel,
                          title=Path(rel).stem.replace("-", " ").replace("_", " "), payload={"meeting": meeting},
                          blocks=tuple(blocks))


def split_at(text: str, segs: Sequence[Segment], cuts: Sequence[int], sentence_starts: Sequence[int]
             ) -> list[Segment]:
    """The segments, each one an item start falls inside cut in two there (item starts are sentence starts).

    A piece keeps its segment's clock; its tokens are counted again, its sentences are those starting in it.
    """
    out: list[Segment] = []
    points = sorted(set(cuts))
    for s in segs:
        inside = [c for c in points if s.start < c < s.end]
        if not inside:
            out.append(s)
            continue
        edges = [s.start, *inside, s.end]
        pieces = [trim(text, a, b) for a, b in zip(edges, edges[1:])]
        pieces = [p for p in pieces if p[1] > p[0]]
        for (a, b), n in zip(pieces, count_tokens_batch([text[a:b] for a, b in pieces])):
            held = bisect.bisect_left(sentence_starts, b) - bisect.bisect_left(sentence_starts, a)
            out.append(dataclasses.replace(s, start=a, end=b, tokens=n, sentences=max(held, 1)))
    return out


def _segment_block(s: Segment, m: int) -> Block:
    meta: dict[str, Any] = {"tokens": s.tokens}
    if s.clock is not None:
        meta |= {"clock": s.clock, "clock_offset": s.clock_offset}
    return Block("segment", s.start, s.end, str(m), meta)


def _announced_items(text: str, spoken: Sequence[tuple[int, str, int]]) -> list[tuple[str, str, int, str]]:
    """Items started at the chair's announcements: keyed by the number said, else by position."""
    out: list[tuple[str, str, int, str]] = []
    used: set[str] = set()
    for pos, ref, _seg in spoken:
        if out and pos - out[-1][2] < MIN_ITEM_CHARS:
            continue  # announcements this close start one item
        key = ref.replace(" ", "").replace("-", "").lower() if ref else str(len(out) + 1)
        while key in used:
            key += "-2"
        used.add(key)
        sentence = text[pos : pos + 120].split("\n", 1)[0]
        out.append((key, sentence.strip(), pos, "announcement"))
    return out


def _same_meeting(facts: MeetingFacts, agendas: Sequence[SourceDocument]) -> SourceDocument | None:
    """The agenda (preferred) or minutes of the same date whose body agrees (or either names none)."""
    if facts.date is None:
        return None
    day = facts.date.isoformat()
    fits = []
    for d in agendas:
        meeting = (d.payload or {}).get("meeting", {})
        if meeting.get("date") != day or not d.blocks_of("agenda_item"):
            continue
        if not bodies_agree(facts.body, meeting.get("body")):
            continue
        fits.append((meeting.get("kind") != "agenda", d.record_id, d))
    return min(fits, key=lambda f: f[:2])[2] if fits else None


def bodies_agree(a: str | None, b: str | None) -> bool:
    """Two records name the same body, or one names none: ``City Council`` agrees with ``Huntsville City Council``."""
    if not a or not b:
        return True
    wa, wb = set(a.lower().split()), set(b.lower().split())
    return wa <= wb or wb <= wa
