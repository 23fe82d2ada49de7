"""What a hit may cite: the words that answer, never the metadata lines around them.

A transcript turn's ``Speaker:``/``Start:``/``End:``/``Duration:`` header, an email's
``From:``/``Date:``/``Subject:``/``Sent:``/``To:`` lines, its ``Message 5 (reply to …)``
banner, ``[quoting …]`` placeholders and ``… wrote:`` attributions, caption
``[HH:MM:SS]`` stamps, ``-----`` separators, a speaker's ``Mayor Linda Morse:`` label line and a turn's
``Text:`` label name *where* text is, not what it says, and a reply's ``>`` quoted lines repeat what
someone else wrote: a user cites the words spoken or written. Units are still embedded with them (the
stored vectors stay valid); only the cited spans leave them out, so a unit crossing a
turn boundary cites one span per turn (``canonical_text[start:end]`` exact for each).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from codex_pipeline.retrieval.types import Span

METADATA_LINE = re.compile(
    r"""^(?:
        \*?(?:From|Date|Subject|Sent|To|Cc|Reply-To|Start|End|Duration|Speaker)\s*:\*?.*  # header fields (*From:* too)
      | [A-Z][\w.'’-]*(?:\ [A-Z][\w.'’-]*){0,5}\ ?:                                   # a speaker's label line
      | >.*                                                                          # a quoted line of a reply
      | Message\ \d+(?:\ \(.*\))?                                                   # email thread banner
      | \[quoting\ .*\]                                                              # a quoted copy's placeholder
      | .{0,200}\bwrote:                                                             # a reply's attribution
      | On\ .{0,200}<[^<>]*(?:@|\ at\ )[^<>]*>                                        # ... its first line
      | .{0,120}<[^<>]*(?:@|\ at\ )[^<>]*>\s*:                                        # "Name <addr at host>:"
      | [-=_*]{5,}                                                                   # separators
      | \[\d{1,2}:\d\d(?::\d\d)?\]                                                  # caption stamps
    )\s*$""",
    re.VERBOSE,
)


def metadata_line(piece: str) -> bool:
    """Whether a sentence piece (a line or part of one) is metadata, not words a user would cite."""
    return bool(METADATA_LINE.match(piece.strip()))


LINE_LABEL = re.compile(r"(?:Text|Transcript)\s*:[ \t]*")
"""A turn's ``Text:`` label before the words spoken on its line: cited pieces start after it."""


def citable(text: str, pieces: Sequence[Span]) -> list[Span]:
    """``pieces`` of ``text`` without those on metadata lines (all of them when every one is: cite something),
    each starting past a line's ``Text:`` label.

    A piece is judged by the whole line it lies on, not by itself: a sentence splitter cuts
    ``From: M.-A. Lemburg <mal@egenix.com>`` after ``M.-A.``, and ``Lemburg <mal@egenix.com>`` alone
    looks like words.
    """
    kept = [p for p in pieces if not metadata_line(_line_of(text, p))] or list(pieces)
    return [_past_label(text, p) for p in kept]


def only_metadata(text: str, pieces: Sequence[Span]) -> bool:
    """Whether every piece lies on a metadata line (a unit of quoted lines or headers: nothing a user would cite)."""
    return bool(pieces) and all(metadata_line(_line_of(text, p)) for p in pieces)


def _past_label(text: str, piece: Span) -> Span:
    """``piece`` starting after a ``Text:`` label it begins with at the start of a line (unchanged otherwise)."""
    start, end = piece
    if start == 0 or text[start - 1] == "\n":
        label = LINE_LABEL.match(text, start, end)
        if label and label.end() < end:
            return label.end(), end
    return piece


def _line_of(text: str, piece: Span) -> str:
    """The line holding ``piece`` (the piece itself when it runs over a line break)."""
    start, end = piece
    if "\n" in text[start:end]:
        return text[start:end]
    line_end = text.find("\n", end)
    return text[text.rfind("\n", 0, start) + 1 : line_end if line_end != -1 else len(text)]
