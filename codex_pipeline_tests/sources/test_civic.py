"""civic_intelligence sources: record schema and rejects, canonical text, transcript parsing and items."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from codex_pipeline.core.documents import blocks_from_json, blocks_to_json
from codex_pipeline.sources.civic import (
    CONDITION_SCHEMA,
    CONTINGENCY_SCHEMA,
    ITEM_SCHEMA,
    RECORD_SCHEMA,
    TURN_SCHEMA,
    load_civic_day,
    render_record,
)
from codex_pipeline.sources.council_transcript import infer_agenda_items, parse_transcript, transcript_blocks
from codex_pipeline_tests.conftest import CORPORA, FIXTURES, needs_corpus

HERE = Path(__file__).resolve()
REPO = HERE.parents[2]
FIX = FIXTURES / "civic_intelligence"
SAMPLE = REPO / "codex_pipeline" / "sample_landing" / "civic_intelligence"
CORPUS = CORPORA / "council"
DOC = REPO / "docs" / "datasets" / "civic_intelligence.md"


def golden_record() -> dict:
    return json.loads((FIX / "golden_record.jsonl").read_text())


def write_day(tmp_path: Path, records: list, name: str = "meetings.jsonl") -> Path:
    day = tmp_path / "2026-11-24"
    day.mkdir(exist_ok=True)
    (day / name).write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return day


# ------------------------------------------------------------------ records


def test_valid_record_lands_with_doc_id_and_payload(tmp_path: Path) -> None:
    res = load_civic_day(write_day(tmp_path, [golden_record()]))
    assert res.rejects == []
    (doc,) = res.documents
    assert doc.doc_id == "urn:aprs:civic_intelligence:testville-2026-11-24"
    assert doc.record_id == "testville-2026-11-24"
    assert doc.payload == golden_record()
    assert doc.title == "Testville Town Council regular meeting, 2026-11-24"
    assert doc.text == render_record(doc.payload)[0]


def test_invalid_record_is_rejected_with_every_reason_and_valid_ones_still_land(tmp_path: Path) -> None:
    good = golden_record()
    bad = golden_record()
    bad["record_id"] = "broken-1"
    bad["meeting_date"] = "11/24/2026"
    bad["meeting_type"] = "townhall"
    bad["surprise"] = 1
    item = bad["agenda_items"][0]
    del item["summary"]
    item["turns"][1]["start"] = "ten past"
    item["turns"][2]["speaker"] = ""
    item["conditions"][1]["kind"] = "wish"
    item["contingencies"][1]["depends_on"] = ["nowhere"]
    res = load_civic_day(write_day(tmp_path, [bad, "{not json", [1, 2], good]))
    assert [d.record_id for d in res.documents] == ["testville-2026-11-24"]
    by_ref = {r.record_ref: r for r in res.rejects}
    assert set(by_ref) == {"line 1, record_id='broken-1'", "line 2", "line 3"}
    reason = by_ref["line 1, record_id='broken-1'"].reason
    for expected in (
        "field 'meeting_date' fails 'required date' (got '11/24/2026')",
        "field 'meeting_type' fails 'one of regular|special|work_session|public_hearing|committee'",
        "unknown field(s) 'surprise'",
        "agenda_items[0], number='4': field 'summary' fails 'required string' (got null)",
        "agenda_items[0], number='4': field 'contingencies' fails 'contingency DAG: unique ids, known dependencies, no cycle'",
        "agenda_items[0].turns[1], speaker='Ben Cho': field 'start' fails 'clock time HH:MM:SS[.fff]'",
        "agenda_items[0].turns[2], speaker='': field 'speaker' fails 'required string'",
        "agenda_items[0].conditions[1], text='The 2027 budget is not yet adopted.': field 'kind' fails 'one of condition|blocker'",
    ):
        assert expected in reason, (expected, reason)
    assert by_ref["line 2"].reason.startswith("invalid JSON")
    assert by_ref["line 3"].reason == "expected a JSON object, got list"


@pytest.mark.parametrize(
    "mutate, fragment",
    [
        (lambda r: r["agenda_items"][0]["contingencies"].append(
            {"id": "budget", "text": "dup", "depends_on": ["contract"]}), "contingency DAG"),
        (lambda r: r["agenda_items"][0]["contingencies"][0].update(depends_on=["contract"]), "contingency DAG"),  # cycle
        (lambda r: r["agenda_items"][0]["contingencies"][0].update(depends_on=["budget"]), "contingency DAG"),  # self
        (lambda r: r["agenda_items"][1].update(number="4"), "numbers unique"),
        (lambda r: r.update(agenda_items=[]), "at least one item"),
        (lambda r: r["agenda_items"][0].update(number="4.1"), "agenda number"),
        (lambda r: r.update(record_id="has space"), "id characters"),
        (lambda r: r["agenda_items"][0]["turns"][0].update(text="   "), "non-blank"),
        (lambda r: r["agenda_items"][0].update(title="two\nlines"), "single line"),
        (lambda r: r["agenda_items"][0]["conditions"][0].update(tag="Not A Tag"), "tag [a-z0-9_-]"),
        (lambda r: r["agenda_items"][0]["turns"].append("just text"), "list[object]"),
        (lambda r: r.update(source_url="ftp://x"), "http(s) URL"),
    ],
)
def test_schema_rules(tmp_path: Path, mutate, fragment: str) -> None:
    rec = golden_record()
    mutate(rec)
    res = load_civic_day(write_day(tmp_path, [rec]))
    assert res.documents == []
    (rej,) = res.rejects
    assert fragment in rej.reason, rej.reason


def test_duplicate_record_ids_across_files_and_transcripts_are_rejected(tmp_path: Path) -> None:
    day = write_day(tmp_path, [golden_record()], "a.jsonl")
    write_day(tmp_path, [golden_record()], "b.jsonl")
    transcript = (FIX / "testville-2026-11-24-transcript.txt").read_text()
    (day / "testville-2026-11-24.txt").write_text(transcript)  # same id as the record
    (day / "notes.pdf").write_bytes(b"%PDF")
    res = load_civic_day(day)
    assert [d.source_file for d in res.documents] == ["a.jsonl"]
    reasons = sorted(r.reason for r in res.rejects)
    assert reasons[0].startswith("duplicate record_id 'testville-2026-11-24'")
    assert reasons[1].startswith("duplicate record_id 'testville-2026-11-24': a record or transcript")
    assert reasons[2].startswith("not an agenda, minutes or transcript (0 numbered agenda items, 0 motions")


def test_canonical_text_blocks_point_at_real_text() -> None:
    rec = golden_record()
    text, blocks = render_record(rec)
    assert [(b.kind, b.key) for b in blocks] == [
        ("agenda_item", "4"), ("turn", "Ana Ruiz"), ("turn", "Ben Cho"), ("turn", "Ana Ruiz"),
        ("condition", "1"), ("condition", "2"), ("contingency", "budget"), ("contingency", "contract"),
        ("agenda_item", "B2"),
    ]
    assert [b.start for b in blocks] == sorted(b.start for b in blocks), "blocks in text order"
    item4, item_b2 = blocks[0], blocks[-1]
    assert text[item4.start:item4.end] == (
        "Item 4: Sidewalk repair program\nSummary: Council approved the 2027 sidewalk repair list.\nAction: Approved 3-0"
    )
    assert item4.meta == {"title": "Sidewalk repair program"}
    for t, raw in zip(blocks[1:4], rec["agenda_items"][0]["turns"]):
        assert text[t.start + t.meta["text"]:t.end] == raw["text"]
        assert text[t.start:t.end] == f"{raw['speaker']} ({raw['role']}): {raw['text']}"
        assert (t.meta.get("start"), t.meta.get("end")) == (raw.get("start"), raw.get("end"))
    assert [(text[b.start:b.end], b.meta) for b in blocks[4:6]] == [
        ("Condition 1: Repairs on Elm Street are completed before June 1.", {"kind": "condition"}),
        ("Blocker 2 [budget-pending]: The 2027 budget is not yet adopted.", {"kind": "blocker", "tag": "budget-pending"}),
    ]
    assert [(b.key, text[b.start:b.end], b.meta) for b in blocks[6:8]] == [
        ("budget", "Contingency budget: Council adopts the 2027 budget. Depends on: nothing (start node).",
         {"depends_on": []}),
        ("contract", "Contingency contract [open]: Council awards the repair contract. Depends on: budget.",
         {"depends_on": ["budget"]}),
    ]
    assert text.endswith("Item B2: Adjournment\nSummary: The meeting adjourned at 7:45 p.m.\n")
    assert text[item_b2.start:item_b2.end] == "Item B2: Adjournment\nSummary: The meeting adjourned at 7:45 p.m."


def test_record_documents_carry_their_blocks_through_raw(tmp_path: Path) -> None:
    (doc,) = load_civic_day(write_day(tmp_path, [golden_record()])).documents
    assert doc.blocks == render_record(doc.payload)[1]
    assert blocks_from_json(blocks_to_json(doc.blocks)) == doc.blocks  # JSON values only: raw keeps them exactly


def test_rendering_strips_values_and_is_deterministic() -> None:
    rec = golden_record()
    padded = copy.deepcopy(rec)
    padded["agenda_items"][0]["summary"] = "  Council approved the 2027 sidewalk repair list.\n"
    assert render_record(padded) == render_record(rec)


def test_sample_landing_days() -> None:
    days = {p.name: load_civic_day(p) for p in sorted(SAMPLE.iterdir())}
    assert sorted(days) == ["2026-11-24", "2026-11-25", "2026-11-26"]
    assert [d.record_id for d in days["2026-11-24"].documents] == [
        "riverton-cc-2026-11-24-regular",
        "riverton-pc-2026-11-24-rz-26-014",
    ]
    (reject,) = days["2026-11-24"].rejects
    assert reject.record_ref == "line 3, record_id='riverton-parks-2026-11-24'"
    assert "meeting_date" in reject.reason and "summary" in reject.reason and "contingency DAG" in reject.reason
    assert {d.record_id for d in days["2026-11-25"].documents} == {
        "riverton-cc-2026-11-25-work-session",
        "20261125-Riverton_Parks_Board_Meeting",
    }
    assert days["2026-11-25"].rejects == [] and days["2026-11-26"].rejects == []


def test_docs_field_tables_are_generated_from_the_schemas() -> None:
    doc = DOC.read_text()
    for schema in (RECORD_SCHEMA, ITEM_SCHEMA, TURN_SCHEMA, CONDITION_SCHEMA, CONTINGENCY_SCHEMA):
        assert schema.markdown_table() in doc, schema.dataset


# ------------------------------------------------------------------ transcripts


def test_parse_transcript_offsets_and_times() -> None:
    text = (FIX / "testville-2026-11-24-transcript.txt").read_text()
    parsed = parse_transcript(text)
    assert parsed.title == "Transcription and Diarization for Testville Town Council 2026-11-24.mp4"
    assert text[slice(*parsed.title_span)] == parsed.title
    assert parsed.malformed == [] and len(parsed.turns) == 8
    first = parsed.turns[0]
    assert (first.speaker, first.start, first.end) == ("Mayor Quinn", "00:00:00.000", "00:00:04.000")
    assert text[first.text_start : first.text_end] == "I call this meeting of the Testville Town Council to order."
    for t in parsed.turns:
        assert text[t.speaker_start : t.speaker_start + len(t.speaker)] == t.speaker
        assert text[t.start_pos : t.start_pos + len(t.start)] == t.start
        assert text[t.end_pos : t.end_pos + len(t.end)] == t.end
    assert [t.ordinal for t in parsed.turns] == list(range(1, 9))


def test_transcript_blocks_hold_the_parse_and_the_inferred_items() -> None:
    text = (FIX / "testville-2026-11-24-transcript.txt").read_text()
    parsed = parse_transcript(text)
    inf = infer_agenda_items(text, parsed.turns)
    blocks = transcript_blocks(parsed, inf)
    assert [(b.kind, b.key) for b in blocks] == [
        ("agenda_item", "0"), ("turn", "Mayor Quinn"), ("turn", "City Clerk"),
        ("agenda_item", "1"), *[("turn", t.speaker) for t in parsed.turns[2:]],
    ]
    assert [b.start for b in blocks] == sorted(b.start for b in blocks), "blocks in text order"
    turns = [b for b in blocks if b.kind == "turn"]
    for b, t in zip(turns, parsed.turns, strict=True):
        assert (b.start, b.end) == (t.speaker_start, t.text_end)
        assert b.start + b.meta["text"] == t.text_start
        s0, e0, s1, e1 = (b.start + x for x in b.meta["times"])
        assert (text[s0:e0], text[s1:e1]) == (t.start, t.end) and (s0, s1) == (t.start_pos, t.end_pos)
    item1 = blocks[3]
    assert item1.meta == {"turns": [2, 8], "announcements": [2], "patterns": ["ordinal item … is"],
                          "chair": "Mayor Quinn"}
    assert (item1.start, item1.end) == (turns[2].start, turns[-1].end)
    (doc,) = [d for d in load_civic_day(FIX).documents if d.source_file.endswith(".txt")]
    assert doc.blocks == blocks
    assert doc.payload["transcript"] == {"title": parsed.title, "turns": 8, "malformed_blocks": 0,
                                         "chair": "Mayor Quinn", "chair_basis": "call to order"}
    assert blocks_from_json(blocks_to_json(blocks)) == blocks


def test_malformed_block_is_reported_and_the_rest_lands(tmp_path: Path) -> None:
    text = (FIX / "testville-2026-11-24-transcript.txt").read_text()
    broken = text.replace("Duration: 3.000 seconds\nText: All five", "Text: All five", 1)
    day = tmp_path / "2026-11-24"
    day.mkdir()
    (day / "broken-meeting.txt").write_text(broken)
    (day / "bad name.txt").write_text(text)
    (day / "empty-meeting.txt").write_text("Just some notes\nwith no speaker blocks\n")
    res = load_civic_day(day)
    (doc,) = res.documents
    assert doc.record_id == "broken-meeting" and doc.payload["transcript"]["turns"] == 7
    assert len(doc.blocks_of("turn")) == 7  # the malformed block is not a turn
    reasons = {(r.source_file, r.record_ref): r.reason for r in res.rejects}
    line = broken[: broken.index("City Clerk:")].count("\n") + 1
    assert reasons[("broken-meeting.txt", f"line {line}")].startswith("malformed transcript block skipped")
    assert "rename it" in reasons[("bad name.txt", None)]
    assert reasons[("empty-meeting.txt", None)].startswith("not an agenda, minutes or transcript")


def _transcript(turns: list[tuple[str, str]]) -> str:
    out = ["Title", "=" * 10]
    for k, (speaker, said) in enumerate(turns):
        out += [f"{speaker}:", f"Start: 00:00:{k:02d}.000", f"End: 00:00:{k + 1:02d}.000", "Duration: 1.000 seconds",
                f"Text: {said}", "-" * 10]
    return "\n".join(out) + "\n"


def test_no_announcement_means_one_item() -> None:
    text = _transcript([("Mayor A", "I call the meeting to order."), ("B", "Hello."), ("Mayor A", "Goodbye.")])
    inf = infer_agenda_items(text, parse_transcript(text).turns)
    assert inf.chair == "Mayor A" and inf.chair_basis == "call to order"
    assert [(i.number, i.first, i.last, i.announcements) for i in inf.items] == [(1, 0, 3, ())]


def test_announcements_split_items_only_for_the_chair_and_close_ones_join() -> None:
    text = _transcript([
        ("Chair", "Welcome, I call us to order."),
        ("Clerk", "All present."),
        ("Member", "The next item on the agenda is mine, says a member."),  # not the chair: ignored
        ("Chair", "We will move on to the general agenda."),
        ("Clerk", "Noted."),
        ("Chair", "So the first item on the general agenda is the budget."),  # 2 turns later: joins
        ("Member", "Question."),
        ("Member", "Another."),
        ("Chair", "Last item on the agenda tonight is adjournment."),
    ])
    inf = infer_agenda_items(text, parse_transcript(text).turns)
    assert inf.fired == 3 and inf.joined == 1
    assert [(i.number, i.first, i.last, i.announcements, i.patterns) for i in inf.items] == [
        (0, 0, 3, (), ()),
        (1, 3, 8, (3, 5), ("move/go on to", "ordinal item … is")),
        (2, 8, 9, (8,), ("ordinal item … is",)),
    ]


def test_more_transition_phrases_start_items_and_motions_do_not() -> None:
    text = _transcript([
        ("Mayor A", "I call the meeting to order."),
        ("Clerk", "All present."),
        ("Mayor A", "That brings us to the public works contract."),
        ("Staff", "The contract is for road salt."),
        ("Member", "I move to approve the contract."),  # a motion, not a transition
        ("Member", "Second."),
        ("Mayor A", "Next we have the library hours."),
        ("Staff", "Hours change in March."),
        ("Member", "Fine."),
        ("Member", "Agreed."),
        ("Mayor A", "Item number 7 is the water rate study."),
        ("Staff", "Rates rise two percent."),
        ("Member", "Noted."),
        ("Member", "Thanks."),
        ("Mayor A", "I will now open the public hearing on the rezoning."),
    ])
    inf = infer_agenda_items(text, parse_transcript(text).turns)
    assert [(i.first, i.patterns) for i in inf.items] == [
        (0, ()), (2, ("brings us to",)), (6, ("next we have / next up",)), (10, ("item number … is",)),
        (14, ("open the public hearing",)),
    ]


def test_a_chair_with_two_diarization_labels_announces_under_both() -> None:
    text = _transcript([
        ("Commissioner Hale", "I call this meeting to order."),
        ("Clerk", "All present."),
        ("Member", "Hello."),
        ("Mayor Hale", "The next item on the agenda is the budget."),  # the chair, labelled differently
        ("Staff", "The budget is balanced."),
    ])
    inf = infer_agenda_items(text, parse_transcript(text).turns)
    assert inf.chair == "Commissioner Hale"
    assert [(i.number, i.first, i.announcements) for i in inf.items] == [(0, 0, ()), (1, 3, (3,))]


def test_a_vote_ends_an_item_when_no_announcement_follows() -> None:
    talk = [("Staff", f"Point {k} about the parking garage.") for k in range(5)]
    text = _transcript([
        ("Mayor A", "I call the meeting to order."),
        ("Mayor A", "The first item on the agenda is the garage."),
        *talk,
        ("Clerk", "Motion carries."),
        ("Clerk", "Four to zero."),  # the tally belongs to the vote
        ("Mayor A", "Commissioners, any comments on your recent meetings?"),
        *talk,
        ("Clerk", "Motion carries."),
        ("Mayor A", "Okay, moving on to the consent agenda."),  # an announcement right after a vote starts the item
        *talk,
        ("Clerk", "Motion carries."),
        ("Mayor A", "We are adjourned."),  # fewer than MIN_ITEM_TURNS turns left: stays with the last item
    ])
    turns = parse_transcript(text).turns
    inf = infer_agenda_items(text, turns)
    assert [(i.first, i.last, i.announcements, i.patterns) for i in inf.items] == [
        (0, 1, (), ()),
        (1, 9, (1,), ("ordinal item … is",)),
        (9, 16, (), ("after a vote",)),
        (16, 24, (16,), ("move/go on to",)),
    ]
    assert text[turns[9].text_start : turns[9].text_end].startswith("Commissioners, any comments")


# ------------------------------------------------------------------ the real corpus


@needs_corpus(CORPUS)
def test_real_transcripts_parse_cleanly_and_items_are_inferred() -> None:
    res = load_civic_day(CORPUS)
    assert res.rejects == [] and len(res.documents) == 4
    fired = {}
    for doc in res.documents:
        parsed = parse_transcript(doc.text)
        assert parsed.malformed == [] and parsed.turns
        blocks = doc.text.count("\nStart: ")
        assert len(parsed.turns) + parsed.empty_turns == blocks
        inf = infer_agenda_items(doc.text, parsed.turns)
        assert inf.chair_basis == "call to order"
        fired[doc.record_id[:17]] = (inf.fired, len(inf.items))
        items = inf.items
        assert items[0].first == 0 and items[-1].last == len(parsed.turns)
        assert all(a.last == b.first for a, b in zip(items, items[1:]))
        assert doc.blocks == transcript_blocks(parsed, inf)
    # (announcements fired, items): one more item per meeting for the closing stretch after the last vote,
    # and in 2023-12-05 "Mayor Hassel" (the chair's other diarization label) announces the public hearing too
    assert fired == {
        "20220722-07-19-22": (3, 5),
        "20231109-11-07-23": (2, 4),
        "20231207-12-05-23": (4, 5),
        "20240222-02-20-24": (8, 8),
    }
