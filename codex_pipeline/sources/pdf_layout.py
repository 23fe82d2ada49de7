"""A PDF's lines become one canonical text with page offsets and labelled blocks.

The canonical text is every page's lines joined by ``\\n``, pages separated by one blank
line; page ``k`` is ``text[start:end]`` of its ``page`` block (key ``k``), so a chunk's
page is where its first character falls. What the chunker needs is stored as blocks:

- ``running``: a line repeated at the top or bottom of half the pages once its digits are
  ignored (``Page 3 of 11``, ``City Council Regular Meeting Agenda April 9, 2026``); or at the
  same place on three pages at most four apart once a page number at either end is ignored (a
  chapter's own header, a book's alternating even and odd headers); or a bare page number there.
  Chunks are cut around them, never keep them.
- ``heading`` (key = level): from the outline (bookmarks) when its titles are found on
  their pages, else from font size (lines clearly bigger than the body text); none when
  neither is reliable, numbered all-caps lines (an agenda's ``9. PUBLIC HEARINGS``) when there
  are 3 or more, and else none: the locator's section becomes the seed's ``pNNN``.
- ``item`` (numbered agenda items, lettered sub-items, bullets), ``table`` (runs of
  lines mostly made of numbers) and ``para`` (lines separated by a vertical gap):
  the units a chunk is packed from; ``meta`` holds the page and the block's box.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from codex_pipeline.core.documents import Block
from codex_pipeline.sources.pdf_line import Line
from codex_pipeline.sources.pdf_text import OutlineItem, PdfPage

EDGE_LINES = 3  # lines at the top and bottom of a page that may be running headers or footers
EDGE_BAND = 0.15  # ... and only within this fraction of the page height from its edge
NEAR_PAGES = 4  # ... or repeated (page number aside) at the same place on NEAR_REPEATS pages at most this far apart:
NEAR_REPEATS = 3  # a book's chapter headers, alternating even and odd headers (every other page)
NEAR_SAME_PLACE = 2.0  # ... the same distance from the page's edge (points) and the same font size
_DIGITS = re.compile(r"\d+")
_SPACE = re.compile(r"\s+")
_END_NUMBER = re.compile(r"^\d{1,4}\s+|\s+\d{1,4}$")
_PAGE_NUMBER = re.compile(r"^(?:page\s*)?[-–]?\s*\d{1,4}\s*[-–]?(?:\s*(?:of|/)\s*\d{1,4})?$", re.I)
_ITEM = re.compile(r"^(?:\d{1,3}(?:\.\d{1,3})*[.)]|[A-Za-z][.)]|\(\w{1,4}\)|[ivxIVX]{1,5}\.|[•▪◦‣●■□➢\-–*])\s")
_NUMBER = re.compile(r"^[-–(]?[$€£]?[\d.,]+%?[)]?$")
_NUMBERS = re.compile(r"(?<!\S)[-–(]?[$€£]?[\d.,]+%?[)]?(?!\S)")  # _NUMBER tokens of a line, in one scan
_CAPS_ITEM = re.compile(r"^(\d{1,2})\.\s+(?=[^a-z]*[A-Z]{3})[^a-z]{4,100}$")
HEADING_RATIO = 1.15  # a heading's font is at least this much bigger than the body's
MAX_HEADING_CHARS = 120


@dataclass
class PdfLayout:
    """What :func:`layout` makes of a document's pages: canonical text, blocks, and what it found.

    ``headings`` says where the heading blocks came from (``outline``, ``font``,
    ``numbered`` or ``none``); ``running`` holds the first line seen of each distinct
    running header or footer.
    """

    text: str
    blocks: list[Block]
    headings: str  # "outline" | "font" | "numbered" | "none"
    running: list[str] = field(default_factory=list)  # one line per distinct running line (digits ignored)


def _key(line: str) -> str:
    return _SPACE.sub(" ", _DIGITS.sub("#", line.lower())).strip()


def _near_key(line: str) -> str:
    """The line without a page number at either end (``12 zoo: An S3 Class…``, ``Chapter 2: R Basics 4``)."""
    return _END_NUMBER.sub("", _SPACE.sub(" ", line.lower())).strip()


def _placed(page: PdfPage, i: int) -> tuple[bool, float] | None:
    """(top, distance from that edge) of an edge line first in reading order at the top of its page or last at the
    bottom, as a running header or footer is; None for any other line (a table's cell drawn at the top, read last)."""
    line = page.lines[i]
    if line.y0 >= page.height * (1 - EDGE_BAND):
        return (True, page.height - line.y0) if i < EDGE_LINES else None
    return (False, line.y0) if i >= len(page.lines) - EDGE_LINES else None


def _near_edge(line: Line, page: PdfPage) -> bool:
    band = page.height * EDGE_BAND
    return line.y0 >= page.height - band or line.y1 <= band


def running_lines(pages: Sequence[PdfPage]) -> list[set[int]]:
    """Per page, the indices of its running header/footer lines: edge lines whose text, digits ignored, is at an
    edge of half the pages; or whose text, a page number at either end ignored, is at the same place on
    :data:`NEAR_REPEATS` pages at most :data:`NEAR_PAGES` apart (a chapter's own header, a book's alternating even
    and odd headers); and bare page numbers."""
    texted = [p for p in pages if p.lines]
    edges: list[dict[int, str]] = []  # per page: edge line -> its key (digits ignored); keys made once, not per use
    placed: list[dict[int, tuple[str, tuple[bool, float]]]] = []  # per page: placed edge line -> (near key, place)
    seen: Counter[str] = Counter()
    near: defaultdict[str, list[tuple[int, bool, float, float]]] = defaultdict(list)  # key -> (page, top, place, size)
    for k, p in enumerate(pages):
        n = len(p.lines)
        idx = sorted({*range(min(EDGE_LINES, n)), *range(max(0, n - EDGE_LINES), n)})
        keys = {i: _key(p.lines[i].text) for i in idx if _near_edge(p.lines[i], p)}
        edges.append(keys)
        seen.update(set(keys.values()))
        spots = {}
        for i in keys:
            if (at := _placed(p, i)) is not None:
                spots[i] = (near_key := _near_key(p.lines[i].text), at)
                near[near_key].append((k, *at, p.lines[i].size))
        placed.append(spots)
    need = max(2, (len(texted) + 1) // 2)

    def repeated(p: PdfPage, i: int, k: int) -> bool:
        line = p.lines[i]
        if seen[edges[k][i]] >= need:
            return True
        spot = placed[k].get(i)
        if spot is None:
            return False
        key, at = spot
        if len(key.split()) < 2:  # "ARTICLE 3", "Exhibit 2" at the top of nearby pages are headings
            return False
        found = near[key]
        lo = bisect.bisect_left(found, (k - NEAR_PAGES,))
        same = sorted({j for j, top, place, size in found[lo:] if j <= k + NEAR_PAGES and top == at[0]
                       and abs(place - at[1]) <= NEAR_SAME_PLACE and abs(size - line.size) <= 0.5})
        return any(sum(first <= j <= first + NEAR_PAGES for j in same) >= NEAR_REPEATS
                   for first in same if first <= k <= first + NEAR_PAGES)

    out = []
    for k, (p, at_edge) in enumerate(zip(pages, edges)):
        out.append({i for i in at_edge if len(texted) >= 2 and repeated(p, i, k) or _PAGE_NUMBER.match(p.lines[i].text)})
    if all(len(s) == len(p.lines) for s, p in zip(out, pages)):  # nothing else on any page: the lines are the text
        return [set() for _ in pages]
    return out


def _norm(s: str) -> str:
    return _SPACE.sub(" ", s).strip().lower()


def outline_headings(pages: Sequence[PdfPage], outline: Sequence[OutlineItem], skip: list[set[int]]) -> dict[tuple[int, int], int]:
    """(page index, line index) -> level of each bookmark title found on its page."""
    found: dict[tuple[int, int], int] = {}
    for item in outline:
        if not 1 <= item.page <= len(pages):
            continue
        title = _norm(item.title)
        page = pages[item.page - 1]
        for i, line in enumerate(page.lines):
            t = _norm(line.text)
            if i in skip[item.page - 1] or len(t) < 3 or (item.page - 1, i) in found:
                continue
            if t == title or title.startswith(t) and len(t) >= 0.5 * len(title) or t.startswith(title):
                found[(item.page - 1, i)] = min(item.level, 6)
                break
    return found


def font_headings(pages: Sequence[PdfPage], skip: list[set[int]]) -> dict[tuple[int, int], int]:
    """Lines clearly bigger than the body text, levelled by size (largest = 1, at most 3 levels)."""
    weights: Counter[float] = Counter()
    for p in pages:
        for line in p.lines:
            weights[line.size] += len(line.text)
    if not weights:
        return {}
    body = weights.most_common(1)[0][0]
    cands = {(k, i): line.size for k, p in enumerate(pages) for i, line in enumerate(p.lines)
             if i not in skip[k] and line.size >= body * HEADING_RATIO and len(line.text) <= MAX_HEADING_CHARS
             and any(c.isalpha() for c in line.text)}
    total = sum(len(p.lines) for p in pages)
    if not cands or len(cands) > max(3, 0.2 * total):  # nothing stands out, or everything does: unreliable
        return {}
    sizes = sorted(set(cands.values()), reverse=True)
    return {pos: min(sizes.index(size) + 1, 3) for pos, size in cands.items()}


def numbered_headings(pages: Sequence[PdfPage], skip: list[set[int]]) -> dict[tuple[int, int], int]:
    """Numbered all-caps lines (``9. PUBLIC HEARINGS TO BE HELD``) as level-1 headings: an agenda's
    sections, when it has neither outline nor bigger fonts; at least 3 distinct numbers."""
    found = {(k, i): int(m.group(1)) for k, p in enumerate(pages) for i, line in enumerate(p.lines)
             if i not in skip[k] and (m := _CAPS_ITEM.match(line.text))}
    if len(set(found.values())) < 3:
        return {}
    return dict.fromkeys(found, 1)


def _kind(line: Line) -> str:
    if _ITEM.match(line.text):
        return "item"
    numeric = len(_NUMBERS.findall(line.text))
    return "row" if numeric >= 2 and numeric * 2 >= len(line.text.split()) else "text"


def layout(pages: Sequence[PdfPage], outline: Sequence[OutlineItem]) -> PdfLayout:
    """Canonical text and blocks of a document's pages (see the module docstring)."""
    skip = running_lines(pages)
    heads = outline_headings(pages, outline, skip)
    source = "outline"
    if len(heads) < max(1, len(outline) // 2):
        heads, source = font_headings(pages, skip), "font"
    if not heads:
        heads, source = numbered_headings(pages, skip), "numbered"
    if not heads:
        source = "none"
    parts: list[str] = []
    blocks: list[Block] = []
    running: dict[str, str] = {}  # key (digits ignored) -> the first line seen with it
    pos = 0
    for k, page in enumerate(pages):
        if k:
            parts.append("\n")
            pos += 1
        start = pos
        builder = _PageBlocks(page.number)
        page_skip = skip[k]
        for i, line in enumerate(page.lines):
            if i in page_skip:
                blocks.append(Block("running", pos, pos + len(line.text), meta={"page": page.number}))
                running.setdefault(_key(line.text), line.text)
                builder.flush(blocks)
            else:
                builder.add(line, pos, heads.get((k, i)) if heads else None, blocks)
            parts.append(line.text + "\n")
            pos += len(line.text) + 1
        builder.flush(blocks)
        meta = {"width": page.width, "height": page.height}
        if page.ocr_confidence is not None:
            meta["ocr_confidence"] = page.ocr_confidence
        blocks.append(Block("page", start, pos, str(page.number), meta))
    blocks.sort(key=lambda b: (b.start, b.kind != "page"))
    return PdfLayout("".join(parts), blocks, source, list(running.values()))


class _PageBlocks:
    """Groups a page's consecutive lines into heading / item / table / para blocks."""

    def __init__(self, page: int) -> None:
        self.page = page
        self.kind = ""
        self.lines: list[tuple[Line, int]] = []
        self.level = 0

    def add(self, line: Line, pos: int, level: int | None, blocks: list[Block]) -> None:
        if level is not None:
            if not (self.kind == "heading" and self.level == level and self._close(line)):
                self.flush(blocks)
            self.kind, self.level = "heading", level
            self.lines.append((line, pos))
            return
        kind = _kind(line)
        prev = self.lines[-1][0] if self.lines else None
        cont = prev is not None and self.kind != "heading" and self._close(line)
        if kind == "row":
            if not (cont and self.kind == "table"):
                self.flush(blocks)
                self.kind = "table"
        elif kind == "item":
            self.flush(blocks)
            self.kind = "item"
        elif not cont or self.kind == "table":
            self.flush(blocks)
            self.kind = "para"
        self.lines.append((line, pos))

    def _close(self, line: Line) -> bool:
        """Whether ``line`` follows the previous one without a paragraph gap (and not in a new column)."""
        prev = self.lines[-1][0]
        height = max(prev.y1 - prev.y0, line.y1 - line.y0, prev.size, 1.0)
        gap = prev.y0 - line.y1
        return -0.5 * height <= gap <= 0.9 * height

    def flush(self, blocks: list[Block]) -> None:
        if not self.lines:
            return
        kind = self.kind
        if kind == "table" and len(self.lines) < 2:
            kind = "para"
        first, start = self.lines[0]
        last, lpos = self.lines[-1]
        end = lpos + len(last.text)
        _, x0s, y0s, x1s, y1s, _ = zip(*(ln for ln, _ in self.lines))  # one pass for the four sides, not four
        box = [min(x0s), min(y0s), max(x1s), max(y1s)]
        meta: dict[str, Any] = {"page": self.page, "bbox": box}
        key = ""
        if kind == "heading":
            key = str(self.level)
            meta["title"] = " ".join(ln.text for ln, _ in self.lines)
        blocks.append(Block(kind, start, end, key, meta))
        self.lines = []
        self.kind = ""
