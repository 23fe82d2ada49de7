"""Seed-003 locators: rev8 of normalize_text, the collision policy, section paths and block order."""

from __future__ import annotations

import datetime as dt
import logging

import pytest

from codex_pipeline.core.documents import Block, SourceDocument
from codex_pipeline.core.ids import (
    RevisionLedger,
    locator_uid,
    make_locator,
    normalize_text,
    parse_locator,
    revision8,
)
from codex_pipeline.core.locators import Address, addresses, heading_paths, section_sort_key
from codex_pipeline.core.rows import ChunkDraft, ChunkRun, RowBuffer

# two texts whose normalized SHA-1 share their first 8 hex digits (found by a birthday search)
COLLIDING = ("collision probe 51249", "collision probe 83899")


def test_normalize_text_follows_the_seed() -> None:
    assert normalize_text("  Exam-\nple   text\n\n\twith  space ") == "Example text with space"
    # a hyphen before a capital or a digit is real punctuation, not an OCR line break
    assert normalize_text("north-\nSouth 10-\n12") == "north- South 10- 12"
    pages = "\f".join(f"ACME annual report\nbody of page {i}\nPage {i} of 5" for i in range(5))
    assert normalize_text(pages) == " ".join(f"body of page {i}" for i in range(5))


def test_rev8_ignores_layout_but_not_words() -> None:
    base = revision8("The permit was approved.\n\nConditions follow.")
    assert revision8("The permit  was approved.\nConditions follow.  ") == base
    assert revision8("The permit was denied.\n\nConditions follow.") != base
    assert len(base) == 8


def test_a_revision_collision_extends_to_rev12_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    a, b = COLLIDING
    assert revision8(a) == revision8(b)
    ledger = RevisionLedger()
    assert ledger.revision("doc", a) == revision8(a)
    with caplog.at_level(logging.WARNING, logger="codex_pipeline.core.ids"):
        long = ledger.revision("doc", b)
    assert len(long) == 12 and long.startswith(revision8(b))
    assert "collision" in caplog.text and ledger.collisions == [("doc", revision8(a))]
    assert ledger.revision("doc", a) == revision8(a)  # the first text keeps its rev8
    assert ledger.revision("other", b) == revision8(b)  # the pair is (doc_uid, rev8)


def test_locator_format_and_parse() -> None:
    uid = locator_uid("odd|id%1")
    loc = make_locator(uid, "8c1e9a02", "2.4.1", 14, 6)
    assert loc == "odd%7Cid%251|r=8c1e9a02|s=2.4.1|p=014|b=006"
    assert parse_locator(loc) == {"uid": uid, "rev": "8c1e9a02", "section": "2.4.1", "page": "014", "block": "006"}
    assert parse_locator("a|r=zz|s=1|p=000|b=000") is None
    assert make_locator("d", "8c1e9a02", "p000", None, 1234, width=4).endswith("|p=0000|b=1234")


def _draft(sid: str, start: int, parent: str | None = None, page: int | None = None) -> ChunkDraft:
    return ChunkDraft(sid, "doc_section", "x", ((start, start + 1),), 1, parent_section_id=parent, page=page)


def test_heading_tree_gives_dot_paths() -> None:
    levels = [(0, 1), (10, 2), (20, 2), (30, 3), (40, 4), (50, 2), (60, 1), (70, 3)]
    blocks = [Block("heading", s, s + 5, str(level)) for s, level in levels]
    assert heading_paths(blocks)[1] == ["1", "1.1", "1.2", "1.2.1", "1.2.1.1", "1.3", "2", "2.1"]
    drafts = [_draft("pre", 0), _draft("a", 12), _draft("a-part", 16), _draft("b", 36), _draft("c", 76)]
    blocks = [Block("front_matter", 0, 3)] + [Block("heading", s + 5, s + 10, str(level)) for s, level in levels]
    assert addresses(blocks, drafts) == [
        Address("0", 0, 0), Address("1", 0, 0), Address("1.1", 0, 0), Address("1.2.1", 0, 0), Address("2.1", 0, 0),
    ]


def test_parent_links_give_sections_and_blocks() -> None:
    drafts = [
        _draft("item.1", 0), _draft("item.1.turn.1", 5, "item.1"), _draft("item.1.turn.2", 9, "item.1"),
        _draft("item.4", 20), _draft("sub", 21, "item.4"), _draft("sub.x", 22, "sub"), _draft("item.4.c", 30, "item.4"),
    ]
    assert addresses((), drafts) == [
        Address("1", 0, 0), Address("1", 0, 1), Address("1", 0, 2),
        Address("2", 0, 0), Address("2.1", 0, 0), Address("2.1", 0, 1), Address("2", 0, 1),
    ]


def test_no_structure_synthesizes_the_page_path() -> None:
    assert addresses((), [_draft("window.0", 0), _draft("window.1", 5)]) == [Address("p000", 0, 0), Address("p000", 0, 1)]
    paged = [_draft("w0", 0, page=1), _draft("w1", 5, page=1), _draft("w2", 9, page=2)]
    assert addresses((), paged) == [Address("p001", 1, 0), Address("p001", 1, 1), Address("p002", 2, 0)]


def test_section_sort_key_is_numeric() -> None:
    paths = ["2.10", "0", "2.9", "10", "2", "p002"]
    assert sorted(paths, key=section_sort_key) == ["0", "2", "p002", "2.9", "2.10", "10"]


def test_row_buffer_locators_sort_in_reading_order() -> None:
    text = "".join(f"Para {i}. " for i in range(1200))
    doc = SourceDocument("urn:aprs:narrative:big.txt", "big.txt", text, "big.txt")
    drafts = [ChunkDraft(f"window.{i}", "narrative_window", text[i * 9:(i + 1) * 9], ((i * 9, (i + 1) * 9),), 3)
              for i in range(1200)]
    buf = RowBuffer(ChunkRun("narrative", dt.date(2026, 11, 24), "1", dt.datetime.now(dt.UTC)))
    buf.add_document(doc, drafts)
    rows = buf.to_table().select(["seq_index", "locator"]).to_pylist()
    assert rows[7]["locator"] == f"big.txt|r={revision8(text)}|s=p000|p=0000|b=0007"  # 1,200 blocks: 4 digits
    assert [r["seq_index"] for r in sorted(rows, key=lambda r: r["locator"])] == list(range(1200))


def test_row_buffer_ids_and_locators_equal_the_public_recipes() -> None:
    from codex_pipeline.core.contract import ChunkType
    from codex_pipeline.core.ids import make_chunk_id

    text = "".join(f"Part {i}. " for i in range(40))
    doc = SourceDocument("urn:aprs:docs:odd|id%1", "odd|id%1", text, "odd.md")
    drafts = [_draft("s.0", 0, page=3), _draft("s.1", 9, "s.0", page=3), _draft("s.2", 18, "s.1"),
              ChunkDraft("s.3", ChunkType.DOC_SECTION, "x", ((27, 28),), 1, parent_section_id="s.0", page=1200)]
    buf = RowBuffer(ChunkRun("docs", dt.date(2026, 11, 24), "1", dt.datetime.now(dt.UTC)))
    buf.add_document(doc, drafts)
    rows = buf.to_table().to_pylist()
    addrs = addresses((), drafts)
    uid, rev = locator_uid(doc.record_id), revision8(text)
    for row, d, a in zip(rows, drafts, addrs):
        assert row["chunk_id"] == make_chunk_id(doc.doc_id, d.section_id)
        assert row["parent_chunk_id"] == (make_chunk_id(doc.doc_id, d.parent_section_id) if d.parent_section_id else None)
        assert row["locator"] == make_locator(uid, rev, a.section, a.page, a.block, width=4)
        assert row["chunk_type"] == "doc_section" and type(row["chunk_type"]) is str
    with pytest.raises(ValueError):
        buf.add_document(doc, [_draft("bad\x1fsection", 0)])
    with pytest.raises(ValueError):
        buf.add_document(SourceDocument("urn:aprs:docs:a\x1f", "a", "x", "a.md"), [_draft("s", 0)])


def test_row_buffer_revisions_are_resolved_in_the_order_documents_were_added() -> None:
    a, b = COLLIDING
    buf = RowBuffer(ChunkRun("docs", dt.date(2026, 11, 24), "1", dt.datetime.now(dt.UTC)))
    for text in (a, b):
        buf.add_document(SourceDocument("urn:aprs:docs:same", "same", text, "same.md"), [_draft("s", 0)])
    first, second = (parse_locator(r["locator"]) for r in buf.to_table().to_pylist())
    assert first is not None and second is not None
    assert first["rev"] == revision8(a) and len(second["rev"]) == 12  # the collision policy, as one text at a time
    assert buf.to_table().column("locator").to_pylist() == buf.to_table().column("locator").to_pylist()
