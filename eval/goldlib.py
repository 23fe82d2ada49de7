"""Shared by the gold scripts of ``eval/``: what counts as evidence in a source file.

Evidence is the words that answer, never a file's metadata: a diarized transcript's
turn header (the ``Name:`` / ``Start:`` / ``End:`` / ``Duration:`` lines, the ``Text:``
label and the ``-----`` separators), a caption file's bare ``[HH:MM:SS]`` lines.
:func:`evidence_pieces` cuts a span of a file around those lines and trims the
whitespace at each piece's ends, so a passage read across turns becomes one reference
per turn holding only the spoken words.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

# a turn header (optionally preceded by the separator line), a lone separator line, a file banner,
# a bare caption time stamp
METADATA = re.compile(
    r"(?:^-{3,}\n)?^[^\n]*:\nStart:[^\n]*\nEnd:[^\n]*\nDuration:[^\n]*\nText:[ \t]*"
    r"|^-{3,}$"
    r"|^={3,}$"
    r"|^Transcription and Diarization for [^\n]*$"
    r"|^\[\d{1,2}:\d{2}:\d{2}\]$",
    re.M,
)


def metadata_ranges(text: str) -> list[tuple[int, int]]:
    """Every stretch of ``text`` that is metadata, in order."""
    return [(m.start(), m.end()) for m in METADATA.finditer(text)]


def evidence_pieces(text: str, start: int, end: int,
                    meta: list[tuple[int, int]] | None = None) -> Iterator[tuple[int, int]]:
    """``text[start:end]`` without metadata, as whitespace-trimmed non-empty pieces."""
    meta = metadata_ranges(text) if meta is None else meta
    cut = start
    for m0, m1 in meta:
        if m1 <= start or m0 >= end:
            continue
        yield from _trimmed(text, cut, max(cut, m0))
        cut = max(cut, m1)
    yield from _trimmed(text, cut, end)


def _trimmed(text: str, s: int, e: int) -> Iterator[tuple[int, int]]:
    while s < e and text[s].isspace():
        s += 1
    while e > s and text[e - 1].isspace():
        e -= 1
    if e > s:
        yield (s, e)
