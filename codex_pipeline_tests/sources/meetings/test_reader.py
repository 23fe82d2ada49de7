"""Agendas, minutes and captions of one meeting landed together: what the civic reader detects and keeps."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from codex_pipeline.core.documents import SourceDocument
from codex_pipeline.sources.civic import load_civic_day
from codex_pipeline.sources.meetings.facts import meeting_body, meeting_date
from codex_pipeline.sources.meetings.reader import bodies_agree

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "meetings"
AGENDA, MINUTES, CAPTIONS = (f"2026-03-10-riverton-{n}" for n in ("agenda", "minutes", "meeting.captions"))


def land(tmp_path: Path, *names: str) -> dict[str, SourceDocument]:
    day = tmp_path / "2026-03-10"
    day.mkdir(exist_ok=True)
    for n in names:
        shutil.copy(FIX / f"{n}.txt", day / f"{n}.txt")
    res = load_civic_day(day)
    assert res.rejects == []
    return {d.record_id: d for d in res.documents}


def test_each_record_says_what_it_is_and_the_meeting_it_belongs_to(tmp_path: Path) -> None:
    docs = land(tmp_path, AGENDA, MINUTES, CAPTIONS)
    kinds = {rid: d.payload["meeting"]["kind"] for rid, d in docs.items()}
    assert kinds == {AGENDA: "agenda", MINUTES: "minutes", CAPTIONS: "transcript"}
    assert {d.payload["meeting"]["meeting_id"] for d in docs.values()} == {
        docs[MINUTES].payload["meeting"]["meeting_id"]}
    assert docs[MINUTES].payload["meeting"]["body"] == "Riverton City Council"
    assert docs[CAPTIONS].payload["meeting"]["aligned_record"] == f"{AGENDA}.txt"


def test_agenda_items_keep_the_documents_numbers(tmp_path: Path) -> None:
    agenda = land(tmp_path, AGENDA)[AGENDA]
    items = {b.key: b.meta for b in agenda.blocks_of("agenda_item")}
    assert list(items) == ["preamble", "call-to-order", "1", "2", "3", "3.a", "3.b", "4", "4.a", "5", "5.a", "6"]
    assert items["3"]["consent"] and items["3.a"]["parent"] == "3"
    assert items["4.a"]["title"].startswith("Public hearing on the rezoning of 12 acres")


def test_minutes_motions_votes_and_conditions(tmp_path: Path) -> None:
    minutes = land(tmp_path, MINUTES)[MINUTES]
    text = minutes.text
    motions = {(b.meta["item"], b.key): b for b in minutes.blocks_of("motion")}
    consent = motions[("consent-calendar.1", "1")]
    assert (consent.meta["mover"], consent.meta["seconder"]) == ("Councilmember Chen", "Councilmember Ortiz")
    assert (consent.meta["result"], consent.meta["ayes_count"], consent.meta["noes_count"]) == ("passed", 5, 0)
    rezoning = motions[("public-hearings.1", "1")]
    assert (rezoning.meta["ayes_count"], rezoning.meta["noes_count"], rezoning.meta["noes"]) == (4, 1, ["Brooks"])
    s, e = (rezoning.start + x for x in rezoning.meta["vote"])
    assert text[s:e].startswith("AYES: Ortiz")
    conditions = [text[b.start : b.end] for b in minutes.blocks_of("condition")]
    assert conditions == ["1. The developer shall build a left-turn lane on Orchard Lane before occupancy.",
                          "2. Construction hours are limited to 7 a.m. to 6 p.m. on weekdays."]


def test_captions_are_segmented_and_grouped_under_the_agenda_items(tmp_path: Path) -> None:
    captions = land(tmp_path, AGENDA, CAPTIONS)[CAPTIONS]
    text = captions.text
    items = captions.blocks_of("agenda_item")
    segs = captions.blocks_of("segment")
    starts = {b.key: text[b.start : b.start + 40] for b in items}
    assert "3" in starts or "3.a" in starts
    assert "4.a" in starts and "5.a" in starts
    assert text.index("Item 4a is a public hearing") - 40 <= items[[b.key for b in items].index("4.a")].start
    # every spoken character is in exactly one segment; no [HH:MM:SS] line is in one
    covered = sorted((b.start, b.end) for b in segs)
    assert all(a[1] <= b[0] for a, b in zip(covered, covered[1:]))
    spoken = [i for i, c in enumerate(text) if not c.isspace()]
    stamps = {i for line_start in range(len(text)) if text.startswith("[00:", line_start)
              for i in range(line_start, text.index("\n", line_start))}
    inside = {i for s, e in covered for i in range(s, e)}
    assert {i for i in spoken if i not in stamps} <= inside and not (stamps & inside)
    # each segment lies inside one item
    bounds = [(b.start, b.end) for b in items]
    assert all(any(s <= g.start and g.end <= e for s, e in bounds) for g in segs)


def test_a_transcript_without_its_agenda_starts_items_at_the_chairs_announcements(tmp_path: Path) -> None:
    captions = land(tmp_path, CAPTIONS)[CAPTIONS]
    meeting = captions.payload["meeting"]
    assert meeting["aligned_record"] is None and meeting["announcements"] >= 2
    assert {b.meta["basis"] for b in captions.blocks_of("agenda_item")} >= {"announcement"}


def test_a_file_that_is_no_meeting_record_is_rejected_by_name(tmp_path: Path) -> None:
    day = tmp_path / "d"
    day.mkdir()
    (day / "notes.txt").write_text("Shopping list\nmilk\nbread\n")
    # numbered sections alone are no agenda
    (day / "ord-74.txt").write_text("ORDINANCE NO. 74-2004\nAN ORDINANCE AMENDING TREE CUTTING\n"
                                    "1. Purpose. Trees are a resource.\n2. Permits. A permit is required.\n"
                                    "3. Penalties. A fine of $500 applies.\n")
    res = load_civic_day(day)
    assert res.documents == []
    assert sorted(r.source_file for r in res.rejects) == ["notes.txt", "ord-74.txt"]
    assert all("land it in the documents dataset" in r.reason for r in res.rejects)


@pytest.mark.parametrize(("name", "text", "want"), [
    ("2026-06-11-city-council-meeting_agenda.pdf", "", "2026-06-11"),
    ("20191210-12-3-2019_Manhattan_City_Commission.txt", "", "2019-12-10"),
    ("minutes.pdf", "Rivergrove City Council Meeting Minutes\nAugust 13, 2018\n", "2018-08-13"),
    ("notes.txt", "no date here", None),
])
def test_meeting_date_from_the_name_then_the_text(name: str, text: str, want: str | None) -> None:
    got = meeting_date(name, text)
    assert (got.isoformat() if got else None) == want


def test_bodies() -> None:
    assert meeting_body("and we will call this meeting of the Huntsville City Council to order") == \
        "Huntsville City Council"
    assert bodies_agree("City Council", "Huntsville City Council") and bodies_agree(None, "X Board")
    assert not bodies_agree("Planning Commission", "Huntsville City Council")
    assert meeting_body("23. ADJOURNMENT\nAgenda Disclaimer\nCity Council agendas are provided") == "City Council"
