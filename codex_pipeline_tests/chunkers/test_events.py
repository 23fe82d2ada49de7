"""events_timeline chunks: one event chunk, or the header parent with 800/50-token description windows."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codex_pipeline.chunkers.events import EVENT_WINDOW_OVERLAP, EVENT_WINDOW_TOKENS, EventLimits, chunk_event
from codex_pipeline.core.documents import SourceDocument
from codex_pipeline.core.tokens import count_tokens
from codex_pipeline.sources.events import DATASET, load_events_day, render_event
from codex_pipeline.sources.records import RawRecord
from codex_pipeline.sources.structured import build_documents
from codex_pipeline_tests.chunkers.test_record_view import (
    SAMPLE,
    assert_chunk_properties,
    assert_old_raw_is_refused,
    assert_order_independent,
    assert_same_chunks_after_raw,
    chunk_docs,
)
from codex_pipeline_tests.conftest import FIXTURES


def event_doc(rec: dict) -> SourceDocument:
    """The reader's document for an (unvalidated) record: canonical text, payload and blocks."""
    (doc,) = build_documents(DATASET, [(rec["event_id"], RawRecord("t.jsonl", "line 1", rec))], render_event,
                             lambda e: e["title"]).documents
    return doc


def is_window(row: dict) -> bool:
    return ".part." in row["section_id"] and ".header.part." not in row["section_id"]


SMALL = {
    "event_id": "EVT-T-1",
    "event_type": "road_closure",
    "title": "Alder Street bridge closed",
    "occurred_at": "2026-11-26T20:00:00-08:00",
    "ended_at": "2026-12-01T05:00:00-08:00",
    "severity": "low",
    "location_name": "Alder Street bridge",
    "latitude": 47.2391,
    "longitude": -122.4612,
    "source": "Public Works",
    "source_ref": "TN-1",
    "tags": ["detour"],
    "description": "Closed for joint work.\n\nDetour via Pine Street.  \n",
}
SMALL_TEXT = (
    "Event EVT-T-1: Alder Street bridge closed\n"
    "Type: road_closure\n"
    "Occurred: 2026-11-26T20:00:00-08:00 to 2026-12-01T05:00:00-08:00 (4 d 9 h)\n"
    "Severity: low\n"
    "Location: Alder Street bridge (47.2391, -122.4612)\n"
    "Source: Public Works (TN-1)\n"
    "Tags: detour\n"
    "\n"
    "Closed for joint work.\n\nDetour via Pine Street."
)


def long_description(sentences: int) -> str:
    paras = []
    for p in range(sentences // 6 + 1):
        paras.append(" ".join(
            f"At {p:02d}:{i * 7 % 60:02d} UTC the radar track slowed to {i % 9 + 0.5} knots on course {i * 37 % 360:03d} degrees."
            for i in range(p * 6, min(sentences, p * 6 + 6))))
    return "\n\n".join(x for x in paras if x)


def test_golden_short_event_is_one_chunk() -> None:
    doc = event_doc(SMALL)
    assert doc.text == SMALL_TEXT
    table = chunk_docs("events_timeline", [doc])
    rows = table.to_pylist()
    assert [(r["section_id"], r["chunk_type"], r["parent_chunk_id"], r["chunk_text"]) for r in rows] == [
        ("EVT-T-1", "event", None, SMALL_TEXT)
    ]
    assert rows[0]["doc_id"] == "urn:aprs:events_timeline:EVT-T-1"
    assert rows[0]["metadata"] == '{"event_type": "road_closure", "occurred_at": "2026-11-26T20:00:00-08:00"}'
    assert_chunk_properties(table, [doc])


def test_golden_long_event_header_parent_and_windows() -> None:
    rec = dict(SMALL, event_id="EVT-T-2", description=long_description(120))
    doc = event_doc(rec)
    desc_start = doc.text.index("At 00:00 UTC")
    assert count_tokens(doc.text[desc_start:]) > 2 * EVENT_WINDOW_TOKENS
    drafts = chunk_event(doc)
    ids = [d.section_id for d in drafts]
    assert ids == ["EVT-T-2"] + [f"EVT-T-2.part.{k}" for k in range(1, len(ids))]
    assert len(ids) >= 4
    assert [d.parent_section_id for d in drafts] == [None] + ["EVT-T-2"] * (len(ids) - 1)
    assert drafts[0].text == doc.text[: desc_start - 2]  # the header, without the blank line
    windows = drafts[1:]
    assert windows[0].spans[0][0] == desc_start and windows[-1].spans[0][1] == len(doc.text)
    for a, b in zip(windows, windows[1:]):
        (s1, e1), (s2, e2) = a.spans[0], b.spans[0]
        assert a.token_count == EVENT_WINDOW_TOKENS or a.token_count >= EVENT_WINDOW_TOKENS - 5
        assert s1 < s2 < e1 < e2  # consecutive windows overlap
        assert abs(count_tokens(doc.text[s2:e1]) - EVENT_WINDOW_OVERLAP) <= 5
    assert [d.metadata["part"] for d in windows] == list(range(1, len(windows) + 1))
    assert_chunk_properties(chunk_docs("events_timeline", [doc]), [doc], may_overlap=is_window)


def test_event_without_description_is_its_header() -> None:
    rec = {k: v for k, v in SMALL.items() if k != "description"}
    (d,) = chunk_event(event_doc(rec))
    assert d.section_id == "EVT-T-1" and d.text == SMALL_TEXT.split("\n\n")[0]


def test_short_description_but_oversized_event_still_gets_header_parent() -> None:
    rec = dict(SMALL, event_id="EVT-T-3", entities=[f"vessel:MMSI 2571234{i:02d} ({'NORDIC CRANE ' * 12}{i})" for i in range(60)],
               description="Short description of a large convoy.")
    doc = event_doc(rec)
    drafts = chunk_event(doc)
    assert drafts[0].section_id == "EVT-T-3"
    assert drafts[-1].section_id == "EVT-T-3.part.1" and drafts[-1].text == "Short description of a large convoy."
    middle = [d.section_id for d in drafts[1:-1]]
    assert middle == [f"EVT-T-3.header.part.{k}" for k in range(2, len(middle) + 2)]
    assert all(d.parent_section_id == "EVT-T-3" for d in drafts[1:])
    assert_chunk_properties(chunk_docs("events_timeline", [doc]), [doc], may_overlap=is_window)


_first = st.sampled_from(["A", "'s", "3", "(", "“", "東", "é", "—", "-", "#", "«", "12.5", "\u00a0x"])
_word = st.sampled_from("radar track knots course vessel AIS gap réseau 東京 🚢 — 48.39N, (T-4471) it's".split(" "))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=_first, words=st.lists(_word, min_size=0, max_size=1600), paras=st.integers(1, 8),
       ref=st.sampled_from([None, "TN-1", "alert (x).", "a/b?"]), tags=st.lists(_word, max_size=3))
def test_event_properties_hold_for_any_description(first, words, paras, ref, tags) -> None:
    step = max(1, len(words) // paras)
    body = "\n\n".join(" ".join(words[i:i + step]) for i in range(0, len(words), step))
    rec = dict(SMALL, event_id="EVT-P", description=first + body, source_ref=ref, tags=tags)
    rec = {k: v for k, v in rec.items() if v not in (None, [])}
    doc = event_doc(rec)
    table = chunk_docs("events_timeline", [doc])
    assert_chunk_properties(table, [doc], may_overlap=is_window)
    rows = table.to_pylist()
    assert rows[0]["section_id"] == "EVT-P"
    desc = doc.block("description")
    if desc and count_tokens(doc.text[desc.start:]) > EVENT_WINDOW_TOKENS:
        assert len(rows) >= 2
    for r in rows[1:]:
        assert r["parent_chunk_id"] == rows[0]["chunk_id"]
        if is_window(r):
            assert r["token_count"] <= EVENT_WINDOW_TOKENS


def test_sample_days_and_fixture_hold_the_properties(tmp_path: Path) -> None:
    for day_dir in [SAMPLE / DATASET / d for d in ("2026-11-24", "2026-11-25", "2026-11-26")] + [FIXTURES / DATASET]:
        docs = load_events_day(day_dir).documents
        table = chunk_docs(DATASET, docs)
        assert_chunk_properties(table, docs, may_overlap=is_window)
        assert set(table.column("chunk_type").to_pylist()) == {"event"}
        assert_order_independent(DATASET, day_dir, tmp_path / day_dir.name)
        assert_same_chunks_after_raw(DATASET, docs)
        assert_old_raw_is_refused(DATASET, docs)


def test_window_limits_are_the_limits_given() -> None:
    assert EventLimits() == EventLimits(window_tokens=800, overlap_tokens=50, piece_target_tokens=800)
    doc = event_doc(dict(SMALL, event_id="EVT-T-4", description=long_description(120)))
    default, small = chunk_event(doc), chunk_event(doc, EventLimits(window_tokens=300, overlap_tokens=20))
    assert len(small) > len(default) and small[0] == default[0]  # same header parent, more windows
    assert max(d.token_count for d in small[1:]) <= 300
    assert all(d.parent_section_id == "EVT-T-4" for d in small[1:])


def test_sample_dark_event_is_split_under_its_header() -> None:
    docs = load_events_day(SAMPLE / DATASET / "2026-11-24").documents
    dark = next(d for d in docs if d.record_id == "EVT-20261124-0007")
    drafts = chunk_event(dark)
    assert [d.section_id for d in drafts] == ["EVT-20261124-0007", "EVT-20261124-0007.part.1", "EVT-20261124-0007.part.2"]
    assert drafts[0].text.startswith("Event EVT-20261124-0007: NORDIC CRANE goes dark")
    assert drafts[1].token_count == EVENT_WINDOW_TOKENS
