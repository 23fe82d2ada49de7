"""Size budgets for the structure-aware chunkers (docs, email): tokens or characters.

The seed's chunkers measure in characters (``min_char=1024, max_char=2048``); the
contract measures in cl100k tokens and caps every chunk at 1,500. A :class:`Budget`
carries one unit for the soft sizes (tokens by default, characters for seed
compatibility) while the token cap is always enforced.

Counting is exact and encodes each character of a document once
(:class:`~codex_pipeline.tokens.TokenizedText`): chunkers cut at positions just after a
newline that is followed by a non-space character, where cl100k's pre-tokenizer always
starts a new piece, so the count of any run between two such cuts is a difference of
token indices.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from codex_pipeline.core.contract import MAX_CHUNK_TOKENS
from codex_pipeline.core.splitting import BOUNDARY_LEVELS, Span, bounded_split, pack_units, trim
from codex_pipeline.core.tokens import TokenizedText, count_tokens

Unit = Literal["tokens", "chars"]


@dataclass(frozen=True)
class Budget:
    """Soft sizes in one unit plus the hard token cap."""

    unit: Unit
    max_size: int
    overlap: int = 0
    min_size: int = 0
    cap: int = MAX_CHUNK_TOKENS

    def __post_init__(self) -> None:
        if self.unit not in ("tokens", "chars"):
            raise ValueError(f"unit must be 'tokens' or 'chars', got {self.unit!r}")
        if self.max_size <= 0 or not 0 <= self.min_size <= self.max_size:
            raise ValueError(f"need 0 <= min_size <= max_size and max_size > 0, got {self.min_size}/{self.max_size}")
        if not 0 <= self.overlap < self.max_size // 2 + 1:
            raise ValueError(f"overlap {self.overlap} must be under half of max_size {self.max_size}")
        if self.unit == "tokens" and self.max_size > self.cap:
            raise ValueError(f"max_size {self.max_size} tokens is over the {self.cap}-token cap")

    def size(self, chars: int, tokens: int) -> int:
        """``tokens`` or ``chars``, whichever is the budget's unit."""
        return tokens if self.unit == "tokens" else chars

    def fits(self, chars: int, tokens: int, limit: int | None = None) -> bool:
        """Within ``limit`` (default ``max_size``) in the budget's unit and under the cap."""
        return self.size(chars, tokens) <= (self.max_size if limit is None else limit) and tokens <= self.cap


def _char_split(text: str, s: int, e: int, limit: int, level: int = 0) -> list[tuple[int, int]]:
    """Pieces of at most ``limit`` characters cut at the coarsest boundary that works."""
    s, e = trim(text, s, e)
    if s >= e:
        return []
    if e - s <= limit:
        return [(s, e)]
    if level >= len(BOUNDARY_LEVELS):
        return [(a, min(a + limit, e)) for a in range(s, e, limit)]
    units, pos = [], s
    for m in BOUNDARY_LEVELS[level].finditer(text, s, e):
        if m.start() > pos:
            units.append((pos, m.start()))
        pos = m.end()
    if pos < e:
        units.append((pos, e))
    if len(units) <= 1:
        return _char_split(text, s, e, limit, level + 1)
    return pack_units(units, lambda a, b: b - a, limit, lambda us, ue: _char_split(text, us, ue, limit, level + 1))


def split_range(text: str, start: int, end: int, budget: Budget, limit: int | None = None) -> list[Span]:
    """Cut ``text[start:end]`` into verbatim pieces within ``limit`` (default ``max_size``).

    Tokens: :func:`bounded_split` (paragraph → line → sentence → clause → word) on the
    range encoded once. Characters: the same boundary levels by length. Either way
    every piece is then held to the token cap, so the cap always holds.
    """
    limit = budget.max_size if limit is None else limit
    sub = text[start:end]
    tt = TokenizedText(sub)
    if budget.unit == "tokens":
        cap = min(limit, budget.cap)
        target = max(1, min(cap, int(cap * 0.92)))
        return [Span(start + p.start, start + p.end, p.tokens) for p in bounded_split(tt, 0, len(sub), cap, target)]
    pieces: list[Span] = []
    for s, e in _char_split(sub, 0, len(sub), max(1, limit)):
        n = tt.count(s, e)
        if n > budget.cap:
            pieces.extend(Span(start + p.start, start + p.end, p.tokens) for p in bounded_split(tt, s, e, budget.cap))
        else:
            pieces.append(Span(start + s, start + e, n))
    return pieces


_WORD_START = re.compile(r"(?<=\s)\S")


def overlap_start(text: str, start: int, end: int, budget: Budget, forbidden: Sequence[tuple[int, int]] = ()) -> int:
    """Where the next piece should start so it repeats about ``budget.overlap`` of ``text[start:end]``.

    Returns the earliest line start (else word start) inside the range whose tail is
    within the overlap; ``end`` means no overlap. A position inside a ``forbidden``
    range (code fence, table) is never used, so overlaps never begin mid-block.
    """
    if budget.overlap <= 0 or end <= start:
        return end
    window = budget.overlap * (8 if budget.unit == "tokens" else 1)
    lo = max(start, end - window)

    def allowed(p: int) -> bool:
        return not any(a < p < b for a, b in forbidden)

    def size(p: int) -> int:
        return count_tokens(text[p:end]) if budget.unit == "tokens" else end - p

    lines = [m.start() for m in re.finditer(r"(?<=\n)[^\s]", text[lo:end])]
    for cand in (p + lo for p in lines):
        if cand > start and allowed(cand) and text[cand:end].strip() and size(cand) <= budget.overlap:
            return cand
    words = [m.start() for m in _WORD_START.finditer(text, lo, end)]
    words = [p for p in words if p > start and allowed(p)]
    # sizes fall as the start moves right: binary search the earliest that fits
    a, b = 0, len(words)
    while a < b:
        mid = (a + b) // 2
        if size(words[mid]) <= budget.overlap:
            b = mid
        else:
            a = mid + 1
    if a < len(words) and text[words[a]:end].strip():
        return words[a]
    return end
