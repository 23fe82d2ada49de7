"""What a hit may cite: the words that answer, never the metadata lines around them.

A transcript turn's ``Speaker:``/``Start:``/``End:``/``Duration:`` header, an email's
``From:``/``Date:``/``Subject:``/``Sent:``/``To:`` lines, its ``Message 5 (reply to …)``
banner, ``[quoting …]`` placeholders and ``… wrote:`` attributions, caption
``[HH:MM:SS]`` stamps and ``-----`` separators name *where* text is, not what it says:
a user cites the words spoken or written. Units are still embedded with them (the
stored vectors stay valid); only the cited spans leave them out, so a unit crossing a
turn boundary cites one span per turn (``canonical_text[start:end]`` exact for each).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from codex_pipeline.retrieval.types import Span

METADATA_LINE = re.compile(
    r"""^(?:
        (?:From|Date|Subject|Sent|To|Cc|Reply-To|Start|End|Duration|Speaker)\s*:.*   # header fields
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


def citable(text: str, pieces: Sequence[Span]) -> list[Span]:
    """``pieces`` of ``text`` without those on metadata lines (all of them when every one is: cite something).

    A piece is judged by the whole line it lies on, not by itself: a sentence splitter cuts
    ``From: M.-A. Lemburg <mal@egenix.com>`` after ``M.-A.``, and ``Lemburg <mal@egenix.com>`` alone
    looks like words.
    """
    kept = [p for p in pieces if not metadata_line(_line_of(text, p))]
    return kept or list(pieces)


def _line_of(text: str, piece: Span) -> str:
    """The line holding ``piece`` (the piece itself when it runs over a line break)."""
    start, end = piece
    if "\n" in text[start:end]:
        return text[start:end]
    line_end = text.find("\n", end)
    return text[text.rfind("\n", 0, start) + 1 : line_end if line_end != -1 else len(text)]
