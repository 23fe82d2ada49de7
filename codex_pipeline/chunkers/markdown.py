"""docs: Markdown split on H1–H3 with the header path kept, small sections fused, big ones split.

Three stages, as the seed's MarkdownChunker, done on exact offsets:

1. *Structure.* The reader parsed the body (CommonMark, ``sources.markdown``) and stored
   its blocks on the document: top-level headings, code blocks, tables, thematic breaks.
   Headings of levels 1–3 start sections; each section knows its header path. Nothing
   here parses Markdown: a document without those blocks (a raw partition written by an
   older reader) is refused with a message saying to re-materialize raw.
2. *Fuse.* Adjacent sections are fused while one side is under ``min_size`` and the
   result fits ``max_size``; a small section in front of one that must be split is
   carried into the split. The chunk keeps the header path of every fused section.
3. *Split.* A unit over ``max_size`` is packed from blocks (paragraphs, code blocks,
   tables) with about ``overlap`` repeated between pieces. Code and tables are never
   cut unless one alone exceeds the 1,500-token cap (a table split then repeats its
   header row, making that piece a composed chunk with two spans).

Sizes live in :class:`MarkdownLimits`: tokens by default (256/512/32, the seed's
1024/2048/128 characters at the ~4 characters per cl100k token measured on Markdown
docs); :data:`SEED_CHARS` is the seed's character budget. The 1,500-token cap holds in both.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Any, NamedTuple

from codex_pipeline.chunkers.sizing import Budget, Unit, overlap_start, split_range
from codex_pipeline.core.contract import MAX_CHUNK_TOKENS, ChunkType
from codex_pipeline.core.documents import SourceDocument
from codex_pipeline.core.rows import ChunkDraft
from codex_pipeline.core.tokens import TokenizedText, count_tokens, count_tokens_batch, encode_array

PREAMBLE_ID = "preamble"
SECTION_LEVELS = 3  # headings of levels 1..3 start sections; deeper ones stay inside

_AFTER_BLANK = re.compile(r"\n[ \t]*\n\s*(?<=\n)(?=\S)")  # the start of a line that follows a blank line
_SLUG_DROP = re.compile(r"[^\w]+", re.U)


@dataclass(frozen=True)
class MarkdownLimits:
    """The docs chunker's sizes, in ``unit`` (``"tokens"`` or the seed's ``"chars"``).

    ``min_size``: a section under it is fused with a neighbour; ``max_size``: a unit over
    it is split; ``overlap``: repeated between consecutive parts of a split; ``cap``: the
    hard token limit of every chunk, whatever the unit.
    """

    min_size: int = 256
    max_size: int = 512
    overlap: int = 32
    unit: Unit = "tokens"
    cap: int = MAX_CHUNK_TOKENS

    def __post_init__(self) -> None:
        self.budget  # noqa: B018 - validates: Budget refuses inconsistent sizes

    @property
    def budget(self) -> Budget:
        """The sizes as a :class:`Budget`, which refuses inconsistent ones."""
        return Budget(self.unit, self.max_size, self.overlap, self.min_size, self.cap)


SEED_CHARS = MarkdownLimits(min_size=1024, max_size=2048, overlap=128, unit="chars")
"""The seed's MarkdownChunker budget: ``min_char=1024, max_char=2048, chunk_overlap=128``."""


class Header(NamedTuple):
    """A top-level heading (H1–H6) the reader stored; ``title`` is its plain text."""

    start: int  # first char of the heading (paragraph start for setext)
    line_end: int  # just past the heading's last line (underline for setext)
    level: int
    title: str


@dataclass(slots=True)
class Section:
    """``text[start:end]`` under one header path (``()``: the preamble); ``tokens`` is set once counted."""

    start: int
    end: int
    path: tuple[str, ...]  # header path, outermost first; () for the preamble
    section_id: str
    tokens: int = 0

    @property
    def chars(self) -> int:
        """Length in characters."""
        return self.end - self.start


class Atom(NamedTuple):
    """What packing never cuts inside while a unit is split: text between two cuts, a code block, a table.

    Heading-only stretches are carried into the atom that follows them, so an atom may
    open with heading lines (``lead`` then marks where its content starts).
    """

    start: int
    end: int
    kind: str  # "text" | "code" (contains a code block) | "table"
    lead: int = -1  # where the content after the atom's leading heading line(s) starts; -1: no leading heading

    @property
    def headed(self) -> bool:
        """The atom opens with heading line(s)."""
        return self.lead > self.start


@dataclass(frozen=True)
class Structure:
    """What the chunker needs to know about one Markdown document."""

    content_start: int
    sections: list[Section]
    cuts: list[int]  # every position a chunk may start or end at, ascending
    code: list[tuple[int, int]]  # code blocks, fenced or indented
    tables: list[tuple[int, int]]
    headers: list[Header]  # every top-level heading, H1–H6


class MissingStructure(ValueError):
    """The document carries no parsed Markdown structure: its raw partition predates it."""


def slug(title: str) -> str:
    """The ``section_id`` part for a heading: lowercased, non-word runs as ``-``; ``"section"`` if nothing is left."""
    s = _SLUG_DROP.sub("-", title.lower()).strip("-_")
    return s or "section"


def structure(doc: SourceDocument) -> Structure:
    """Sections, cut positions, code blocks and tables from the blocks the reader stored.

    Paragraph cuts are found later, and only inside the units that must be split
    (:func:`paragraph_cuts`).
    """
    text = doc.text
    n = len(text)
    body_start: int | None = None
    code: list[tuple[int, int]] = []
    tables: list[tuple[int, int]] = []
    headers: list[Header] = []
    cuts: list[int] = []
    for b in doc.blocks:
        kind = b.kind
        if kind == "heading":
            headers.append(Header(b.start, b.end, int(b.key), str(b.meta.get("title", ""))))
            cuts.append(b.start)
        elif kind == "code" or kind == "table":
            (code if kind == "code" else tables).append((b.start, b.end))
            cuts.append(b.start)
            cuts.append(b.end)
        elif kind == "hr":
            cuts.append(b.start)
        elif kind == "body":
            body_start = b.start
    if body_start is None:
        raise MissingStructure(
            f"{doc.record_id}: no Markdown structure in raw.blocks (read by an older docs reader); "
            "re-materialize the docs raw partition (the source-version sensor queues that) and chunk again"
        )
    content_start = _first_content_line(text, body_start)
    sections = _sections(text, content_start, [h for h in headers if h.level <= SECTION_LEVELS])
    # cuts at line starts before a non-space (where no chunk begins with blank space) plus the forced ones
    ok = {c for c in cuts if content_start <= c < n and text[c - 1] == "\n" and not text[c].isspace()}
    ok.update(x.start for x in sections)
    ok.add(content_start)
    ok.add(n)
    return Structure(content_start, sections, sorted(ok), code, tables, headers)


def paragraph_cuts(text: str, start: int, end: int, blocks: list[tuple[int, int]]) -> list[int]:
    """Safe starts of lines that follow a blank line in ``[start, end)``, outside code blocks and tables."""
    out = []
    starts = [b[0] for b in blocks]
    for m in _AFTER_BLANK.finditer(text, max(start - 1, 0), end):
        p = m.end()
        if p >= end:
            break
        k = bisect.bisect_right(starts, p) - 1
        if not (k >= 0 and blocks[k][0] < p < blocks[k][1]):
            out.append(p)
    return out


_NON_SPACE = re.compile(r"\S")
_SENTENCE_START = re.compile(r"(?<=[.!?])[ \t]+(?=[^\s])")  # where an overlap may begin mid-line


def _first_content_line(text: str, pos: int) -> int:
    """Start of the first line at or after ``pos`` that is not blank."""
    m = _NON_SPACE.search(text, pos)
    if not m:
        return len(text)
    k = text.rfind("\n", pos, m.start())
    return pos if k < 0 else k + 1


def _sections(text: str, content_start: int, headers: list[Header]) -> list[Section]:
    sections: list[Section] = []
    n = len(text)
    if content_start < n and (not headers or text[content_start : headers[0].start].strip()):
        sections.append(Section(content_start, headers[0].start if headers else n, (), PREAMBLE_ID))
    preamble = bool(sections)  # then a top-level "Preamble" heading must not take its id
    stack: list[tuple[int, tuple[str, ...], str]] = []  # (level, path, slug path)
    seen: dict[str, int] = {}
    add = sections.append
    ends = [h.start for h in headers]
    ends.append(n)
    for i, (start, _, level, title) in enumerate(headers):
        while stack and stack[-1][0] >= level:
            stack.pop()
        sl = slug(title)
        if stack:
            _, ppath, psid = stack[-1]
            path, sid = ppath + (title,), psid + "/" + sl
        else:
            path, sid = (title,), sl
        stack.append((level, path, sid))
        k = seen[sid] = seen.get(sid, 0) + 1
        if k > 1 or sid == PREAMBLE_ID and preamble:
            sid = f"{sid}~{k}"
        add(Section(start, ends[i + 1], path, sid))
    return sections


def chunk_markdown(doc: SourceDocument, limits: MarkdownLimits = MarkdownLimits()) -> list[ChunkDraft]:
    """Header-path chunks of one Markdown document: fused, split with overlap, under the token cap."""
    return _Chunker(limits.budget).chunk(doc)


class _Chunker:
    """The three stages for one budget; holds nothing between documents."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget

    # -- entry point ----------------------------------------------------------------
    def chunk(self, doc: SourceDocument) -> list[ChunkDraft]:
        text = doc.text
        st = structure(doc)
        if not st.sections:
            return []
        ac = TokenizedText(text, encode_array(text))  # the one encoding of the document; every count derives from it
        ac.prefetch(st.cuts)
        for s in st.sections:
            s.tokens = ac.count(s.start, s.end)
        base_meta: dict[str, Any] = {}
        front = (doc.payload or {}).get("front_matter")
        if front:
            base_meta["front_matter"] = front
        drafts: list[ChunkDraft] = []
        bare = _bare_sections(text, st)
        for unit in self._fuse(st.sections, ac, bare):
            drafts.extend(self._draft_unit(doc, st, ac, unit, base_meta))
        return drafts

    # -- stage 2: fuse ----------------------------------------------------------------
    def _fits(self, chars: int, tokens: int) -> bool:
        return self.budget.fits(chars, tokens)

    def _fuse(self, sections: list[Section], ac: TokenizedText, bare: frozenset[int] = frozenset()) -> list[list[Section]]:
        b = self.budget
        by_tokens = b.unit == "tokens"
        lo, hi, cap = b.min_size, b.max_size, b.cap
        count = ac.count
        groups: list[list[Section]] = [[sections[0]]]
        for s in sections[1:]:
            cur = groups[-1]
            g0 = cur[0].start
            # (current group small or s small) and the two together fit; counts only as needed
            small = (count(g0, s.start) if by_tokens else s.start - g0) < lo or (
                s.tokens if by_tokens else s.end - s.start
            ) < lo
            if small:
                both_tok = count(g0, s.end)
                if (both_tok if by_tokens else s.end - g0) <= hi and both_tok <= cap:
                    cur.append(s)
                    continue
            groups.append([s])
        # a small group in front of a section that must be split travels with the split
        out: list[list[Section]] = []
        last = groups[-1]
        p_small = False  # whether out[-1] is small
        for g in groups:
            g0, g1 = g[0].start, g[-1].end
            g_tok = count(g0, g1)
            g_size = g_tok if by_tokens else g1 - g0
            if out:
                prev = out[-1]
                orphan = prev[-1].start in bare  # prev ends on a heading whose first block is in g: never apart
                if orphan or p_small and len(g) == 1 and not (g_size <= hi and g_tok <= cap):
                    out[-1] = prev + g
                    m_tok = count(prev[0].start, g1)
                    p_small = (m_tok if by_tokens else g1 - prev[0].start) < lo
                    continue
                if g_size < lo and g is last:
                    both_tok = count(prev[0].start, g1)
                    if (both_tok if by_tokens else g1 - prev[0].start) <= hi and both_tok <= cap:
                        out[-1] = prev + g
                        continue
            out.append(g)
            p_small = g_size < lo
        return out

    # -- stage 3: draft one unit --------------------------------------------------------
    def _draft_unit(
        self, doc: SourceDocument, st: Structure, ac: TokenizedText, unit: list[Section], base: dict[str, Any]
    ) -> list[ChunkDraft]:
        text = doc.text
        start, end = unit[0].start, unit[-1].end
        tokens = ac.count(start, end)
        sid = unit[0].section_id
        if self._fits(end - start, tokens):
            return [self._draft(sid, text, ((start, end),), text[start:end], tokens, unit, base)]
        pieces = self._split(text, st, ac, start, end)
        drafts = []
        for k, (spans, piece_text, n) in enumerate(pieces, 1):
            meta_sections = [s for s in unit if s.start < spans[-1][1] and s.end > spans[0][0]]
            d = self._draft(f"{sid}.part.{k}", text, spans, piece_text, n, meta_sections or unit[:1], base,
                            part=(k, len(pieces)))
            drafts.append(d)
        return drafts

    @staticmethod
    def _draft(
        sid: str,
        text: str,
        spans: tuple[tuple[int, int], ...],
        chunk_text: str,
        tokens: int,
        sections: list[Section],
        base: dict[str, Any],
        part: tuple[int, int] | None = None,
    ) -> ChunkDraft:
        first = spans[0][0]
        at_start = [s for s in sections if s.start <= first] or sections[:1]
        meta = dict(base)
        meta["headers"] = list(at_start[-1].path)
        meta["header_paths"] = [list(s.path) for s in sections]
        if part:
            meta["part"], meta["parts"] = part
        return ChunkDraft(
            section_id=sid,
            chunk_type=ChunkType.DOC_SECTION,
            text=chunk_text,
            spans=spans,
            token_count=tokens,
            metadata=meta,
        )

    # -- splitting ------------------------------------------------------------------
    def _atoms(self, st: Structure, start: int, end: int, text: str) -> list[Atom]:
        i, j = bisect.bisect_left(st.cuts, start), bisect.bisect_left(st.cuts, end)
        # only the fences and tables that reach into [start, end] can matter here
        fences = [f for f in st.code if f[1] >= start and f[0] <= end]
        tables = [t for t in st.tables if t[1] >= start and t[0] <= end]
        blocks = sorted(fences + tables)
        bounds = sorted(set(st.cuts[i : j + 1]).union(paragraph_cuts(text, start, end, blocks)))
        heading_ends = {h.start: h.line_end for h in st.headers if start <= h.start < end}
        f_starts = [f[0] for f in fences]
        atoms: list[Atom] = []
        carry: int | None = None  # start of heading-only atoms waiting for their content
        for a, b in zip(bounds, bounds[1:]):
            if a in heading_ends and not text[heading_ends[a] : b].strip():
                carry = a if carry is None else carry
                continue
            s = a if carry is None else carry
            carry = None
            lead = heading_ends[a] if a in heading_ends else a
            lead = _skip_space(text, lead, b) if lead > s else -1
            kind = "text"
            # fences are sorted and disjoint: only the last one starting before b can reach past a
            k = bisect.bisect_left(f_starts, b)
            in_fence = k > 0 and fences[k - 1][1] > a
            if tables and _overlaps(a, b, tables) and any(ts >= a and te <= b for ts, te in tables):
                kind = "table" if not in_fence else "code"
            elif in_fence:
                kind = "code"
            atoms.append(Atom(s, b, kind, lead))
        if carry is not None:
            if atoms:
                last = atoms.pop()
                atoms.append(Atom(last.start, end, last.kind, last.lead))
            else:
                atoms.append(Atom(carry, end, "text"))
        return atoms

    def _split(
        self, text: str, st: Structure, ac: TokenizedText, start: int, end: int
    ) -> list[tuple[tuple[tuple[int, int], ...], str, int]]:
        b = self.budget
        # only the fences / tables touching this unit can matter to its overlaps
        forbidden = [r for r in st.code if r[0] <= end and r[1] >= start]
        forbidden += [r for r in st.tables if r[0] <= end and r[1] >= start]
        out: list[tuple[tuple[tuple[int, int], ...], str, int]] = []

        def emit(s: int, e: int, n: int) -> None:
            out.append((((s, e),), text[s:e], n))

        ov: int | None = None  # overlap start for the next piece
        cur: tuple[int, int] | None = None  # (start, end) of the piece being packed
        atoms = self._atoms(st, start, end, text)
        ac.prefetch([a.start for a in atoms] + [a.end for a in atoms])
        for atom in atoms:
            a_tok = ac.count(atom.start, atom.end)
            if cur is not None:
                if b.fits(atom.end - cur[0], ac.count(cur[0], atom.end)):
                    cur = (cur[0], atom.end)
                    continue
                emit(cur[0], cur[1], ac.count(cur[0], cur[1]))
                ov = self._overlap(text, cur, forbidden)
                cur = None
            if atom.headed:
                ov = None  # a piece that opens with a heading starts at the heading, never on the previous section's tail
            if b.fits(atom.end - atom.start, a_tok):
                s = atom.start
                if ov is not None and b.fits(atom.end - ov, ac.count(ov, atom.end)):
                    s = ov
                cur, ov = (s, atom.end), None
                continue
            # the atom alone is over max_size
            if atom.kind != "text" and a_tok <= b.cap:
                emit(atom.start, atom.end, a_tok)  # whole fence / table: never cut below the cap
                ov = None
            elif atom.kind == "table":
                out.extend(self._split_table(text, st, atom))
                ov = None
            elif atom.headed:
                last = self._split_headed(text, atom, out, forbidden)
                ov = self._overlap(text, last, forbidden)
                if ov is not None and ov >= atom.end:
                    ov = None
            elif atom.kind == "code":
                for p in split_range(text, atom.start, atom.end, b):
                    emit(p.start, p.end, p.tokens)
                ov = None
            else:
                limit = max(1, b.max_size - b.overlap)
                prev: tuple[int, int] | None = None
                for p in split_range(text, atom.start, atom.end, b, limit):
                    s = p.start
                    if prev is not None:
                        s = self._overlap(text, prev, forbidden) or p.start
                    elif ov is not None:
                        s = ov
                    n = p.tokens if s == p.start else count_tokens(text[s : p.end])
                    if not b.fits(p.end - s, n, b.max_size + b.overlap):
                        s, n = p.start, p.tokens
                    emit(s, p.end, n)
                    prev = (p.start, p.end)
                ov = self._overlap(text, prev, forbidden) if prev else None
                if ov is not None and ov >= atom.end:
                    ov = None
        if cur is not None:
            emit(cur[0], cur[1], ac.count(cur[0], cur[1]))
        return out

    def _split_headed(self, text: str, atom: Atom, out: list[tuple[tuple[tuple[int, int], ...], str, int]],
                      forbidden: list[tuple[int, int]]) -> tuple[int, int]:
        """Split a text atom that opens with heading line(s): the headings stay with their first block.

        The content after the headings is split on its own and the headings are put in
        front of its first piece (cut smaller by the headings' size, so the whole stays
        within the budget); the other pieces overlap as usual. Without this the
        headings came out as a chunk of their own and the next chunk started on an
        overlap in the middle of a line. Returns the last piece's own range.
        """
        b = self.budget
        limit = max(1, b.max_size - b.overlap)
        head_tokens = count_tokens(text[atom.start : atom.lead])
        first = split_range(text, atom.lead, atom.end, b, max(1, limit - head_tokens))[0]
        n = count_tokens(text[atom.start : first.end])
        if b.fits(first.end - atom.start, n, b.max_size + b.overlap):
            out.append((((atom.start, first.end),), text[atom.start : first.end], n))
        else:  # a heading line alone over the budget: it is a piece of its own, cut if over the cap
            out.extend((((p.start, p.end),), text[p.start : p.end], p.tokens)
                       for p in split_range(text, atom.start, first.end, b))
        prev = (first.start, first.end)
        rest = _skip_space(text, first.end, atom.end)
        if rest >= atom.end:
            return prev
        for p in split_range(text, rest, atom.end, b, limit):
            s = self._overlap(text, prev, forbidden) or p.start
            m = p.tokens if s == p.start else count_tokens(text[s : p.end])
            if not b.fits(p.end - s, m, b.max_size + b.overlap):
                s, m = p.start, p.tokens
            out.append((((s, p.end),), text[s : p.end], m))
            prev = (p.start, p.end)
        return prev

    def _overlap(self, text: str, piece: tuple[int, int], forbidden: list[tuple[int, int]]) -> int | None:
        s, e = piece
        end = e
        while end > s and text[end - 1].isspace():
            end -= 1
        if any(a < end <= b or a <= s and end <= b for a, b in forbidden):  # ends in a fence/table
            return None
        p = overlap_start(text, s, end, self.budget, forbidden)
        if s < p < end and text[p - 1] != "\n":  # mid-line: begin at the next sentence of the overlap instead
            m = _SENTENCE_START.search(text, p, end)
            p = m.end() if m else p
        return None if p >= end else p

    def _split_table(self, text: str, st: Structure, atom: Atom) -> list[tuple[tuple[tuple[int, int], ...], str, int]]:
        """Rows packed under the budget; every piece after the first repeats the header rows."""
        b = self.budget
        ts, te = next((a, c) for a, c in st.tables if atom.start <= a and c <= atom.end)
        out: list[tuple[tuple[tuple[int, int], ...], str, int]] = []

        def verbatim(s: int, e: int) -> None:
            for p in split_range(text, s, e, b):
                out.append((((p.start, p.end),), text[p.start : p.end], p.tokens))

        first_at = ts  # where the first piece starts: the heading line(s) in front of the table travel with it
        if atom.headed and atom.lead >= ts:
            first_at = atom.start
        elif text[atom.start : ts].strip():  # text before the table in the same block
            verbatim(atom.start, ts)
        l2 = text.index("\n", text.index("\n", ts) + 1) + 1  # past the delimiter row
        header = text[ts:l2]
        rows: list[tuple[int, int]] = []
        p = l2
        while p < te:
            nl = text.find("\n", p)
            q = te if nl < 0 or nl + 1 > te else nl + 1
            rows.append((p, q))
            p = q
        counts = count_tokens_batch([text[a:c] for a, c in rows])
        h_tok = count_tokens(header)
        group: list[int] = []
        opened = [False]  # whether a piece of the table's rows was emitted

        def flush() -> None:
            if not group:
                return
            rs, r_end = rows[group[0]][0], rows[group[-1]][1]
            if not opened[0]:  # the first piece is a verbatim slice from the header (or the headings before it)
                opened[0] = True
                out.append((((first_at, r_end),), text[first_at:r_end], count_tokens(text[first_at:r_end])))
            else:
                composed = header + text[rs:r_end]
                out.append((((ts, l2), (rs, r_end)), composed, count_tokens(composed)))
            group.clear()

        lead_tok = count_tokens(text[first_at:ts]) if first_at < ts else 0
        size = [len(header) + ts - first_at, h_tok + lead_tok]
        for i, (a, c) in enumerate(rows):
            if h_tok + counts[i] > b.cap:  # one row over the cap even alone: cut the row itself
                flush()
                if not opened[0] and first_at < ts:
                    verbatim(first_at, ts)  # the headings cannot travel with a row over the cap
                opened[0] = True
                size = [len(header), h_tok]
                verbatim(a, c)
                continue
            if group and not b.fits(size[0] + c - a, size[1] + counts[i]):
                flush()
                size = [len(header), h_tok]
            group.append(i)
            size[0] += c - a
            size[1] += counts[i]
        flush()
        if text[te : atom.end].strip():  # text after the table in the same block
            verbatim(te, atom.end)
        return out


def _bare_sections(text: str, st: Structure) -> frozenset[int]:
    """Starts of the sections that hold nothing but their heading line.

    Such a section always joins the group after it, whatever the sizes (a split of the
    result keeps the heading with its first block, :meth:`_Chunker._split_headed`): a
    chunk of heading lines alone answers nothing and orphans its content.
    """
    ends = {h.start: h.line_end for h in st.headers}
    return frozenset(s.start for s in st.sections if s.start in ends and not text[ends[s.start] : s.end].strip())


def _skip_space(text: str, pos: int, end: int) -> int:
    """The first non-space position in ``[pos, end)``, else ``end``."""
    m = _NON_SPACE.search(text, pos, end)
    return m.start() if m else end


def _overlaps(a: int, b: int, ranges: list[tuple[int, int]]) -> bool:
    return any(s < b and e > a for s, e in ranges)

