"""Splitting primitives every chunker reuses: token windows and the bounded split.

Both work on a :class:`TokenizedText` (the document encoded once) and return spans
``(start, end, token_count)`` into the document's text, so ``text[start:end]`` is
the chunk and the count is exact.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from codex_pipeline.core.contract import MAX_CHUNK_TOKENS, TARGET_MAX_TOKENS
from codex_pipeline.core.tokens import TokenizedText

WINDOW_TOKENS = 600
WINDOW_OVERLAP = 50


@dataclass(frozen=True)
class Span:
    """A verbatim slice ``text[start:end]`` with its exact token count."""

    start: int
    end: int
    tokens: int


def token_windows(
    tt: TokenizedText, window: int = WINDOW_TOKENS, overlap: int = WINDOW_OVERLAP
) -> list[Span]:
    """Sliding windows of at most ``window`` tokens overlapping by about ``overlap``.

    Window edges snap to safe token boundaries (before a space-led word or after a
    newline), so a window never cuts a word or a multi-byte character and its count
    comes from the single encoding of the document. Text with no such boundary for a
    whole window (long runs without spaces, e.g. CJK) is cut at the nearest token
    boundary that falls between characters and that window is encoded on its own.
    """
    if window <= 0 or not 0 <= overlap < window:
        raise ValueError(f"need window > 0 and 0 <= overlap < window, got {window}/{overlap}")
    n = len(tt)
    if n == 0:
        return []
    text_len = len(tt.text)
    spans: list[Span] = []
    s = 0
    while True:
        cs = tt.char_at_token(s)
        if n - s <= window:
            tokens = n - s if tt.is_safe(s) else tt.count(cs, text_len)
            spans.append(Span(cs, text_len, tokens))
            return spans
        e = tt.prev_safe(s + window)
        if e <= s:  # no safe boundary inside the window: cut between characters
            e = tt.prev_on_char(s + window, s)
        ce = tt.char_at_token(e)
        exact = tt.is_safe(s) and tt.is_safe(e)
        spans.append(Span(cs, ce, e - s if exact else tt.count(cs, ce)))
        s = _next_start(tt, s, e, e - overlap) if overlap else e


def _next_start(tt: TokenizedText, s: int, e: int, target: int) -> int:
    """The safe boundary nearest ``target`` strictly inside ``(s, e)``, else ``e``."""
    below = tt.prev_safe(target)
    above = target
    while above < e and not tt.safe[above]:
        above += 1
    candidates = [c for c in (below, above) if s < c < e]
    if not candidates:
        return e
    return min(candidates, key=lambda c: (abs(c - target), c))


# Boundary levels of the bounded split, coarsest first.
BOUNDARY_LEVELS: tuple[re.Pattern[str], ...] = (
    re.compile(r"\n[ \t]*\n\s*"),  # paragraph
    re.compile(r"\n\s*"),  # line
    re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+"),  # sentence
    re.compile(r"(?<=[,;:—–])\s+"),  # clause
    re.compile(r"\s+"),  # word
)


def bounded_split(
    tt: TokenizedText,
    start: int = 0,
    end: int | None = None,
    cap: int = MAX_CHUNK_TOKENS,
    target_max: int = TARGET_MAX_TOKENS,
) -> list[Span]:
    """Split ``text[start:end]`` into pieces of at most ``cap`` tokens.

    A span within the cap is returned whole. Otherwise it is cut at paragraph, then
    line, sentence, clause and word boundaries, packing neighbouring units up to
    ``target_max`` tokens; only a single word longer than that is cut between tokens.
    Pieces are trimmed of surrounding whitespace, so nothing but whitespace between
    pieces is left out. Packing uses token positions from the single encoding; each
    final piece is counted exactly once.
    """
    end = len(tt.text) if end is None else end
    exact = tt.count(start, end)
    if exact <= cap:
        return [Span(start, end, exact)]
    splitter = _Splitter(tt, target_max)
    out: list[Span] = []
    for s, e in splitter.split(*trim(tt.text, start, end), level=0):
        n = tt.count(s, e)
        if n > cap:  # approximate packing missed by a few tokens: cut this piece by tokens
            for s2, e2 in splitter.token_cuts(s, e, cap):
                out.append(Span(s2, e2, tt.count(s2, e2)))
        else:
            out.append(Span(s, e, n))
    return out


def trim(text: str, s: int, e: int) -> tuple[int, int]:
    """``(s, e)`` narrowed past the whitespace around ``text[s:e]`` (``s == e`` if it is all whitespace)."""
    while s < e and text[s].isspace():
        s += 1
    while e > s and text[e - 1].isspace():
        e -= 1
    return s, e


def pack_units(
    units: list[tuple[int, int]],
    size: Callable[[int, int], int],
    limit: int,
    split_big: Callable[[int, int], list[tuple[int, int]]],
) -> list[tuple[int, int]]:
    """Greedily join neighbouring units while ``size`` stays within ``limit``.

    A unit over the limit on its own is handed to ``split_big`` (the next,
    finer boundary level). Shared by the token split here and the character
    split of the seed-compatible chunkers.
    """
    out: list[tuple[int, int]] = []
    cur: tuple[int, int] | None = None
    for us, ue in units:
        if size(us, ue) > limit:
            if cur:
                out.append(cur)
                cur = None
            out.extend(split_big(us, ue))
        elif cur and size(cur[0], ue) <= limit:
            cur = (cur[0], ue)
        else:
            if cur:
                out.append(cur)
            cur = (us, ue)
    if cur:
        out.append(cur)
    return out


class _Splitter:
    def __init__(self, tt: TokenizedText, target_max: int) -> None:
        self.tt = tt
        self.text = tt.text
        self.target = target_max

    def approx(self, s: int, e: int) -> int:
        starts = self.tt.char_starts
        return int(np.searchsorted(starts, e) - np.searchsorted(starts, s))

    def split(self, s: int, e: int, level: int) -> list[tuple[int, int]]:
        if s >= e:
            return []
        if self.approx(s, e) <= self.target:
            return [(s, e)]
        if level >= len(BOUNDARY_LEVELS):
            return self.token_cuts(s, e, self.target)
        units = self.units(s, e, BOUNDARY_LEVELS[level])
        if len(units) <= 1:
            return self.split(s, e, level + 1)
        return pack_units(units, self.approx, self.target, lambda us, ue: self.split(us, ue, level + 1))

    def units(self, s: int, e: int, sep: re.Pattern[str]) -> list[tuple[int, int]]:
        units, pos = [], s
        for m in sep.finditer(self.text, s, e):
            if m.start() > pos:
                units.append(trim(self.text, pos, m.start()))
            pos = m.end()
        if pos < e:
            units.append(trim(self.text, pos, e))
        return [u for u in units if u[0] < u[1]]

    def token_cuts(self, s: int, e: int, size: int) -> list[tuple[int, int]]:
        """Cut between tokens that fall between characters, ``size`` tokens apart."""
        tt = self.tt
        i0 = int(np.searchsorted(tt.char_starts, s))
        i1 = int(np.searchsorted(tt.char_starts, e))
        cuts, i = [s], i0
        while i1 - i > size:
            j = tt.prev_on_char(i + size, i)
            cuts.append(tt.char_at_token(j))
            i = j
        cuts.append(e)
        return [(a, b) for a, b in zip(cuts, cuts[1:]) if a < b]
