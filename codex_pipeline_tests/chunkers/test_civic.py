"""civic_intelligence chunk trees: golden cases, the merge rule, properties, Dagster + the seed's SQL."""

from __future__ import annotations

import datetime as dt
import json
import random
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codex_pipeline.chunkers.civic import CivicLimits, chunk_civic, merge_turns
from codex_pipeline.core.contract import MAX_CHUNK_TOKENS
from codex_pipeline.core.contract_check import validate_chunks
from codex_pipeline.core.documents import SourceDocument
from codex_pipeline.core.tokens import count_tokens
from codex_pipeline.datasets import steps as pipeline
from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.sources.civic import load_civic_day, render_record
from codex_pipeline.sources.council_transcript import parse_transcript
from codex_pipeline.warehouse.catalog import connect_catalog
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.chunkers.test_record_view import assert_old_raw_is_refused, assert_same_chunks_after_raw
from codex_pipeline_tests.conftest import CORPORA, FIXTURES, land, materialize_dataset, needs_corpus

REPO = Path(__file__).resolve().parents[2]
FIX = FIXTURES / "civic_intelligence"
SAMPLE = REPO / "codex_pipeline" / "sample_landing" / "civic_intelligence"
CORPUS = CORPORA / "council"
SPEC = get_dataset("civic_intelligence")
DAY = dt.date(2026, 11, 24)
RUN_AT = dt.datetime(2026, 11, 25, 6, 0, tzinfo=dt.UTC)

SEED_SQL = """-- Retrieve a chunk's parent, then re-score at parent scope
WITH hit AS (
SELECT chunk_id, doc_id, parent_chunk_id, chunk_text
FROM codex.civic_intelligence_chunks
WHERE chunk_id = :hit_chunk_id
)
SELECT parent.chunk_text
FROM hit
JOIN codex.civic_intelligence_chunks parent
ON parent.chunk_id = hit.parent_chunk_id;"""

SECTION_ID = re.compile(
    r"^item\.[A-Za-z0-9-]+(?:\.(?:turn\.\d+(?:\.part\.\d+)?|condition\.\d+|contingency\.[A-Za-z0-9_-]+))?$"
)


def load(path: Path) -> list[SourceDocument]:
    res = load_civic_day(path)
    assert res.rejects == [], res.rejects
    return res.documents


def rows(docs: list[SourceDocument]) -> pa.Table:
    out = pipeline.chunk(SPEC, DAY, docs, chunked_at=RUN_AT)
    assert out.rejects.num_rows == 0, out.rejects.to_pylist()
    return out.table


# ------------------------------------------------------------------ golden cases


def test_golden_record_tree() -> None:
    (doc, _) = sorted(load(FIX), key=lambda d: d.source_file)  # golden_record.jsonl, then the transcript
    assert doc.source_file == "golden_record.jsonl"
    table = rows([doc])
    got = [
        (r["seq_index"], r["chunk_id"], r["section_id"], r["chunk_type"], r["parent_chunk_id"], r["chunk_text"],
         json.loads(r["evidence_anchor"]), r["token_count"])
        for r in table.to_pylist()
    ]
    item4, item_b2 = "urn:aprs:chunk:3a9cbd52a0a9c45e", "urn:aprs:chunk:e8e1ed6fbc0b91e2"
    ben = (
        "Ben Cho (Engineer): The 2027 list has 212 sidewalk panels at 61 addresses, ranked by the height of the trip "
        "hazard and by pedestrian counts. Elm Street next to the school is first. We estimate $184,000 against a "
        "budget of $200,000, and the remaining $16,000 pays for curb ramps at Elm and 4th."
    )
    assert got == [
        (0, item4, "item.4", "agenda_item", None,
         "Item 4: Sidewalk repair program\nSummary: Council approved the 2027 sidewalk repair list.\nAction: Approved 3-0",
         {"page": None, "char_span": [141, 250]}, 29),
        # Ana's two turns are not adjacent (Ben speaks in between): no collage, three turns
        (1, "urn:aprs:chunk:6fbc1990fc3d43ad", "item.4.turn.1", "speaker_turn", item4,
         "Ana Ruiz (Chair): Item four, the sidewalk list.",
         {"page": None, "char_span": [263, 310], "start": "00:10:00.000", "end": "00:10:03.000"}, 12),
        (2, "urn:aprs:chunk:5f66d1e7d254da60", "item.4.turn.2", "speaker_turn", item4, ben,
         {"page": None, "char_span": [311, 604], "start": "00:10:04.000", "end": "00:10:40.000"}, 76),
        (3, "urn:aprs:chunk:e552049b0c4b02de", "item.4.turn.3", "speaker_turn", item4, "Ana Ruiz (Chair): Thank you, Ben.",
         {"page": None, "char_span": [605, 638], "start": "00:10:41.000", "end": "00:10:42.000"}, 10),
        (4, "urn:aprs:chunk:df23e92ea12b0b58", "item.4.condition.1", "condition", item4,
         "Condition 1: Repairs on Elm Street are completed before June 1.", {"page": None, "char_span": [651, 714]}, 16),
        (5, "urn:aprs:chunk:c98cb8cc485aee9b", "item.4.condition.2", "condition", item4,
         "Blocker 2 [budget-pending]: The 2027 budget is not yet adopted.", {"page": None, "char_span": [715, 778]}, 19),
        (6, "urn:aprs:chunk:22a1c8e0a8f7515c", "item.4.contingency.budget", "contingency", item4,
         "Contingency budget: Council adopts the 2027 budget. Depends on: nothing (start node).",
         {"page": None, "char_span": [794, 879]}, 21),
        (7, "urn:aprs:chunk:43dfe51745ee7627", "item.4.contingency.contract", "contingency", item4,
         "Contingency contract [open]: Council awards the repair contract. Depends on: budget.",
         {"page": None, "char_span": [880, 964]}, 18),
        (8, item_b2, "item.B2", "agenda_item", None, "Item B2: Adjournment\nSummary: The meeting adjourned at 7:45 p.m.",
         {"page": None, "char_span": [966, 1030]}, 23),
    ]
    metadata = [json.loads(m) if m else None for m in table.column("metadata").to_pylist()]
    assert metadata[1] == {"speaker": "Ana Ruiz", "turns": [1]}
    assert metadata[5] == {"kind": "blocker", "tag": "budget-pending"}
    assert metadata[7] == {"node": "contract", "depends_on": ["budget"]}
    assert validate_chunks(table, {doc.doc_id: doc.text}).passed


def test_golden_transcript_tree() -> None:
    (doc,) = [d for d in load(FIX) if d.source_file.endswith(".txt")]
    assert doc.doc_id == "urn:aprs:civic_intelligence:testville-2026-11-24-transcript"
    drafts = chunk_civic(doc)
    got = [(d.section_id, d.chunk_type.value, d.parent_section_id, d.text, d.spans, d.anchor_extra) for d in drafts]
    assert [g[:3] for g in got] == [
        ("item.0", "agenda_item", None),
        ("item.0.turn.1", "speaker_turn", "item.0"),
        ("item.0.turn.2", "speaker_turn", "item.0"),
        ("item.1", "agenda_item", None),
        ("item.1.turn.1", "speaker_turn", "item.1"),
        ("item.1.turn.2", "speaker_turn", "item.1"),
        ("item.1.turn.3", "speaker_turn", "item.1"),
        ("item.1.turn.4", "speaker_turn", "item.1"),
        ("item.1.turn.5", "speaker_turn", "item.1"),
        ("item.1.turn.6", "speaker_turn", "item.1"),
    ]
    summary = got[3]
    assert summary[3] == (
        'Agenda item 1 (inferred: the chair, Mayor Quinn, announced it): "The next item on the agenda is the library '
        'roof replacement." Speakers: Mayor Quinn (2 turns), Director Lee (2 turns), Councilmember Ruiz (2 turns). '
        "Time: 00:00:07.000–00:01:01.500, 6 turns. Discussion (its longest turns, in order): Mayor Quinn: \"The next "
        'item on the agenda is the library roof replacement." Director Lee: "The library roof is 31 years old and has '
        "leaked over the reading room three times this year. The low bid from Harbor Roofing is $412,000, which is "
        "within the $450,000 budget, and the work would close the library for two weeks in March while the crews "
        'replace the deck above the reading room." Councilmember Ruiz: "How long will the library be closed?" '
        'Director Lee: "Two weeks in March." Mayor Quinn: "Thank you." Councilmember Ruiz: "Thanks." [Summary built '
        "by Codex without an LLM from the chair's announcing turn(s), speaker labels, turn times and the item's "
        "longest turns.]"
    )
    quoted = [doc.text[s:e] for s, e in summary[4]]  # in the order the summary quotes them, each span once
    assert quoted[:6] == [
        "The next item on the agenda is the library roof replacement.",
        "Mayor Quinn", "Director Lee", "Councilmember Ruiz", "00:00:07.000", "00:01:01.500",
    ]
    said = [q for q in quoted[6:] if q not in ("Mayor Quinn", "Director Lee", "Councilmember Ruiz")]  # digest turns
    assert said == [doc.text[doc.text.index("The library roof is 31") : doc.text.index("above the reading room.") + 23],
                    "How long will the library be closed?", "Two weeks in March.", "Thank you.", "Thanks."]
    assert len(set(summary[4])) == len(summary[4])
    last_turn_end = doc.text.rindex("Thanks.") + len("Thanks.")
    assert summary[5] == {
        "start": "00:00:07.000", "end": "00:01:01.500",
        "composed": "item summary from the chair's announcing turn(s), speaker labels, turn times and the item's "
                    "longest turns",
        "char_span": [doc.text.index("Mayor Quinn:\nStart: 00:00:07"), last_turn_end],  # the item, last turn included
    }
    assert got[0][3].startswith('Opening of the meeting (inferred: the turns before the chair\'s first agenda '
                                'announcement), beginning: "I call this meeting of the Testville Town Council to order."')
    # no two adjacent turns share a speaker here, so nothing merges: the chair's "Thank you." stays its own
    # turn instead of being glued to the announcement across Lee's and Ruiz's turns
    assert got[4][3] == "The next item on the agenda is the library roof replacement."
    assert got[4][5] == {"start": "00:00:07.000", "end": "00:00:11.000"}
    assert got[6][3] == "How long will the library be closed?"
    assert got[7][3] == "Two weeks in March." and len(got[7][4]) == 1
    assert got[8][3] == "Thank you."
    for d in drafts[1:3] + drafts[4:]:
        assert "\n".join(doc.text[s:e] for s, e in d.spans) == d.text
    table = rows([doc])
    assert validate_chunks(table, {doc.doc_id: doc.text}).passed


# ------------------------------------------------------------------ the merge rule


@pytest.mark.parametrize(
    "speakers, sizes, expected",
    [
        # only adjacent turns merge: another speaker in between keeps A's turns apart (no collage)
        ("ABA", [10, 80, 10], [[0], [1], [2]]),
        # a stretch of one speaker's consecutive turns is one chunk
        ("AAAA", [10, 10, 10, 10], [[0, 1, 2, 3]]),
        ("AABBA", [10, 10, 10, 10, 10], [[0, 1], [2, 3], [4]]),
        # up to the most merged size (here 100, separators counted): then a new group starts
        ("AAAA", [40, 40, 40, 10], [[0, 1], [2, 3]]),
        # a group under `below` (50) takes the next adjacent turn even past `most`
        ("AA", [30, 90], [[0, 1]]),
        # a single turn over `most` stays whole
        ("AA", [120, 5], [[0], [1]]),
    ],
)
def test_merge_rule(speakers: str, sizes: list[int], expected: list[list[int]]) -> None:
    assert merge_turns(list(speakers), sizes, sizes, below=50, most=100) == expected


def test_merged_turns_are_one_contiguous_stretch_of_the_transcript() -> None:
    (doc,) = [d for d in load(FIX) if d.source_file.endswith(".txt")]
    turns = [b for b in doc.blocks if b.kind == "turn"]
    for d in chunk_civic(doc):
        if d.chunk_type.value != "speaker_turn" or len(d.spans) < 2:
            continue
        idx = [next(i for i, b in enumerate(turns) if b.end == e) for _, e in d.spans]
        assert idx == list(range(idx[0], idx[0] + len(idx)))  # consecutive turns, nobody in between
        assert {turns[i].key for i in idx} == {d.metadata["speaker"]}


def test_merge_never_crosses_the_cap() -> None:
    assert merge_turns(["A", "A"], [10, 1495], [10, 1495]) == [[0], [1]]
    assert merge_turns(["A", "A"], [10, 1480], [10, 1480]) == [[0, 1]]


def test_over_cap_turn_is_split_with_stable_part_ids() -> None:
    (doc,) = [d for d in load_civic_day(SAMPLE / "2026-11-24").documents if d.record_id.endswith("regular")]
    drafts = chunk_civic(doc)
    parts = [d for d in drafts if d.section_id.startswith("item.7.turn.2")]
    assert [p.section_id for p in parts] == ["item.7.turn.2.part.1", "item.7.turn.2.part.2", "item.7.turn.2.part.3"]
    consultant = next(t for t in doc.payload["agenda_items"][2]["turns"] if t["speaker"] == "Ingrid Bergstrom")
    assert count_tokens(consultant["text"]) > MAX_CHUNK_TOKENS
    for p in parts:
        assert p.parent_section_id == "item.7" and p.token_count <= MAX_CHUNK_TOKENS
        assert doc.text[p.spans[0][0] : p.spans[0][1]] == p.text
        assert p.anchor_extra == {"start": "01:02:37.000", "end": "01:24:05.000"}
    assert parts[0].text.startswith("Ingrid Bergstrom (Consultant, Harlow Water Advisors): Thank you, Mayor Marsh")
    joined = re.sub(r"\s+", " ", " ".join(p.text for p in parts))
    assert joined == re.sub(r"\s+", " ", "Ingrid Bergstrom (Consultant, Harlow Water Advisors): " + consultant["text"])


# ------------------------------------------------------------------ properties


def check_tree(docs: list[SourceDocument], table: pa.Table) -> None:
    """Every contract rule plus the civic tree's own invariants."""
    texts = {d.doc_id: d.text for d in docs}
    report = validate_chunks(table, texts)
    assert report.passed, report.failures
    by_doc: dict[str, list[dict]] = {}
    for r in table.to_pylist():
        by_doc.setdefault(r["doc_id"], []).append(r)
    assert set(by_doc) == set(texts)
    for doc in docs:
        chunks = by_doc[doc.doc_id]
        text = doc.text
        assert [c["seq_index"] for c in chunks] == list(range(len(chunks)))
        sections = [c["section_id"] for c in chunks]
        assert len(set(sections)) == len(sections)
        by_id = {c["chunk_id"]: c for c in chunks}
        covered = np.zeros(len(text), dtype=np.int32)
        for c in chunks:
            assert SECTION_ID.match(c["section_id"]), c["section_id"]
            assert 1 <= c["token_count"] <= MAX_CHUNK_TOKENS and c["token_count"] == count_tokens(c["chunk_text"])
            anchor = json.loads(c["evidence_anchor"])
            spans = anchor.get("spans") or [anchor["char_span"]]
            if c["chunk_type"] == "agenda_item":
                assert c["parent_chunk_id"] is None
                if "composed" in anchor:  # transcript summary: quotes, may repeat children's words
                    assert all(text[s:e] in c["chunk_text"] for s, e in spans)
                    continue
            else:
                parent = by_id[c["parent_chunk_id"]]
                assert parent["chunk_type"] == "agenda_item"
                assert c["section_id"].startswith(parent["section_id"] + ".")
            if len(spans) == 1:
                s, e = spans[0]
                assert text[s:e] == c["chunk_text"]
            else:
                assert c["chunk_type"] == "speaker_turn"
                assert "\n".join(text[s:e] for s, e in spans) == c["chunk_text"]
            for s, e in spans:
                covered[s:e] += 1
        assert covered.max(initial=0) <= 1, "structured chunks overlap"
        _assert_no_content_dropped(doc, covered)


def _assert_no_content_dropped(doc: SourceDocument, covered: np.ndarray) -> None:
    """Every non-space character of every turn, condition and contingency is in a chunk."""
    text = doc.text
    if doc.payload and "transcript" in doc.payload:
        spans = [(t.text_start, t.text_end) for t in parse_transcript(text).turns]
    else:
        spans = [(b.start, b.end) for b in render_record(doc.payload)[1]]
    for s, e in spans:
        missing = [i for i in range(s, e) if covered[i] == 0 and not text[i].isspace()]
        assert not missing, (doc.doc_id, text[s:e][:80])


_WORDS = ("council staff motion second budget street permit zoning parcel hearing resident vote approve deny "
          "table condition contract water sewer park library bridge grant match design study traffic bond "
          "ordinance resolution amend public comment item agenda").split()


_PARAGRAPH = ("The public works director explained that the water main under the street was installed in 1931, "
              "that it has broken four times in three years, and that the contractor's bid of $386,400 covers "
              "420 feet of ductile iron pipe, new service connections for eleven homes, a temporary patch for the "
              "winter and permanent asphalt restoration in April once the plants reopen, subject to the state "
              "revolving loan fund approving the city's application before the end of the fiscal year.")


@st.composite
def sentences(draw: st.DrawFn, max_words: int) -> str:
    n = draw(st.integers(1, max_words))
    rnd = random.Random(draw(st.integers(0, 2**32)))
    words = [rnd.choice(_WORDS) for _ in range(n)]
    out, sentence = [], []
    for k, w in enumerate(words):
        sentence.append(w)
        if len(sentence) >= 12 or k == len(words) - 1:
            out.append(" ".join(sentence).capitalize() + ".")
            sentence = []
    paragraphs = draw(st.integers(1, 3))
    size = max(1, len(out) // paragraphs)
    return "\n\n".join(" ".join(out[i : i + size]) for i in range(0, len(out), size))


@st.composite
def records(draw: st.DrawFn, record_id: str) -> dict:
    numbers = draw(st.lists(st.sampled_from(["1", "2", "3a", "C-4", "10", "B2"]), min_size=1, max_size=3, unique=True))
    items = []
    for n in numbers:
        item = {"number": n, "title": f"Item {n} title", "summary": draw(sentences(40))}
        turns = []
        for m in range(draw(st.integers(0, 7))):
            long = draw(st.integers(0, 12)) == 12  # now and then a turn over the cap
            said = "\n\n".join(_PARAGRAPH + " " + draw(sentences(10)) for _ in range(20)) if long else draw(sentences(90))
            turn = {"speaker": draw(st.sampled_from(["Ana", "Ben", "Cy"])), "text": said.strip()}
            if draw(st.booleans()):
                turn.update(start=f"00:{m:02d}:00.000", end=f"00:{m:02d}:30.000")
            turns.append(turn)
        if turns:
            item["turns"] = turns
        conditions = [
            {"kind": draw(st.sampled_from(["condition", "blocker"])), "text": draw(sentences(30))}
            for _ in range(draw(st.integers(0, 3)))
        ]
        if conditions:
            item["conditions"] = conditions
        nodes = []
        for k in range(draw(st.integers(0, 4))):
            deps = draw(st.lists(st.sampled_from([n["id"] for n in nodes]), unique=True)) if nodes else []
            nodes.append({"id": f"n{k}", "text": draw(sentences(20)), "depends_on": deps})
        if nodes:
            item["contingencies"] = nodes
        items.append(item)
    return {"record_id": record_id, "body": "Test Council", "meeting_date": "2026-11-24", "meeting_type": "regular",
            "agenda_items": items}


def _land_jsonl(path: Path, recs: list[dict]) -> list[SourceDocument]:
    path.mkdir(parents=True, exist_ok=True)
    for old in path.glob("*"):
        old.unlink()
    (path / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    return load(path)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow, HealthCheck.data_too_large])
@given(recs=st.tuples(records("r-1"), records("r-2"), records("r-3")), seed=st.integers(0, 10**6))
def test_properties_over_generated_records(tmp_path: Path, recs: tuple[dict, ...], seed: int) -> None:
    docs = _land_jsonl(tmp_path / "a", list(recs))
    table = rows(docs)
    check_tree(docs, table)
    # ids identical across runs and independent of record order (in the file and in the partition)
    shuffled = list(recs)
    random.Random(seed).shuffle(shuffled)
    docs2 = _land_jsonl(tmp_path / "b", shuffled)
    random.Random(seed + 1).shuffle(docs2)
    table2 = rows(docs2)
    key = ["doc_id", "section_id", "chunk_id", "parent_chunk_id", "chunk_text", "evidence_anchor", "seq_index"]
    assert _keyed(table, key) == _keyed(table2, key)
    assert rows(docs).select(key).to_pylist() == table.select(key).to_pylist()


def _keyed(table: pa.Table, key: list[str]) -> list[tuple]:
    return sorted(tuple(r[k] for k in key) for r in table.to_pylist())


@st.composite
def transcripts(draw: st.DrawFn) -> str:
    speakers = ["Mayor Vale", "City Clerk", "Councilmember Ito", "Resident"]
    turns = [("Mayor Vale", "I call this meeting to order.")]
    for _ in range(draw(st.integers(0, 25))):
        who = draw(st.sampled_from(speakers))
        kind = draw(st.integers(0, 12))
        if kind == 12:  # over the cap, on one line as the diarizer writes it
            said = " ".join(_PARAGRAPH for _ in range(18))
        elif kind == 11:
            said = "Okay, the next item on the agenda is " + draw(sentences(12))
        elif kind == 10:
            said = ""  # an empty Text: line is skipped
        else:
            said = draw(sentences(60)).replace("\n\n", " ")
        turns.append((who, said))
    out = ["Transcription and Diarization for a generated meeting.mp4", "=" * 50, ""]
    for k, (who, said) in enumerate(turns):
        out += [f"{who}:", f"Start: 00:{k // 60:02d}:{k % 60:02d}.000", f"End: 00:{k // 60:02d}:{k % 60:02d}.900",
                "Duration: 0.900 seconds", f"Text: {said}".rstrip(), "-" * 50]
    return "\n".join(out) + "\n"


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow, HealthCheck.data_too_large])
@given(files=st.lists(transcripts(), min_size=1, max_size=3))
def test_properties_over_generated_transcripts(tmp_path: Path, files: list[str]) -> None:
    day = tmp_path / "day"
    day.mkdir(exist_ok=True)
    for old in day.glob("*"):
        old.unlink()
    for k, text in enumerate(files):
        (day / f"meeting-{k}.txt").write_text(text)
    docs = load(day)
    table = rows(docs)
    check_tree(docs, table)
    assert all({"start", "end"} <= set(json.loads(a)) for a in table.column("evidence_anchor").to_pylist())
    assert rows(list(reversed(docs))).sort_by("chunk_id").select(["chunk_id", "chunk_text"]) == \
        table.sort_by("chunk_id").select(["chunk_id", "chunk_text"])


def test_properties_over_the_sample_landing_days() -> None:
    for day in sorted(SAMPLE.iterdir()):
        docs = load_civic_day(day).documents
        check_tree(docs, rows(docs))
        assert_same_chunks_after_raw("civic_intelligence", docs)
        assert_old_raw_is_refused("civic_intelligence", docs)


def test_limits_are_the_limits_given() -> None:
    docs = load(FIX)
    record, transcript = sorted(docs, key=lambda d: d.source_file)
    assert [d.section_id for d in chunk_civic(record, CivicLimits(merge_below_tokens=0))] == [
        "item.4", "item.4.turn.1", "item.4.turn.2", "item.4.turn.3", "item.4.condition.1", "item.4.condition.2",
        "item.4.contingency.budget", "item.4.contingency.contract", "item.B2",
    ]  # nothing is under 0 tokens: no turn is merged
    assert not [d for d in chunk_civic(record, CivicLimits(merge_separator=" / ")) if d.metadata.get("merged")]
    item1 = next(d for d in chunk_civic(transcript, CivicLimits(announcement_chars=20, summary_speakers=1))
                 if d.section_id == "item.1")
    assert item1.text.startswith('Agenda item 1 (inferred: the chair, Mayor Quinn, announced it): "The next item on…" '
                                 "Speakers: Mayor Quinn (2 turns), and 2 more.")


# ------------------------------------------------------------------ Dagster + the seed's parent-child SQL


def test_dagster_materialization_and_the_seed_parent_child_sql(warehouse: Warehouse) -> None:
    for day in ("2026-11-24", "2026-11-25"):
        land(warehouse, "civic_intelligence", day, SAMPLE / day)
        result = materialize_dataset(warehouse, "civic_intelligence", day)
        assert result.success
        evaluations = [e.event_specific_data for e in result.all_events
                       if e.event_type_value == "ASSET_CHECK_EVALUATION"]
        assert evaluations and all(e.passed for e in evaluations)

    chunks = warehouse.read("civic_intelligence", "chunks", DAY).to_pylist()
    by_section = {(c["doc_id"], c["section_id"]): c for c in chunks}
    hit = by_section[("urn:aprs:civic_intelligence:riverton-cc-2026-11-24-regular", "item.5.turn.3")]
    assert hit["chunk_type"] == "speaker_turn"
    item5 = by_section[("urn:aprs:civic_intelligence:riverton-cc-2026-11-24-regular", "item.5")]
    chunks_25 = warehouse.read("civic_intelligence", "chunks", dt.date(2026, 11, 25)).to_pylist()
    transcript_hit = next(c for c in chunks_25 if c["section_id"] == "item.1.turn.2" and c["doc_id"].endswith("Meeting"))

    sql = SEED_SQL.replace(":hit_chunk_id", "?")
    literal = SEED_SQL.replace(":hit_chunk_id", f"'{hit['chunk_id']}'")
    con = connect_catalog(warehouse)
    try:
        assert con.execute(sql, [hit["chunk_id"]]).fetchall() == [(item5["chunk_text"],)]
        assert con.execute(literal).fetchall() == [(item5["chunk_text"],)]
        (summary,) = con.execute(sql, [transcript_hit["chunk_id"]]).fetchall()
        rejects = con.execute(
            "SELECT source_file, record_ref, reason FROM codex.civic_intelligence_rejects WHERE stage = 'ingest'"
        ).fetchall()
        counts = dict(con.execute(
            "SELECT chunk_type, count(*) FROM codex.civic_intelligence_chunks GROUP BY chunk_type").fetchall())
    finally:
        con.close()
    assert item5["chunk_text"].startswith("Item 5: Kimball Avenue protected bike lanes")
    assert summary[0].startswith('Agenda item 1 (inferred: the chair, Chair Nadia Voss, announced it): "The next item')
    ((source_file, ref, reason),) = rejects
    assert (source_file, ref) == ("riverton-meetings.jsonl", "line 3, record_id='riverton-parks-2026-11-24'")
    assert "field 'meeting_date' fails 'required date'" in reason
    assert set(counts) == {"agenda_item", "speaker_turn", "condition", "contingency"}


# ------------------------------------------------------------------ the real transcripts


@needs_corpus(CORPUS)
def test_real_transcripts_hold_every_property() -> None:
    docs = load(CORPUS)
    table = rows(docs)
    check_tree(docs, table)
    assert_same_chunks_after_raw("civic_intelligence", docs)
    anchors = [json.loads(a) for a in table.column("evidence_anchor").to_pylist()]
    assert all({"start", "end"} <= set(a) for a in anchors)
    turn_rows = [r for r in table.to_pylist() if r["chunk_type"] == "speaker_turn"]
    turns_in_chunks = sum(len(json.loads(r["metadata"])["turns"]) for r in turn_rows)
    assert turns_in_chunks == sum(len(parse_transcript(d.text).turns) for d in docs)
