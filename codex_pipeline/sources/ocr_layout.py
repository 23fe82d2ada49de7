"""Tesseract's TSV as words, and whether a page it read as one block is set in columns.

``--psm 6`` (one block of text) reads typewritten single-column scans best, but on a page set in
columns it reads each line straight across every column. Such a reading shows itself in the
words' boxes: some vertical strip in the middle of the text (a gutter) is crossed by almost no
word, with plenty of words on both sides (:func:`gutter`). ``--psm 3`` (tesseract's own page
layout analysis) then reads the page again; it is kept only when it too finds the page in
columns: blocks of several lines side by side holding most of its lines (:func:`side_by_side`).
Both tests must agree because each alone fires on pages that are not in columns: a signature
page (two short blocks side by side) passes the gutter test, and ``--psm 3`` finds several
blocks on most pages.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

GUTTER_MIDDLE = 0.6  # a gutter lies in the middle 60% of the text's width ...
GUTTER_CROSSED = 0.05  # ... crossed by words of under 5% of the lines ...
GUTTER_SIDE = 0.25  # ... with at least a quarter of the 3+-letter words on each side
COLUMN_LINES = 5  # a column is a block of at least this many lines ...
COLUMN_SHARE = 0.5  # ... beside another; a page is in columns when such blocks hold half its lines


class Word(NamedTuple):
    """One word of tesseract's TSV (level 5): its block/paragraph/line, box in pixels, confidence, text."""

    block: str
    par: str
    line: str
    left: int
    top: int
    width: int
    height: int
    conf: float
    text: str


def tsv_words(tsv: str) -> list[Word]:
    """The words of a TSV page, in tesseract's reading order."""
    out = []
    for row in tsv.splitlines()[1:]:
        f = row.split("\t")
        if len(f) < 12 or f[0] != "5" or not f[11].strip():
            continue
        out.append(Word(f[2], f[3], f[4], int(f[6]), int(f[7]), int(f[8]), int(f[9]), float(f[10]), f[11].strip()))
    return out


def gutter(words: list[Word]) -> bool:
    """Whether a one-block reading runs across a gutter (see the module docstring)."""
    if not words:
        return False
    x0 = min(w.left for w in words)
    width = max(w.left + w.width for w in words) - x0
    lines = len({(w.block, w.par, w.line) for w in words})
    if width <= 0:
        return False
    crossing = np.zeros(width + 2, dtype=np.int64)  # words of one line never overlap: words covering x = lines
    for w in words:
        crossing[w.left - x0] += 1
        crossing[w.left - x0 + w.width] -= 1  # the box is [left, left + width)
    covered = np.cumsum(crossing)[: width + 1]
    lo, hi = int(width * (1 - GUTTER_MIDDLE) / 2), int(width * (1 + GUTTER_MIDDLE) / 2)
    centres = np.array([w.left + w.width / 2 - x0 for w in words if sum(c.isalpha() for c in w.text) >= 3])
    if not len(centres):
        return False
    for x in np.flatnonzero(covered[lo:hi] < GUTTER_CROSSED * lines) + lo:
        left = int((centres < x).sum())
        if min(left, len(centres) - left) >= GUTTER_SIDE * len(centres):
            return True
    return False


def side_by_side(words: list[Word]) -> float:
    """Share of an automatic (``--psm 3``) reading's lines in blocks of :data:`COLUMN_LINES`+ lines that sit
    beside another such block: horizontally apart, overlapping vertically by over half the shorter one."""
    boxes: dict[str, list[int]] = {}
    lines: dict[str, set[tuple[str, str]]] = {}
    for w in words:
        box = boxes.setdefault(w.block, [w.left, w.top, w.left + w.width, w.top + w.height])
        box[:] = [min(box[0], w.left), min(box[1], w.top), max(box[2], w.left + w.width), max(box[3], w.top + w.height)]
        lines.setdefault(w.block, set()).add((w.par, w.line))
    tall = [k for k in boxes if len(lines[k]) >= COLUMN_LINES]
    beside: set[str] = set()
    for i, a in enumerate(tall):
        for b in tall[i + 1:]:
            (al, at, ar, ab), (bl, bt, br, bb) = boxes[a], boxes[b]
            overlap = min(ab, bb) - max(at, bt)
            if (ar <= bl or br <= al) and overlap > 0.5 * min(ab - at, bb - bt):
                beside |= {a, b}
    total = sum(len(v) for v in lines.values())
    return sum(len(lines[k]) for k in beside) / total if total else 0.0
