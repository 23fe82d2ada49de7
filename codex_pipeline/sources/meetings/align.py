"""Where each agenda item starts in a transcript without speakers.

When the meeting's agenda has landed, its items are aligned to the transcript's segments in
order: the clerk reads each item's title (or the chair names its number), so an item starts at
the first segment, after the previous item's start, whose words cover most of the title's
distinctive words. The alignment is monotone (agenda order is meeting order) and items the
meeting skipped or took together stay unmatched; one dynamic program picks the order-keeping
set of starts with the most evidence. Without an agenda the chair's spoken announcements
("item 5", "next on the agenda") start items; without those the meeting is one item.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import Stemmer

_WORD = re.compile(r"[a-z0-9]+(?:['’][a-z]+)?")
_STOP = frozenset(
    "a an and are as at be by for from has have in is it of on or that the this to was were will with "
    "resolution ordinance authorizing mayor city council item items agenda approve approval enter into "
    "agreement between inc llc no".split()
)
_stem = Stemmer.Stemmer("english").stemWord
_COMPOUND = re.compile(r"\b(\d{1,3})[\s-]?([a-z]{1,2})\b", re.I)  # "16A", "16 A", "20-AB"
MATCH_COVERAGE = 0.5  # share of a title's distinctive words (idf-weighted) a segment window must hold
WINDOW = 3  # sentences a title read aloud may run over
HERE_BONUS = 0.1  # of the cover of the start sentence alone: the start is where the reading begins
MIN_TITLE_WORDS = 2  # a title with fewer distinctive words ("Invocation") matches by its number only


@dataclass(frozen=True)
class AgendaEntry:
    """An agenda item as the aligner needs it."""

    key: str
    number: str | None
    title: str


@dataclass(frozen=True)
class ItemStart:
    """An item found in the transcript: its key, the segment it starts at, and why."""

    key: str
    title: str
    segment: int
    basis: str  # "agenda title", "agenda number", "announcement", "whole meeting"
    score: float


def _terms(text: str) -> list[str]:
    return [_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 2]


def _said_number(entry: AgendaEntry) -> str | None:
    """How the item's number is said, normalized: ``9.a`` -> ``9a``, ``A-3`` -> ``a3``, ``9`` -> ``9``."""
    if entry.number is None:
        return None
    parts = [p for p in re.split(r"[.\-]", entry.key.lower()) if p]
    return "".join(parts[-2:]) if len(parts) > 1 else parts[0]


def _spoken_numbers(texts: Sequence[str], announced: Sequence[tuple[int, str]]) -> dict[str, set[int]]:
    """Normalized item number -> the units that say it: each announcement's reference, and every compound number
    (``16A``, ``16 A``, ``16-A``: a number plain digits never are, ``20`` is said everywhere)."""
    out: dict[str, set[int]] = {}
    for j, t in enumerate(texts):
        for m in _COMPOUND.finditer(t):
            out.setdefault((m[1] + m[2]).lower(), set()).add(j)
    for j, ref in announced:
        if ref:
            out.setdefault(re.sub(r"[.\-\s]+", "", ref.lower()), set()).add(j)
    return out


def align_items(segment_texts: Sequence[str], agenda: Sequence[AgendaEntry],
                announced: Sequence[tuple[int, str]] = ()) -> list[ItemStart]:
    """The agenda items found in order, each with the unit (sentence) it starts at (see the module docstring).

    ``segment_texts``: the transcript's units in order (its sentences); a title read aloud spans
    a few, so a unit is scored with the :data:`WINDOW` - 1 after it, and a start where the title
    begins is preferred (:data:`HERE_BONUS` of its own cover). ``announced``: (unit index, item
    reference as spoken) of the chair's announcements; one naming an item's number is full
    evidence for that item there, as is the item's compound number said anywhere (``16A``).
    """
    n = len(segment_texts)
    if not n or not agenda:
        return []
    postings: dict[str, list[int]] = {}  # word -> the units holding it
    for j, t in enumerate(segment_texts):
        for w in set(_terms(t)):
            postings.setdefault(w, []).append(j)
    said = _spoken_numbers(segment_texts, announced)
    scores = np.zeros((len(agenda), n))
    for i, entry in enumerate(agenda):
        words = set(_terms(entry.title))
        row = scores[i]
        if len(words) >= MIN_TITLE_WORDS:
            weights = {w: math.log((n + 1) / (len(postings.get(w, ())) + 0.5)) for w in words}
            total = sum(weights.values())
            for w, v in weights.items():
                here = np.zeros(n, dtype=bool)
                here[postings.get(w, [])] = True
                window = here.copy()
                for k in range(1, WINDOW):  # unit j's window is j .. j + WINDOW - 1
                    window[:-k] |= here[k:]
                row += (v / total) * window + (HERE_BONUS * v / total) * here
            row[row < MATCH_COVERAGE] = 0.0
        number = _said_number(entry)
        if number in said:
            row[sorted(said[number])] = np.maximum(row[sorted(said[number])], 1.0)
    return _best_monotone(agenda, scores.tolist())


def _best_monotone(agenda: Sequence[AgendaEntry], scores: list[list[float]]) -> list[ItemStart]:
    """The order-keeping assignment of starts (items may be skipped, starts strictly increase) of largest total.

    ``f[i][j]``: best total of items ``..i`` with item ``i`` starting at segment ``j``;
    ``g[i][j]``: the best ``f`` over items ``<= i`` and segments ``<= j`` (and where it is).
    """
    n = len(scores[0])
    pred: dict[tuple[int, int], tuple[int, int] | None] = {}
    g: list[list[tuple[float, tuple[int, int] | None]]] = []
    for i, row in enumerate(scores):
        g_row: list[tuple[float, tuple[int, int] | None]] = []
        for j in range(n):
            best = g_row[j - 1] if j else (0.0, None)
            if i and g[i - 1][j][0] > best[0]:
                best = g[i - 1][j]
            if row[j] > 0:
                before = g[i - 1][j - 1] if i and j else (0.0, None)
                total = row[j] + before[0]
                pred[(i, j)] = before[1]
                if total > best[0]:
                    best = (total, (i, j))
            g_row.append(best)
        g.append(g_row)
    starts: list[tuple[int, int]] = []
    at = g[-1][-1][1]
    while at is not None:
        starts.append(at)
        at = pred[at]
    return [ItemStart(agenda[i].key, agenda[i].title, j, "agenda title", scores[i][j]) for i, j in reversed(starts)]
