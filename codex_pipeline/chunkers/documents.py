"""documents: chunks packed from the blocks a document's reader found, with pages and boxes.

Markdown files go to the ``docs`` chunker unchanged. PDFs, DOCX, HTML and text are packed
from their unit blocks (``heading``, ``item``, ``table``, ``para``) in reading order:

- a heading starts a chunk and stays with what follows it (consecutive headings travel together);
- units are added while the chunk stays within ``max_tokens``; an item or a table is never cut
  unless it alone is over ``max_tokens`` (a table is then split by rows, every piece after the
  first repeating its first row, as the Markdown chunker does);
- running headers, footers and page numbers (``running`` blocks) are never in a chunk: a
  chunk that runs across them is composed of the spans around them, each span still a verbatim
  slice of the canonical text (so ``text[start:end]`` reproduces it);
- a word hyphenated across a line end (``deter-\\nmined``) is rejoined in the chunk text (what
  BM25 and the embedder see) by cutting the span at the hyphen, never by editing the text.

``page`` is the page the chunk starts on (``p=`` of the locator, ``evidence_anchor.page``);
the anchor also carries ``pages`` when the chunk runs onto later pages and ``boxes``
(``[page, x0, y0, x1, y1]`` in PDF points on the page as displayed, origin bottom left) of its blocks per page.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from codex_pipeline.chunkers.markdown import MarkdownLimits, chunk_markdown
from codex_pipeline.chunkers.sizing import Budget, split_range
from codex_pipeline.core.contract import ChunkType
from codex_pipeline.core.documents import Block, PageIndex, SourceDocument
from codex_pipeline.core.rows import ChunkDraft
from codex_pipeline.core.tokens import count_tokens, count_tokens_batch

UNIT_KINDS = frozenset({"heading", "item", "table", "para"})

Segment = tuple[int, int, str]  # (start, end, joiner in front of it)


@dataclass(frozen=True)
class DocumentLimits:
    """``max_tokens``: a chunk's size before the next unit starts a new one; Markdown uses ``markdown``."""

    max_tokens: int = 512
    markdown: MarkdownLimits = field(default_factory=MarkdownLimits)


def chunk_documents(doc: SourceDocument, limits: DocumentLimits = DocumentLimits()) -> list[ChunkDraft]:
    """``doc_section`` chunks of one document (see the module docstring)."""
    fmt = (doc.payload or {}).get("format", "text")
    if fmt == "markdown":
        return chunk_markdown(doc, limits.markdown)
    return _Packer(doc, limits, fmt).run()


class _Packer:
    def __init__(self, doc: SourceDocument, limits: DocumentLimits, fmt: str) -> None:
        self.doc, self.text, self.fmt = doc, doc.text, fmt
        self.budget = Budget("tokens", limits.max_tokens)
        self.units = sorted((b for b in doc.blocks if b.kind in UNIT_KINDS), key=lambda b: b.start)
        self.pages = PageIndex(doc.blocks)
        self.ocr = {int(b.key): b.meta["ocr_confidence"] for b in doc.blocks if b.kind == "page" and "ocr_confidence" in b.meta}
        self.drafts: list[ChunkDraft] = []
        self.per_page: dict[int, int] = {}
        self.path: list[tuple[int, str]] = []  # open headings (level, title)

    def run(self) -> list[ChunkDraft]:
        sizes = count_tokens_batch([self.text[u.start : u.end] for u in self.units])
        group: list[Block] = []
        tokens = 0
        body = False  # the group holds a unit other than a heading (kept as a flag, not rescanned per unit)
        for unit, n in zip(self.units, sizes):
            if body and (unit.kind == "heading" or tokens + n > self.budget.max_size):
                self.emit(group)
                group, tokens, body = [], 0, False
            if unit.kind == "heading":
                level = int(unit.key or 1)
                self.path = [h for h in self.path if h[0] < level] + [(level, str(unit.meta.get("title", "")))]
            if n > self.budget.max_size:  # alone over the budget: split, the group's headings in front
                self.split(group, unit)
                group, tokens, body = [], 0, False
                continue
            group.append(unit)
            tokens += n
            body = body or unit.kind != "heading"
        if group:
            self.emit(group)
        for d, n in zip(self.drafts, count_tokens_batch([d.text for d in self.drafts])):  # one batch, not one call each
            d.token_count = n
        return self.drafts

    def emit(self, group: list[Block], segments: list[Segment] | None = None) -> None:
        segs = segments or self.segments([(u.start, u.end) for u in group])
        text = "".join(j + self.text[s:e] for s, e, j in segs)
        page = self.pages.at(segs[0][0])
        last = self.pages.at(segs[-1][1] - 1)
        extra: dict[str, Any] = {}
        if page is not None and last is not None and last != page:
            extra["pages"] = [page, last]
        boxes = _boxes(group)
        if boxes:
            extra["boxes"] = boxes
        n = self.per_page.get(page or 0, 0)
        self.per_page[page or 0] = n + 1
        sid = f"p{page:03d}.{n}" if page is not None else f"part.{len(self.drafts)}"
        meta: dict[str, Any] = {"format": self.fmt, "headers": [t for _, t in self.path],
                                "blocks": sorted({u.kind for u in group})}
        confidences = [self.ocr[p] for p in range(page or 0, (last or 0) + 1) if p in self.ocr]
        if confidences:  # the chunk's text comes from OCR: the lowest page confidence it stands on
            meta["ocr_confidence"] = min(confidences)
        self.drafts.append(ChunkDraft(
            section_id=sid, chunk_type=ChunkType.DOC_SECTION, text=text,
            spans=tuple((s, e) for s, e, _ in segs), token_count=0,  # counted for all drafts at the end of run()
            page=page, anchor_extra=extra or None, metadata=meta,
        ))

    def segments(self, ranges: list[tuple[int, int]]) -> list[Segment]:
        """Adjacent ranges fused when only whitespace lies between; each then cut at rejoined hyphens."""
        fused: list[list[int]] = []
        for s, e in ranges:
            if fused and not self.text[fused[-1][1] : s].strip():
                fused[-1][1] = e
            else:
                fused.append([s, e])
        out: list[Segment] = []
        for s, e in fused:
            joiner = "\n" if out else ""
            for h in _hyphen_breaks(self.text, s, e):
                out.append((s, h, joiner))
                s, joiner = h + 2, ""
            out.append((s, e, joiner))
        return out

    def split(self, heads: list[Block], unit: Block) -> None:
        """A unit over the budget: a table by rows with its first row repeated, anything else by
        :func:`split_range`; headings in front of it go with its first piece."""
        lead = heads[0].start if heads else unit.start
        if unit.kind == "table":
            pieces = self.table_pieces(unit)
        else:
            pieces = [[(p.start, p.end, "")] for p in split_range(self.text, unit.start, unit.end, self.budget)]
        for k, piece in enumerate(pieces):
            group = [unit]
            if k == 0 and heads and count_tokens(self.text[lead : piece[-1][1]]) <= self.budget.max_size:
                piece, group = self.segments([(lead, piece[-1][1])]), [*heads, unit]
            elif k == 0 and heads:
                self.emit(heads)
            self.emit(group, piece)

    def table_pieces(self, unit: Block) -> list[list[Segment]]:
        rows: list[tuple[int, int]] = []
        p = unit.start
        while p < unit.end:
            nl = self.text.find("\n", p, unit.end)
            q = unit.end if nl < 0 else nl
            rows.append((p, q))
            p = q + 1
        head = rows[0]
        counts = count_tokens_batch([self.text[a:b] for a, b in rows])
        pieces: list[list[Segment]] = []
        cur: list[int] = []
        size = 0
        for i in range(len(rows)):
            if cur and size + counts[i] > self.budget.max_size:
                pieces.append(self.rows_piece(rows, cur, head, bool(pieces)))
                cur, size = [], counts[0]
            cur.append(i)
            size += counts[i]
        pieces.append(self.rows_piece(rows, cur, head, bool(pieces)))
        return [seg for piece in pieces for seg in self.capped(piece)]

    def rows_piece(self, rows: list[tuple[int, int]], idx: list[int], head: tuple[int, int], repeat: bool) -> list[Segment]:
        span = (rows[idx[0]][0], rows[idx[-1]][1])
        if repeat and idx[0] != 0:
            return [(head[0], head[1], ""), (span[0], span[1], "\n")]
        return [(span[0], span[1], "")]

    def capped(self, piece: list[Segment]) -> list[list[Segment]]:
        """A piece whose single row is over the budget is cut like text."""
        s, e, _ = piece[-1]
        text = "\n".join(self.text[a:b] for a, b, _ in piece)
        if count_tokens(text) <= self.budget.cap:
            return [piece]
        return [[(p.start, p.end, "")] for p in split_range(self.text, s, e, self.budget)]


def _hyphen_breaks(text: str, start: int, end: int) -> Iterator[int]:
    """Offsets of each ``-\\n`` in ``text[start:end]`` between two lowercase ASCII letters: a word hyphenated across a line end.

    The letter before may lie before ``start``, the one after must lie before ``end`` (as the regex
    ``(?<=[a-z])-\\n(?=[a-z])`` would match from ``start`` to ``end``). ``str.find`` jumps to each rare ``-\\n``
    where the regex tried its lookbehind at every character of the chunk (``docs/history.md``, PDF step speed).
    """
    stop = min(end, len(text)) - 1  # the letter after must lie before end
    at = text.find("-\n", start, stop) if stop > start else -1  # (a negative stop would count from the end)
    while at >= 0:
        if at and "a" <= text[at - 1] <= "z" and "a" <= text[at + 2] <= "z":
            yield at
        at = text.find("-\n", at + 2, stop)


def _boxes(group: list[Block]) -> list[list[float]]:
    """One box per page: the union of the group's block boxes there (widened in place: one list per page, not per block)."""
    by_page: dict[int, list[float]] = {}
    for u in group:
        box, page = u.meta.get("bbox"), u.meta.get("page")
        if not box or page is None:
            continue
        cur = by_page.get(page)
        if cur is None:
            by_page[page] = list(box)
            continue
        x0, y0, x1, y1 = box
        if x0 < cur[0]:  # as min(cur[0], x0): the current value kept on a tie
            cur[0] = x0
        if y0 < cur[1]:
            cur[1] = y0
        if x1 > cur[2]:
            cur[2] = x1
        if y1 > cur[3]:
            cur[3] = y1
    return [[p, *b] for p, b in sorted(by_page.items())]
