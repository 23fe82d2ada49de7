"""Seed-003 addresses of a document's chunks: section dot path, page and block, in reading order.

Derived here, once for every dataset, from what each chunker already produces, so no
chunker computes its own:

1. **Headings** (a reader stored ``heading`` blocks, key = level): ``s`` is the heading
   tree's dot path at the chunk's first character (``2.4.1``); text before the first
   heading is section ``0``.
2. **Parent links** (drafts with ``parent_section_id``): each parentless chunk opens a
   section numbered in reading order (``1``, ``2``, …); a child that has children of its
   own opens a subsection (``2.1``); a leaf child is a block of its parent's section.
3. **Neither**: the seed's synthesized page path ``p{page3}`` (``p000`` when the source
   has no pages), all chunks blocks of that page.

``b`` is then the chunk's index among the chunks of the same (section, page), counted in
the drafts' order (the document's reading order, which becomes ``seq_index``), so
sorting a section's locators gives its reading order.
"""

from __future__ import annotations

import bisect
import operator
from collections.abc import Sequence
from typing import NamedTuple, Protocol

from codex_pipeline.core.documents import Block

PREAMBLE_SECTION = "0"
_PAGE_AND_BLOCK = operator.itemgetter(1, 2)


class Address(NamedTuple):
    """Where a chunk sits: section dot path, page, and its index among the chunks of that (section, page)."""

    section: str
    page: int  # 0: the source has no pages
    block: int


class _Draft(Protocol):
    """What addressing reads of a ChunkDraft (kept structural so rows.py can import this module)."""

    @property
    def section_id(self) -> str: ...
    @property
    def parent_section_id(self) -> str | None: ...
    @property
    def spans(self) -> tuple[tuple[int, int], ...]: ...
    @property
    def page(self) -> int | None: ...


def heading_paths(blocks: Sequence[Block]) -> tuple[list[int], list[str]]:
    """(start offsets, dot paths) of the heading blocks, in text order."""
    heads = sorted((b.start, int(b.key)) for b in blocks if b.kind == "heading" and b.key.isdigit())
    starts: list[int] = []
    paths: list[str] = []
    stack: list[tuple[int, str]] = []  # (level, dot path) of the open headings
    children = [0]  # children[d]: headings seen so far under the open heading at depth d (0: the document)
    for start, level in heads:
        while stack and stack[-1][0] >= level:
            stack.pop()
            children.pop()
        children[-1] += 1
        path = f"{stack[-1][1]}.{children[-1]}" if stack else str(children[-1])
        stack.append((level, path))
        children.append(0)
        starts.append(start)
        paths.append(path)
    return starts, paths


def _by_headings(blocks: Sequence[Block], drafts: Sequence[_Draft]) -> list[str]:
    starts, paths = heading_paths(blocks)
    out = []
    for d in drafts:
        k = bisect.bisect_right(starts, d.spans[0][0]) - 1
        out.append(paths[k] if k >= 0 else PREAMBLE_SECTION)
    return out


def _by_tree(drafts: Sequence[_Draft]) -> list[str]:
    known = {d.section_id for d in drafts}
    parent = {d.section_id: d.parent_section_id for d in drafts if d.parent_section_id in known}
    has_children = set(parent.values())
    path: dict[str, str] = {}
    opened: dict[str | None, int] = {}  # sections opened so far under each parent (None: the document)

    visiting: set[str] = set()

    def section_of(sid: str) -> str:
        """Numbered when first met, by itself or by a child that comes before it."""
        if sid not in path:
            visiting.add(sid)
            up = parent.get(sid)
            if up in visiting:  # a cycle of parent links (the contract check refuses it): a root here
                up = None
            if up is None or sid in has_children:  # opens a section of its own
                n = opened[up] = opened.get(up, 0) + 1
                path[sid] = str(n) if up is None else f"{section_of(up)}.{n}"
            else:  # a leaf: a block of its parent's section
                path[sid] = section_of(up)
            visiting.discard(sid)
        return path[sid]

    return [section_of(d.section_id) for d in drafts]


def addresses(blocks: Sequence[Block], drafts: Sequence[_Draft]) -> list[Address]:
    """One :class:`Address` per draft, in the drafts' order."""
    pages = [d.page or 0 for d in drafts]
    if any(b.kind == "heading" for b in blocks):
        sections = _by_headings(blocks, drafts)
    elif any(d.parent_section_id for d in drafts):
        sections = _by_tree(drafts)
    else:
        sections = ["p" + str(p).zfill(3) for p in pages]  # f"p{p:03d}", without a format spec per chunk
    counters: dict[tuple[str, int], int] = {}
    out = []
    new = tuple.__new__  # Address(s, p, k) without the NamedTuple's Python-level __new__
    for s, p in zip(sections, pages):
        k = counters.get((s, p), 0)
        counters[(s, p)] = k + 1
        out.append(new(Address, (s, p, k)))
    return out


def pad_width(addrs: Sequence[Address]) -> int:
    """Digits for page and block: 3, or more for a document with over 999 blocks in a section."""
    top = max(map(max, map(_PAGE_AND_BLOCK, addrs)), default=0)
    return max(3, len(str(top)))


def section_sort_key(section: str) -> tuple[tuple[int, int | str], ...]:
    """Order of section paths as numbers (``2.10`` after ``2.9``; ``p005`` by its page)."""
    parts = section[1:] if section.startswith("p") and section[1:].isdigit() else section
    return tuple((0, int(x)) if x.isdigit() else (1, x) for x in parts.split("."))
