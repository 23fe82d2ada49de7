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
Parsing is one pass of compiled regexes with no tokenization, so the chunker can
afford to re-parse instead of storing the parse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_TIME = r"\d{1,2}:\d{2}:\d{2}(?:\.\d{1,6})?"
_SEPARATOR = re.compile(r"^-{3,}[ \t]*$", re.M)
_HEADER = re.compile(r"[ \t]*(?P<title>[^\n]*?)[ \t]*\n=+[ \t]*(?:\n|\Z)")
_BLOCK = re.compile(
    r"\s*(?P<speaker>[^\n]*?\S)[ \t]*:[ \t]*\n"
    rf"Start:[ \t]*(?P<start>{_TIME})[ \t]*\n"
    rf"End:[ \t]*(?P<end>{_TIME})[ \t]*\n"
    r"Duration:[^\n]*\n"
    r"Text:[ \t]*(?P<text>.*)",
    re.S,
)


@dataclass(frozen=True, slots=True)
class Turn:
    """One diarized turn; ``text_start:text_end`` is its spoken text in the file."""

    ordinal: int  # 1-based position among the transcript's turns (non-empty ones)
    speaker: str
    speaker_start: int  # char offset of the speaker label
    start: str  # "HH:MM:SS.fff" as written
    end: str
    text_start: int
    text_end: int


@dataclass
class Transcript:
    title: str | None
    title_span: tuple[int, int] | None
    turns: list[Turn] = field(default_factory=list)
    malformed: list[tuple[int, str]] = field(default_factory=list)  # (line number, excerpt)
    empty_turns: int = 0


def parse_transcript(text: str) -> Transcript:
    """Speaker turns of a transcript, with malformed blocks listed by line number."""
    pos = 0
    title, title_span = None, None
    head = _HEADER.match(text)
    if head:
        title = head.group("title") or None
        title_span = head.span("title") if title else None
        pos = head.end()
    out = Transcript(title, title_span)
    seps = list(_SEPARATOR.finditer(text, pos))
    starts = [pos] + [m.end() for m in seps]
    ends = [m.start() for m in seps] + [len(text)]
    ordinal = 0
    for s, e in zip(starts, ends):
        if s >= e or text[s:e].isspace():
            continue
        m = _BLOCK.match(text, s, e)
        if m is None:
            line = text.count("\n", 0, s) + 1
            while text[s].isspace():  # report the first non-blank line of the block
                line += text[s] == "\n"
                s += 1
            out.malformed.append((line, text[s : min(e, s + 120)].split("\n", 1)[0]))
            continue
        ts, te = m.span("text")
        while te > ts and text[te - 1].isspace():
            te -= 1
        if ts == te:
            out.empty_turns += 1
            continue
        ordinal += 1
        out.turns.append(
            Turn(ordinal, m.group("speaker"), m.start("speaker"), m.group("start"), m.group("end"), ts, te)
        )
    return out


# ---------------------------------------------------------------- agenda items

# The chair opens the meeting ("I call the … meeting to order"); diarization labels are
# unreliable ("Staff Member" chairs one of the sample meetings), so the chair is found
# by that act rather than by title.
_CALL_TO_ORDER = re.compile(r"\bto order\b", re.I)
_CHAIR_TITLE = re.compile(r"^(?:mayor|chair|chairman|chairwoman|chairperson|president|presiding)\b", re.I)
CALL_TO_ORDER_WINDOW = 30  # turns searched for the call to order

#: Phrases with which a chair moves the meeting to its next agenda item. Each is a
#: transition, not a mention: "the next item on the agenda is", "we will move on to the
#: consent agenda", "next order of business is", "new agenda item", and the opening of
#: general public comment ("public comments on items that are not on the agenda").
ANNOUNCEMENT_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("ordinal item … is", re.compile(
        r"\b(?:next|first|second|third|last|final|only|one)\s+(?:agenda\s+)?item\b[^.?!]{0,40}?\bis\b", re.I)),
    ("move/go on to", re.compile(r"\b(?:move|moving|go|going|proceed)\s+on\s+to\b", re.I)),
    ("order of business is", re.compile(r"\border\s+(?:of\s+)?business\s+is\b", re.I)),
    ("new agenda item", re.compile(r"\bnew agenda item\b", re.I)),
    ("general public comment", re.compile(
        r"\b(?:time for public comments?|public comments? on (?:items|anything|something)\b[^.?!]{0,30}?\bnot on)\b",
        re.I)),
)
MIN_ITEM_TURNS = 3  # an announcement this close after the previous one continues that item


@dataclass(frozen=True)
class InferredItem:
    """A run of turns forming one agenda item.

    ``number`` is 0 for the opening (turns before the first announcement), then 1, 2, …
    in announcement order; a meeting with no announcement is the single item 1.
    """

    number: int
    first: int  # index into Transcript.turns (inclusive)
    last: int  # exclusive
    announcement: int | None  # index of the announcing turn, None for opening / whole meeting
    pattern: str | None  # which announcement pattern fired


@dataclass(frozen=True)
class AgendaInference:
    chair: str | None
    chair_basis: str  # "call to order", "title", "first speaker", "none"
    items: tuple[InferredItem, ...]
    suppressed: int  # announcements ignored by the MIN_ITEM_TURNS rule

    @property
    def announcements(self) -> int:
        return sum(1 for i in self.items if i.announcement is not None)


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
    """Name of the first announcement pattern matching the turn's text, if any."""
    for name, pat in ANNOUNCEMENT_PATTERNS:
        if pat.search(text, turn.text_start, turn.text_end):
            return name
    return None


def infer_agenda_items(text: str, turns: list[Turn]) -> AgendaInference:
    """Split a meeting into agenda items where the chair announces the next one.

    A chair turn matching :data:`ANNOUNCEMENT_PATTERNS` starts a new item, unless it
    comes fewer than :data:`MIN_ITEM_TURNS` turns after the previous boundary (then
    the chair is still introducing the same item, e.g. "move on to the general agenda"
    followed by "the first item on the general agenda is"). Turns before the first
    announcement form item 0 (the opening); with no announcement at all the meeting
    is item 1.
    """
    chair, basis = find_chair(text, turns)
    marks: list[tuple[int, str]] = []
    suppressed = 0
    last = None
    for i, t in enumerate(turns):
        if t.speaker != chair:
            continue
        name = announcement_pattern(text, t)
        if name is None:
            continue
        if last is not None and i - last < MIN_ITEM_TURNS:
            suppressed += 1
            continue
        marks.append((i, name))
        last = i
    if not turns:
        return AgendaInference(chair, basis, (), suppressed)
    if not marks:
        return AgendaInference(chair, basis, (InferredItem(1, 0, len(turns), None, None),), suppressed)
    items: list[InferredItem] = []
    if marks[0][0] > 0:
        items.append(InferredItem(0, 0, marks[0][0], None, None))
    for k, (i, name) in enumerate(marks):
        end = marks[k + 1][0] if k + 1 < len(marks) else len(turns)
        items.append(InferredItem(k + 1, i, end, i, name))
    return AgendaInference(chair, basis, tuple(items), suppressed)
