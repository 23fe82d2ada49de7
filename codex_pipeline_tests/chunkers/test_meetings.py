"""Chunk trees of agendas, minutes and captions: every chunk cut at the reader's blocks, votes as columns."""

from __future__ import annotations

import shutil
from pathlib import Path

from codex_pipeline.chunkers.civic import CivicLimits, chunk_civic
from codex_pipeline.core.contract import ChunkType
from codex_pipeline.retrieval import Filters, Hit, Retriever
from codex_pipeline.sources.civic import load_civic_day
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.conftest import land, materialize_dataset, query_catalog
from codex_pipeline_tests.fakes import FakeEmbedder

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "meetings"
DAY = "2026-11-24"  # a landing day in the partitions; the meeting's date is in the file names


def _chunks(tmp_path: Path, *names: str) -> dict[str, list]:
    day = tmp_path / "day"
    day.mkdir(parents=True, exist_ok=True)
    for n in names:
        shutil.copy(FIX / f"{n}.txt", day)
    res = load_civic_day(day)
    return {d.record_id: (d, chunk_civic(d, CivicLimits())) for d in res.documents}


def test_every_chunk_is_its_spans_and_every_parent_exists(tmp_path: Path) -> None:
    got = _chunks(tmp_path, "2026-03-10-riverton-agenda", "2026-03-10-riverton-minutes",
                  "2026-03-10-riverton-meeting.captions")
    for doc, drafts in got.values():
        sids = [c.section_id for c in drafts]
        assert len(sids) == len(set(sids))
        for c in drafts:
            assert c.parent_section_id is None or c.parent_section_id in sids
            if c.chunk_type != ChunkType.AGENDA_ITEM or doc.payload["meeting"]["kind"] != "transcript":
                pieces = [doc.text[s:e] for s, e in c.spans]
                assert c.text == (pieces[0] if len(pieces) == 1 else "\n".join(pieces))
            assert c.metadata["meeting_id"] == doc.payload["meeting"]["meeting_id"]


def test_minutes_tree_motions_and_conditions(tmp_path: Path) -> None:
    _, drafts = _chunks(tmp_path, "2026-03-10-riverton-minutes")["2026-03-10-riverton-minutes"]
    by_sid = {c.section_id: c for c in drafts}
    motion = by_sid["item.public-hearings.1.motion.1"]
    assert motion.chunk_type == ChunkType.MOTION and motion.parent_section_id == "item.public-hearings.1"
    assert "AYES: Ortiz" in motion.text and motion.metadata["noes_count"] == 1
    assert by_sid["item.public-hearings.1.condition.2"].text.startswith("2. Construction hours")
    # the motion's words are in its motion chunk, not again in the item's own text
    item_text = " ".join(c.text for c in drafts if c.section_id.startswith("item.public-hearings.1")
                         and c.chunk_type in (ChunkType.AGENDA_ITEM, ChunkType.ITEM_TEXT))
    assert "Patel seconded" not in item_text


def test_agenda_chunk_ids_do_not_move_when_the_minutes_land(tmp_path: Path) -> None:
    alone = _chunks(tmp_path / "a", "2026-03-10-riverton-agenda")["2026-03-10-riverton-agenda"][1]
    both = _chunks(tmp_path / "b", "2026-03-10-riverton-agenda", "2026-03-10-riverton-minutes",
                   "2026-03-10-riverton-meeting.captions")["2026-03-10-riverton-agenda"][1]
    assert [(c.section_id, c.text) for c in alone] == [(c.section_id, c.text) for c in both]


def test_votes_are_columns_through_dagster(warehouse: Warehouse) -> None:
    land(warehouse, "civic_intelligence", DAY, FIX)
    assert materialize_dataset(warehouse, "civic_intelligence", DAY).success
    votes = query_catalog(warehouse, "SELECT item, mover, seconder, result, ayes, noes, no_names FROM "
                                     "codex.civic_intelligence_votes ORDER BY item")
    kinds = query_catalog(warehouse, "SELECT DISTINCT metadata->>'record_kind' FROM codex.civic_intelligence_chunks "
                                     "ORDER BY 1")
    rezoning = [v for v in votes if v[0] == "public-hearings.1"]
    assert [(v[1], v[2], v[4], v[5], v[6]) for v in rezoning] == [
        ("Councilmember Ortiz", "Councilmember Patel", 4, 1, ["Brooks"])]
    assert any(v[0] == "consent-calendar.1" and v[3] == "passed" and v[4:6] == (5, 0) for v in votes)
    assert [k[0] for k in kinds] == ["agenda", "minutes", "transcript"]


def test_a_transcript_items_composed_summary_is_no_hit_unless_its_type_is_asked_for(warehouse: Warehouse) -> None:
    land(warehouse, "civic_intelligence", DAY, FIX)
    assert materialize_dataset(warehouse, "civic_intelligence", DAY).success
    retriever = Retriever(warehouse.root, ["civic_intelligence"], embedder=FakeEmbedder())
    query = "public hearing rezoning 12 acres 400 Orchard Lane residential planned development"

    def summary(h: Hit) -> bool:  # a transcript's agenda_item: composed by the chunker
        return h.chunk_type == "agenda_item" and h.metadata.get("record_kind") == "transcript"

    for mode in ("bm25", "hybrid"):
        hits = retriever.search(query, k=30, mode=mode)
        assert hits and not any(summary(h) for h in hits)
    asked = retriever.search(query, k=30, mode="bm25", filters=Filters.of(chunk_types=["agenda_item"]))
    assert any(summary(h) for h in asked)  # the transcript's item 4.a summary
    assert any(h.metadata.get("record_kind") == "agenda" for h in asked)  # the agenda's own item 4.a
