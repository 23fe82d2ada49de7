"""civic_intelligence: one chunk tree per agenda item (agendas, minutes and transcripts without speakers: ``.meetings``).

``agenda_item`` (``item.{n}``, the item summary) is the parent of

* ``speaker_turn`` — ``item.{n}.turn.{m}``: one per stretch of talk: consecutive turns of
  one speaker with nobody speaking in between are merged, up to 400 tokens (see
  :func:`merge_turns`); a turn over the 1,500-token cap is cut by
  ``bounded_split`` into ``item.{n}.turn.{m}.part.{k}``;
* ``condition`` — ``item.{n}.condition.{k}``: each condition or blocker tag;
* ``contingency`` — ``item.{n}.contingency.{id}``: each node of the item's DAG, its
  dependencies stated in its text.

``n`` is the agenda item's own number (records) or its position in the meeting
(transcripts); ``m`` and ``k`` are 1-based positions in the item's own lists, so ids
depend only on the record, never on processing order.

Everything is cut at the blocks the reader stored on the document (item headers,
turns, conditions, contingencies; for transcripts the parsed turns and inferred
agenda items): nothing here parses a record or a transcript.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from codex_pipeline.chunkers.meetings import MeetingLimits, chunk_meeting_record, chunk_transcript_items
from codex_pipeline.chunkers.record_view import blocks_needed
from codex_pipeline.core.contract import MAX_CHUNK_TOKENS, ChunkType
from codex_pipeline.core.documents import Block, SourceDocument
from codex_pipeline.core.rows import ChunkDraft
from codex_pipeline.core.splitting import bounded_split
from codex_pipeline.core.tokens import TokenizedText, count_tokens_batch

MERGE_BELOW_TOKENS = 50  # a group this small always takes the speaker's next adjacent turn
MAX_MERGED_TOKENS = 400  # a stretch of one speaker's consecutive turns is merged up to this size
MERGE_SEPARATOR = "\n"  # between the texts of merged turns
ANNOUNCEMENT_CHARS = 400  # longest excerpt of an announcing turn quoted in a summary
SHORT_ANNOUNCEMENT_WORDS = 8  # a shorter announcing turn is quoted with the turn after it
SUMMARY_SPEAKERS = 8  # speakers named in a transcript item summary
DIGEST_TOKENS = 600  # the item's longest turns quoted in its summary, in meeting order, up to this many tokens
AFTER_VOTE = "after a vote"  # the pattern of an item that starts after a vote (sources.council_transcript)
#: how each kind of transcript item summary is built (also stated in the summary itself)
SUMMARY_METHODS = {
    "announced": "the chair's announcing turn(s), speaker labels, turn times and the item's longest turns",
    "after_vote": "the first turn after the vote that closed the item before, speaker labels, turn times and the "
                  "item's longest turns",
    "opening": "the first turn, speaker labels, turn times and the item's longest turns",
    "whole_meeting": "speaker labels, turn times and the meeting's longest turns",
}


@dataclass(frozen=True)
class CivicLimits(MeetingLimits):
    """The merge rule and the transcript item summary's sizes.

    ``merge_below_tokens``: a turn group whose spoken text is under this takes the
    speaker's next turn in the item; ``merge_separator`` joins merged texts;
    ``announcement_chars``: longest excerpt of an announcing turn quoted in a summary;
    ``short_announcement_words``: a shorter announcing turn is quoted with the next one;
    ``summary_speakers``: speakers named in a summary; ``digest_tokens``: the item's
    longest turns quoted in its summary (its discussion, bounded: what a parent join
    hands back). A turn over the cap is cut into pieces of up to ``piece_target_tokens``.
    """

    merge_below_tokens: int = MERGE_BELOW_TOKENS
    max_merged_tokens: int = MAX_MERGED_TOKENS
    merge_separator: str = MERGE_SEPARATOR
    announcement_chars: int = ANNOUNCEMENT_CHARS
    short_announcement_words: int = SHORT_ANNOUNCEMENT_WORDS
    summary_speakers: int = SUMMARY_SPEAKERS
    digest_tokens: int = DIGEST_TOKENS


# ------------------------------------------------------------------ merging


@dataclass(slots=True)
class TurnUnit:
    """A turn as the merge rule and the emitter see it."""

    number: int  # m: 1-based position of the turn in its item
    speaker: str
    span: tuple[int, int]  # the turn's chunk text in doc.text
    size: int  # tokens of the spoken text (the merge rule's measure)
    tokens: int  # tokens of the chunk text at ``span``
    start: str | None = None
    end: str | None = None


def merge_turns(
    speakers: Sequence[str],
    sizes: Sequence[int],
    tokens: Sequence[int],
    below: int = MERGE_BELOW_TOKENS,
    cap: int = MAX_CHUNK_TOKENS,
    most: int = MAX_MERGED_TOKENS,
) -> list[list[int]]:
    """Group an item's turns (by index) under the merge rule, groups ordered by first turn.

    Only **adjacent** turns merge: a turn joins the group of the turn directly before
    it when both have the same speaker, so a chunk is one stretch of talk, never a
    collage of one person's lines across the meeting. It joins while the group plus
    the turn stays within ``most`` tokens, or while the group is still under
    ``below`` tokens (a short turn is never left alone when its speaker goes on);
    never past ``cap`` (chunk tokens plus one per separator). Otherwise the turn
    starts a new group.
    """
    groups: list[list[int]] = []
    chunk_sum: list[int] = []
    for i, sp in enumerate(speakers):
        if groups and speakers[i - 1] == sp:
            g = len(groups) - 1
            grown = chunk_sum[g] + tokens[i] + len(groups[g])
            if grown <= cap and (grown <= most or chunk_sum[g] < below):
                groups[g].append(i)
                chunk_sum[g] += tokens[i]
                continue
        groups.append([i])
        chunk_sum.append(tokens[i])
    return groups


def turn_drafts(text: str, item_sid: str, units: list[TurnUnit], limits: CivicLimits = CivicLimits()) -> list[ChunkDraft]:
    """``speaker_turn`` drafts of one item: merged groups composed, over-cap turns split."""
    groups = merge_turns([u.speaker for u in units], [u.size for u in units], [u.tokens for u in units],
                         limits.merge_below_tokens, most=limits.max_merged_tokens)
    composed = {
        k: limits.merge_separator.join([text[units[i].span[0] : units[i].span[1]] for i in g])
        for k, g in enumerate(groups)
        if len(g) > 1
    }
    composed_tokens = dict(zip(composed, count_tokens_batch(list(composed.values()))))
    out: list[ChunkDraft] = []
    for k, g in enumerate(groups):
        if len(g) == 1:
            out.extend(_single_turn(text, item_sid, units[g[0]], limits))
            continue
        members = [units[i] for i in g]
        n = composed_tokens[k]
        if n > MAX_CHUNK_TOKENS:  # separators pushed it over the cap (never seen): keep the turns apart
            for u in members:
                out.extend(_single_turn(text, item_sid, u, limits))
            continue
        first, last = members[0], members[-1]
        out.append(
            ChunkDraft(
                section_id=f"{item_sid}.turn.{first.number}",
                chunk_type=ChunkType.SPEAKER_TURN,
                text=composed[k],
                spans=tuple([u.span for u in members]),
                token_count=n,
                parent_section_id=item_sid,
                anchor_extra=_times(first.start, last.end),
                metadata={"speaker": first.speaker, "turns": [u.number for u in members], "merged": True},
            )
        )
    return out


def _single_turn(text: str, item_sid: str, u: TurnUnit, limits: CivicLimits) -> list[ChunkDraft]:
    sid = f"{item_sid}.turn.{u.number}"
    meta = {"speaker": u.speaker, "turns": [u.number]}
    if u.tokens <= MAX_CHUNK_TOKENS:
        s, e = u.span
        return [ChunkDraft(sid, ChunkType.SPEAKER_TURN, text[s:e], (u.span,), u.tokens, item_sid,
                           anchor_extra=_times(u.start, u.end), metadata=meta)]
    base = u.span[0]
    tt = TokenizedText(text[u.span[0] : u.span[1]])  # only this turn, and only when over the cap
    pieces = bounded_split(tt, target_max=limits.piece_target_tokens)
    return [
        ChunkDraft(
            f"{sid}.part.{k}",
            ChunkType.SPEAKER_TURN,
            tt.text[p.start : p.end],
            ((base + p.start, base + p.end),),
            p.tokens,
            item_sid,
            anchor_extra=_times(u.start, u.end),
            metadata={**meta, "part": k, "parts": len(pieces)},
        )
        for k, p in enumerate(pieces, 1)
    ]


def _times(start: str | None, end: str | None) -> dict[str, str] | None:
    times = {k: v for k, v in (("start", start), ("end", end)) if v}
    return times or None


def _verbatim(text: str, sid: str, chunk_type: ChunkType, span: tuple[int, int], tokens: int,
              parent: str | None, metadata: dict[str, Any] | None = None) -> ChunkDraft:
    return ChunkDraft(sid, chunk_type, text[span[0] : span[1]], (span,), tokens, parent, metadata=metadata)


# ------------------------------------------------------------------ JSONL records


def chunk_record(doc: SourceDocument, limits: CivicLimits = CivicLimits()) -> list[ChunkDraft]:
    """Chunk tree of a validated meeting record, cut at its blocks (see ``render_record``)."""
    text = doc.text
    out: list[ChunkDraft] = []
    for head, *parts in _record_items(doc):
        sid = f"item.{head.key}"
        counts = count_tokens_batch([text[b.start : b.end] for b in (head, *parts)])
        out.append(_verbatim(text, sid, ChunkType.AGENDA_ITEM, (head.start, head.end), counts[0], None,
                             {"item": head.key, "title": head.meta["title"]}))
        turns = [(b, n) for b, n in zip(parts, counts[1:]) if b.kind == "turn"]
        spoken = count_tokens_batch([text[b.start + b.meta["text"] : b.end] for b, _ in turns])  # the merge rule's measure
        units = [TurnUnit(m, b.key, (b.start, b.end), size, n, b.meta.get("start"), b.meta.get("end"))
                 for m, ((b, n), size) in enumerate(zip(turns, spoken), 1)]
        out.extend(turn_drafts(text, sid, units, limits))
        for b, n in zip(parts, counts[1:]):
            if b.kind == "condition":
                out.append(_verbatim(text, f"{sid}.condition.{b.key}", ChunkType.CONDITION, (b.start, b.end), n, sid,
                                     dict(b.meta)))
        for b, n in zip(parts, counts[1:]):
            if b.kind == "contingency":
                meta = {"node": b.key, "depends_on": list(b.meta["depends_on"])}
                out.append(_verbatim(text, f"{sid}.contingency.{b.key}", ChunkType.CONTINGENCY, (b.start, b.end), n,
                                     sid, meta))
    return out


_RECORD_PARTS = {"turn", "condition", "contingency"}


def _record_items(doc: SourceDocument) -> list[list[Block]]:
    """``[agenda_item block, its turn / condition / contingency blocks …]`` per item, in text order."""
    blocks_needed(doc, "agenda_item")
    items: list[list[Block]] = []
    for b in doc.blocks:
        if b.kind == "agenda_item":
            items.append([b])
        elif b.kind in _RECORD_PARTS and items:
            items[-1].append(b)
        else:
            raise ValueError(f"{doc.doc_id}: unexpected civic record block {b.kind!r} at {b.start}")
    return items


# ------------------------------------------------------------------ transcripts


@dataclass(slots=True)
class _Turn:
    """A transcript turn as the chunker reads it from its block."""

    speaker: str
    label_start: int  # the speaker label
    text_start: int  # the spoken text: text[text_start:text_end]
    text_end: int
    start_pos: int  # the Start: / End: times as written
    start: str
    end_pos: int
    end: str


def _turns(doc: SourceDocument) -> list[_Turn]:
    text = doc.text
    out = []
    for b in blocks_needed(doc, "turn"):
        s0, s1, e0, e1 = (b.start + x for x in b.meta["times"])  # offsets relative to the block
        out.append(_Turn(b.key, b.start, b.start + b.meta["text"], b.end, s0, text[s0:s1], e0, text[e0:e1]))
    return out


def chunk_transcript(doc: SourceDocument, limits: CivicLimits = CivicLimits()) -> list[ChunkDraft]:
    """Chunk tree of a diarized transcript: the reader's inferred items over its turns."""
    text = doc.text
    turns = _turns(doc)
    items = blocks_needed(doc, "agenda_item")
    sizes = count_tokens_batch([text[t.text_start : t.text_end] for t in turns])
    out: list[ChunkDraft] = []
    summaries = [_item_summary(text, turns, item, limits) for item in items]
    summary_tokens = count_tokens_batch([s[0] for s in summaries])
    for item, (summary, spans, extra, kind), n in zip(items, summaries, summary_tokens):
        sid = f"item.{item.key}"
        first, last = item.meta["turns"]
        meta = {
            "item": int(item.key),
            "inferred": True,
            "announcement_patterns": list(item.meta["patterns"]),
            "chair": item.meta["chair"],
            "summary_kind": kind,
        }
        if n > MAX_CHUNK_TOKENS:  # cannot happen with the bounded excerpts; fail loudly, not silently
            raise ValueError(f"{sid}: summary has {n} tokens")
        out.append(ChunkDraft(sid, ChunkType.AGENDA_ITEM, summary, spans, n, None, anchor_extra=extra, metadata=meta))
        units = [
            TurnUnit(m, t.speaker, (t.text_start, t.text_end), n_t, n_t, t.start, t.end)
            for m, t, n_t in zip(range(1, last - first + 1), turns[first:last], sizes[first:last])
        ]
        out.extend(turn_drafts(text, sid, units, limits))
    return out


def _item_summary(
    text: str, all_turns: list[_Turn], item: Block, limits: CivicLimits
) -> tuple[str, tuple[tuple[int, int], ...], dict[str, Any], str]:
    """A composed, LLM-free summary of an inferred item and the spans it quotes.

    ``Agenda item {n} (inferred …): "<announcement>" Speakers: A (k turns), … Time:
    start–end, N turns. [Summary built by Codex without an LLM from …]``. Every quoted
    piece (announcement excerpt, speaker labels, first start and last end time) is
    listed as a span, so the anchor's ``char_span`` covers exactly the item's stretch
    of the file; the connecting words are the template's.
    """
    number = int(item.key)
    first_i, last_i = item.meta["turns"]
    announcements: list[int] = item.meta["announcements"]
    chair = item.meta["chair"]
    turns = all_turns[first_i:last_i]
    pieces: list[str] = []
    spans: list[tuple[int, int]] = []

    def quote(s: int, e: int) -> str:
        spans.append((s, e))
        return text[s:e]

    after_vote = list(item.meta.get("patterns") or []) == [AFTER_VOTE]
    kind = "announced" if announcements else "after_vote" if after_vote else "opening" if number == 0 else "whole_meeting"
    if announcements:
        pieces.append(f"Agenda item {number} (inferred: the chair, {chair}, announced it):")
        quoted: list[int] = []
        for a in announcements:
            quoted.append(a)
            t = all_turns[a]
            if len(text[t.text_start : t.text_end].split()) < limits.short_announcement_words and a + 1 < last_i:
                quoted.append(a + 1)  # diarization often cuts the announcing sentence in two
        for a in dict.fromkeys(quoted):
            t = all_turns[a]
            s, e = _excerpt(text, t.text_start, t.text_end, limits.announcement_chars)
            pieces.append(f'"{quote(s, e)}{"…" if e < t.text_end else ""}"')
    elif number == 0 or after_vote:
        t = turns[0]
        s, e = _excerpt(text, t.text_start, t.text_end, limits.announcement_chars)
        lead = ("Opening of the meeting (inferred: the turns before the chair's first agenda announcement)"
                if number == 0 else f"Agenda item {number} (inferred: it follows the vote that closed the item before)")
        pieces.append(f'{lead}, beginning: "{quote(s, e)}{"…" if e < t.text_end else ""}"')
    else:
        pieces.append("Whole meeting as one agenda item (no chair announcement of an agenda item was detected).")
    counts = Counter(t.speaker for t in turns)
    first_at: dict[str, int] = {}  # speaker -> index of their first turn in the item
    for i, t in enumerate(turns):
        first_at.setdefault(t.speaker, i)
    named = sorted(counts, key=lambda sp: (-counts[sp], first_at[sp]))[: limits.summary_speakers]
    who = []
    for sp in named:
        s = turns[first_at[sp]].label_start
        who.append(f"{quote(s, s + len(sp))} ({counts[sp]} turn{'s' if counts[sp] != 1 else ''})")
    others = len(counts) - len(named)
    pieces.append("Speakers: " + ", ".join(who) + (f", and {others} more" if others else "") + ".")
    first, last = turns[0], turns[-1]
    pieces.append(f"Time: {quote(first.start_pos, first.start_pos + len(first.start))}–"
                  f"{quote(last.end_pos, last.end_pos + len(last.end))}, "
                  f"{len(turns)} turn{'s' if len(turns) != 1 else ''}.")
    digest = _digest(text, turns, limits.digest_tokens)
    if digest:
        pieces.append("Discussion (its longest turns, in order):")
        for t in digest:
            pieces.append(f'{quote(t.label_start, t.label_start + len(t.speaker))}: "{quote(t.text_start, t.text_end)}"')
    pieces.append(f"[Summary built by Codex without an LLM from {SUMMARY_METHODS[kind]}.]")
    extra = {"start": first.start, "end": last.end, "composed": f"item summary from {SUMMARY_METHODS[kind]}",
             "char_span": [first.label_start, last.text_end]}  # the item's stretch, its last turn included
    return " ".join(pieces), tuple(dict.fromkeys(spans)), extra, kind  # in quote order, each once


def _digest(text: str, turns: list[_Turn], budget: int) -> list[_Turn]:
    """The item's longest turns that fit ``budget`` tokens together, in meeting order.

    Why the longest: in a council item they are the staff presentation, the questions
    and the answers; the short ones are procedure ("Second.", "Yes."). The agenda item
    is the parent of every turn, so this is what a parent join returns: the discussion,
    bounded, instead of the chair's announcement alone.
    """
    if budget <= 0 or not turns:
        return []
    sizes = count_tokens_batch([text[t.text_start : t.text_end] for t in turns])
    order = sorted(range(len(turns)), key=lambda i: (-sizes[i], i))
    chosen: list[int] = []
    used = 0
    for i in order:
        if used + sizes[i] + 4 <= budget:  # 4: the speaker label and quotes around the turn
            chosen.append(i)
            used += sizes[i] + 4
    return [turns[i] for i in sorted(chosen)]


def _excerpt(text: str, s: int, e: int, limit: int = ANNOUNCEMENT_CHARS) -> tuple[int, int]:
    """``[s, e)`` cut to at most ``limit`` chars at a word boundary."""
    if e - s <= limit:
        return s, e
    cut = text.rfind(" ", s, s + limit)
    return s, (cut if cut > s else s + limit)


# ------------------------------------------------------------------ entry point


def chunk_civic(doc: SourceDocument, limits: CivicLimits = CivicLimits()) -> list[ChunkDraft]:
    """Dispatch on the landing format: diarized transcripts carry ``payload["transcript"]``, agendas, minutes and
    transcripts without speakers ``payload["meeting"]`` (:mod:`.meetings`), JSON Lines records neither."""
    payload = doc.payload or {}
    if "transcript" in payload:
        return chunk_transcript(doc, limits)
    kind = payload.get("meeting", {}).get("kind")
    if kind == "transcript":
        return chunk_transcript_items(doc, limits)
    if kind in ("agenda", "minutes"):
        return chunk_meeting_record(doc, limits)
    return chunk_record(doc, limits)
