"""Diarized council transcripts: parse speaker blocks and infer agenda items.

The format (one meeting per ``.txt`` file)::

    Transcription and Diarization for <meeting>.mp4      <- title line
    ==================================================
    Mayor Morris:                                         <- speaker label
    Start: 00:00:00.000
    End: 00:00:07.000
    Duration: 7.000 seconds
    Text: Good evening and welcome …
    --------------------------------------------------    <- block separator

The file text is the document's canonical text, so everything here is returned as
char offsets into it: a turn's ``Text:`` value is ``text[text_start:text_end]``.
Parsing is one pass of compiled regexes with no tokenization; the reader does it once
and stores the turns and inferred agenda items as the document's blocks
(:func:`transcript_blocks`), which is all the chunker reads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from codex_pipeline.core.documents import Block

_TIME = r"\d{1,2}:\d{2}:\d{2}(?:\.\d{1,6})?"
_HEADER = re.compile(r"[ \t]*(?P<title>[^\n]*?)[ \t]*\n=+[ \t]*(?:\n|\Z)")
# One block, matched at the start of its speaker line; Text runs to the separator line.
_BLOCK = re.compile(
    r"[ \t]*(?P<speaker>[^\n]*?\S)[ \t]*:[ \t]*\n"
    rf"Start:[ \t]*(?P<start>{_TIME})[ \t]*\n"
    rf"End:[ \t]*(?P<end>{_TIME})[ \t]*\n"
    r"Duration:[^\n]*\n"
    r"Text:[ \t]*"
)
_SEPARATOR = re.compile(r"\n-{3,}[ \t]*(?=\n|\Z)")
_NOT_FILLER = re.compile(r"[^\s-]")  # between blocks only separators and blank lines may appear


@dataclass(slots=True)  # not frozen: frozen __init__ costs a setattr call per field
class Turn:
    """One diarized turn; ``text_start:text_end`` is its spoken text in the file."""

    ordinal: int  # 1-based position among the transcript's turns (non-empty ones)
    speaker: str
    speaker_start: int  # char offset of the speaker label
    start: str  # "HH:MM:SS.fff" as written
    end: str
    start_pos: int  # char offsets of the two times
    end_pos: int
    text_start: int
    text_end: int


@dataclass
class Transcript:
    """What :func:`parse_transcript` found: the header's title (and its span), the turns, what it skipped."""

    title: str | None
    title_span: tuple[int, int] | None
    turns: list[Turn] = field(default_factory=list)
    malformed: list[tuple[int, str]] = field(default_factory=list)  # (line number, excerpt)
    empty_turns: int = 0


def parse_transcript(text: str) -> Transcript:
    """Speaker turns of a transcript, with malformed stretches listed by line number.

    Each block is located by its ``Start:`` line (a C-speed ``str.find``) and matched
    from the speaker line before it; its text runs to the next separator line.
    Anything but separators and blank lines between two good blocks is reported as
    malformed (by its first line) and skipped, so one damaged block does not cost the
    rest of the meeting.
    """
    pos = 0
    title, title_span = None, None
    head = _HEADER.match(text)
    if head:
        title = head.group("title") or None
        title_span = head.span("title") if title else None
        pos = head.end()
    out = Transcript(title, title_span)
    turns = out.turns
    n = len(text)
    while (k := text.find("\nStart:", pos)) != -1:
        line = text.rfind("\n", 0, k) + 1  # the speaker line
        m = _BLOCK.match(text, line) if line >= pos else None
        if m is None:  # a Start line without a well-formed block around it: skip the block
            sep = _SEPARATOR.search(text, k + 1)
            stop = sep.end() if sep else n
            _gap(text, pos, stop, out)
            pos = stop
            continue
        if line > pos:
            _gap(text, pos, line, out)
        ts = m.end()
        sep = _SEPARATOR.search(text, ts)
        te, pos = (sep.start(), sep.end()) if sep else (n, n)
        while te > ts and text[te - 1].isspace():
            te -= 1
        if ts == te:
            out.empty_turns += 1
            continue
        turns.append(Turn(len(turns) + 1, m.group("speaker"), m.start("speaker"), m.group("start"), m.group("end"),
                          m.start("start"), m.start("end"), ts, te))
    _gap(text, pos, n, out)
    return out


def _gap(text: str, s: int, e: int, out: Transcript) -> None:
    """Report the first line of anything but separators and blank lines in ``[s, e)``."""
    bad = _NOT_FILLER.search(text, s, e) if s < e else None
    if bad is None:
        return
    at = text.rfind("\n", 0, bad.start()) + 1
    line_end = text.find("\n", at, e)
    out.malformed.append((text.count("\n", 0, at) + 1, text[at : line_end if line_end != -1 else e][:120]))


# ---------------------------------------------------------------- agenda items

# The chair opens the meeting ("I call the … meeting to order"); diarization labels are
# unreliable ("Staff Member" chairs one of the sample meetings), so the chair is found
# by that act rather than by title.
_CALL_TO_ORDER = re.compile(r"\bto order\b", re.I)
_CHAIR_TITLE = re.compile(r"^(?:mayor|chair|chairman|chairwoman|chairperson|president|presiding)\b", re.I)
CALL_TO_ORDER_WINDOW = 30  # turns searched for the call to order

#: Phrases with which a chair moves the meeting to its next agenda item. Each is a
#: transition, not a mention: "the next item on the agenda is", "we will move on to the
#: consent agenda", "next order of business is", "new agenda item", the opening of
#: general public comment ("public comments on items that are not on the agenda"), "that
#: brings us to", "next we have / next up is", "let's turn to item 5", "item number 5 is",
#: "I'll open the public hearing". Not "move to approve" (a motion), not "any further
#: commissioner comments" (closing a round, not opening an item).
ANNOUNCEMENT_PATTERNS: tuple[tuple[str, str], ...] = (
    ("ordinal item … is",
     r"\b(?:next|first|second|third|last|final|only|one)\s+(?:agenda\s+)?item\b[^.?!]{0,40}?\b(?:is|will be)\b"),
    ("move/go on to", r"\b(?:move|moving|go|going|proceed|turn|turning)\s+(?:on\s+|now\s+)?to\s+(?:item|the|our)\b"
                      r"|\b(?:move|moving|go|going|proceed)\s+on\s+to\b"),
    ("order of business is", r"\border\s+(?:of\s+)?business\s+is\b"),
    ("new agenda item", r"\bnew agenda item\b"),
    ("general public comment",
     r"\b(?:time for public comments?|public comments? on (?:items|anything|something)\b[^.?!]{0,30}?\bnot on)\b"),
    ("brings us to", r"\b(?:brings|bring|takes)\s+us\s+(?:on\s+)?to\b"),
    ("next we have / next up", r"\bnext,?\s+(?:we\s+have|up\s+is|up\s+we\s+have|on\s+the\s+agenda)\b|\bup\s+next\s+is\b"),
    ("item number … is", r"\b(?:agenda\s+)?item\s+(?:number\s+)?[a-z]?\d{1,2}\b[^.?!]{0,60}?\b(?:is|will be)\b"),
    ("open the public hearing", r"\b(?:open|opening|reopen|resume)\s+(?:the\s+|this\s+)?public\s+hearing\b"),
)
#: A vote's result ("Motion carries.", "motion passes 4 to 1"): the item it decided is over.
VOTE_RESULT = re.compile(r"\bmotion\s+(?:carries|carried|passes|passed|fails|failed)\b|\bpasses\s+unanimously\b", re.I)
_NUMBER = r"(?:\d+|zero|one|two|three|four|five|six|seven|eight|nine)"
_TALLY = re.compile(rf"\W*(?:{_NUMBER}\s+(?:to|-)\s+{_NUMBER}\b|unanimous)", re.I)  # "Four to zero.", "4 to 0 with …"
AFTER_VOTE = "after a vote"
# one search per turn; the group that matched names the pattern
_ANNOUNCEMENT = re.compile("|".join(f"(?P<p{i}>{p})" for i, (_, p) in enumerate(ANNOUNCEMENT_PATTERNS)), re.I)
MIN_ITEM_TURNS = 4  # an announcement this close after the previous one joins that item


@dataclass(frozen=True)
class InferredItem:
    """A run of turns forming one agenda item.

    ``number`` is 0 for the opening (turns before the first announcement), then 1, 2, …
    in announcement order; a meeting with no announcement and no vote is the single
    item 1. An item that starts after a vote has no announcements and the pattern
    :data:`AFTER_VOTE`.
    """

    number: int
    first: int  # index into Transcript.turns (inclusive)
    last: int  # exclusive
    announcements: tuple[int, ...] = ()  # indices of the announcing chair turns
    patterns: tuple[str, ...] = ()  # the announcement pattern each one matched


@dataclass(frozen=True)
class AgendaInference:
    """What :func:`infer_agenda_items` found: the chair and how (``chair_basis``), the items, pattern counts."""

    chair: str | None
    chair_basis: str  # "call to order", "title", "first speaker", "none"
    items: tuple[InferredItem, ...]
    fired: int  # chair turns that matched an announcement pattern
    joined: int  # of those, announcements that joined the previous item (MIN_ITEM_TURNS)


def announcers(chair: str | None, turns: list[Turn]) -> frozenset[str]:
    """Speaker labels whose announcements count: the chair and every label with a chair's title.

    Diarization gives one presiding officer several labels ("Commissioner Hassel" calls
    the meeting to order, "Mayor Hassel" announces the next item), so a label titled like
    a chair (Mayor, Chair, President, Presiding) announces too.
    """
    names = {t.speaker for t in turns if _CHAIR_TITLE.match(t.speaker)}
    if chair:
        names.add(chair)
    return frozenset(names)


def find_chair(text: str, turns: list[Turn]) -> tuple[str | None, str]:
    """The presiding speaker: who calls the meeting to order, else a chair-like title."""
    for t in turns[:CALL_TO_ORDER_WINDOW]:
        if _CALL_TO_ORDER.search(text, t.text_start, t.text_end):
            return t.speaker, "call to order"
    for t in turns:
        if _CHAIR_TITLE.match(t.speaker):
            return t.speaker, "title"
    if turns:
        return turns[0].speaker, "first speaker"
    return None, "none"


def announcement_pattern(text: str, turn: Turn) -> str | None:
    """Name of the announcement pattern found in the turn's text (leftmost match), if any."""
    m = _ANNOUNCEMENT.search(text, turn.text_start, turn.text_end)
    return None if m is None or m.lastgroup is None else ANNOUNCEMENT_PATTERNS[int(m.lastgroup[1:])][0]


def infer_agenda_items(text: str, turns: list[Turn]) -> AgendaInference:
    """Split a meeting into agenda items where the chair announces the next one.

    A turn of the chair (or of a label titled like a chair, :func:`announcers`) matching
    :data:`ANNOUNCEMENT_PATTERNS` starts a new item, unless it
    comes fewer than :data:`MIN_ITEM_TURNS` turns after the previous boundary: then
    the chair is still introducing the same item ("move on to the general agenda" …
    "the first item on the general agenda is") and the announcement joins that item.
    A vote result with no announcement soon after it also ends an item
    (:func:`_after_votes`). Turns before the first boundary form item 0 (the opening);
    with no boundary at all the meeting is item 1. Items are numbered by position in the
    meeting, so the numbering depends only on the file.
    """
    chair, basis = find_chair(text, turns)
    speakers = announcers(chair, turns)
    groups: list[list[tuple[int, str]]] = []
    fired = joined = 0
    announced = [i for i, t in enumerate(turns) if t.speaker in speakers and announcement_pattern(text, t)]
    after_votes = set(_after_votes(text, turns, announced))
    for i, t in enumerate(turns):
        name = AFTER_VOTE if i in after_votes else announcement_pattern(text, t) if t.speaker in speakers else None
        if name is None:
            continue
        fired += name != AFTER_VOTE
        if groups and i - groups[-1][0][0] < MIN_ITEM_TURNS:
            if name != AFTER_VOTE:
                groups[-1].append((i, name))
                joined += 1
        else:
            groups.append([(i, name)])
    if not turns:
        return AgendaInference(chair, basis, (), fired, joined)
    if not groups:
        return AgendaInference(chair, basis, (InferredItem(1, 0, len(turns)),), fired, joined)
    items: list[InferredItem] = []
    if groups[0][0][0] > 0:
        items.append(InferredItem(0, 0, groups[0][0][0]))
    for k, group in enumerate(groups):
        end = groups[k + 1][0][0] if k + 1 < len(groups) else len(turns)
        said = [(i, n) for i, n in group if n != AFTER_VOTE]
        items.append(InferredItem(k + 1, group[0][0], end, tuple(i for i, _ in said),
                                  tuple(n for _, n in said) or (AFTER_VOTE,)))
    return AgendaInference(chair, basis, tuple(items), fired, joined)


def _after_votes(text: str, turns: list[Turn], announced: list[int]) -> list[int]:
    """Where an item starts because the one before was decided by a vote and no announcement follows.

    The first turn after a vote result (:data:`VOTE_RESULT`, any speaker; tally-only
    turns such as "Four to zero." still belong to the vote) starts an item, unless an
    announcement comes within :data:`MIN_ITEM_TURNS` turns (it then starts the item) or
    fewer than that many turns are left (the adjournment stays with the last item). A
    meeting whose chair never uses a known phrase is still cut at its decisions.
    """
    out = []
    for v, t in enumerate(turns):
        if not VOTE_RESULT.search(text, t.text_start, t.text_end):
            continue
        s = v + 1
        while s < len(turns) and _TALLY.match(text, turns[s].text_start, turns[s].text_end):
            s += 1
        if s + MIN_ITEM_TURNS < len(turns) and not any(v < a < s + MIN_ITEM_TURNS for a in announced):
            out.append(s)
    return out


# ---------------------------------------------------------------- blocks


def transcript_blocks(parsed: Transcript, inference: AgendaInference) -> tuple[Block, ...]:
    """The parse and the agenda inference as document blocks, in text order.

    * ``agenda_item`` (one per inferred item, before its turns): from the first turn's
      speaker label to the last turn's text; key the item number; meta ``turns``
      ``[first, last)`` (indices among the ``turn`` blocks), ``announcements`` (indices
      of the announcing chair turns), ``patterns`` (the pattern each matched), ``chair``.
    * ``turn``: from the speaker label to the end of the spoken text; key the speaker;
      meta ``text`` (where the spoken text starts) and ``times`` ``[s0, e0, s1, e1]``
      (the ``Start:`` time as written is ``[s0, e0)``, the ``End:`` time ``[s1, e1)``),
      all relative to the block's start.

    Only small relative offsets and short labels, so a meeting's blocks stay well
    under half its text (and compress to a fifth of it: the numbers repeat).
    """
    turns = parsed.turns
    out: list[Block] = []
    for item in inference.items:
        first, last = turns[item.first], turns[item.last - 1]
        out.append(Block("agenda_item", first.speaker_start, last.text_end, str(item.number), {
            "turns": [item.first, item.last], "announcements": list(item.announcements),
            "patterns": list(item.patterns), "chair": inference.chair,
        }))
        out.extend(
            Block("turn", t.speaker_start, t.text_end, t.speaker, {
                "text": t.text_start - t.speaker_start,
                "times": [x - t.speaker_start for x in (t.start_pos, t.start_pos + len(t.start), t.end_pos,
                                                        t.end_pos + len(t.end))],
            })
            for t in turns[item.first : item.last]
        )
    return tuple(out)
