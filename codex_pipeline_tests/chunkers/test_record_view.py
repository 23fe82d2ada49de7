"""record_view chunks (urban_signal_grid, lehd_flows, poi_intelligence) and the shared chunk properties.

:func:`assert_chunk_properties` is the property check every record dataset's chunker
test runs on its output; it lives here because ``record_view`` is the shared module.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codex_pipeline.chunkers.record_view import RecordLimits, chunk_record_view, section_drafts
from codex_pipeline.core.contract import MAX_CHUNK_TOKENS, ChunkType
from codex_pipeline.core.contract_check import validate_chunks
from codex_pipeline.core.documents import SourceDocument
from codex_pipeline.core.tokens import count_tokens
from codex_pipeline.datasets import steps as pipeline
from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.sources.records import RawRecord
from codex_pipeline.sources.structured import LEHD_FLOWS, POI_INTELLIGENCE, URBAN_SIGNAL_GRID, build_documents
from codex_pipeline_tests.conftest import FIXTURES

DAY = dt.date(2026, 11, 24)
SAMPLE = Path(__file__).resolve().parents[2] / "codex_pipeline" / "sample_landing"


# ----------------------------------------------------------------------------- shared helpers


def chunk_docs(dataset: str, docs: list[SourceDocument]) -> pa.Table:
    """Chunk through the pipeline step the Dagster asset calls; no chunk-stage rejects allowed."""
    out = pipeline.chunk(get_dataset(dataset), DAY, docs, chunked_at=dt.datetime(2026, 11, 24, tzinfo=dt.UTC))
    assert out.rejects.num_rows == 0, out.rejects.to_pylist()
    return out.table


def assert_chunk_properties(
    table: pa.Table, docs: Iterable[SourceDocument], may_overlap: Callable[[dict], bool] = lambda row: False
) -> None:
    """Contract + the structural properties of Codex record chunk trees.

    Every chunk is a verbatim slice under the cap with an exact count; seq_index is dense;
    section ids are unique per document; parents exist in the same document; chunks
    (except those ``may_overlap`` allows, i.e. event windows) never overlap; and no
    content is dropped: every non-whitespace character of the canonical text is in a chunk.
    """
    texts = {d.doc_id: d.text for d in docs}
    report = validate_chunks(table, texts)
    assert report.passed, report.failures
    by_doc: dict[str, list[dict]] = defaultdict(list)
    for row in table.to_pylist():
        by_doc[row["doc_id"]].append(row)
    assert set(by_doc) == set(texts), "every document yields chunks"
    for doc_id, rows in by_doc.items():
        text = texts[doc_id]
        assert [r["seq_index"] for r in rows] == list(range(len(rows)))
        sections = [r["section_id"] for r in rows]
        assert len(set(sections)) == len(sections), sections
        ids = {r["chunk_id"] for r in rows}
        assert rows[0]["parent_chunk_id"] is None, "the first chunk is the root"
        covered = bytearray(len(text))
        disjoint = []
        for r in rows:
            assert r["parent_chunk_id"] is None or r["parent_chunk_id"] in ids
            assert 1 <= r["token_count"] <= MAX_CHUNK_TOKENS
            assert r["token_count"] == count_tokens(r["chunk_text"])
            anchor = json.loads(r["evidence_anchor"])
            assert "spans" not in anchor, "record chunks are verbatim slices"
            s, e = anchor["char_span"]
            assert text[s:e] == r["chunk_text"]
            covered[s:e] = b"\x01" * (e - s)
            if not may_overlap(r):
                disjoint.append((s, e))
        disjoint.sort()
        for (_, e1), (s2, _) in zip(disjoint, disjoint[1:]):
            assert e1 <= s2, f"overlapping chunks in {doc_id}"
        dropped = [c for c, flag in zip(text, covered) if not flag and not c.isspace()]
        assert not dropped, f"content dropped from {doc_id}: {''.join(dropped)[:80]!r}"


def chunk_key_set(table: pa.Table) -> set[tuple]:
    return {(r["doc_id"], r["section_id"], r["chunk_id"], r["parent_chunk_id"], r["chunk_text"]) for r in table.to_pylist()}


def reversed_day(src: Path, dest: Path) -> Path:
    """Copy a landing folder with the records of every file in reverse order."""
    dest.mkdir(parents=True, exist_ok=True)
    for f in src.iterdir():
        lines = f.read_text().splitlines(keepends=True)
        body = lines[1:] if f.suffix == ".csv" else lines
        head = lines[:1] if f.suffix == ".csv" else []
        (dest / f.name).write_text("".join(head + body[::-1]))
    return dest


def assert_order_independent(dataset: str, day_dir: Path, tmp_path: Path) -> None:
    """Ids, parents and texts are identical across runs and whatever the record order."""
    spec = get_dataset(dataset)
    first = chunk_key_set(chunk_docs(dataset, spec.load_day(day_dir).documents))
    again = chunk_key_set(chunk_docs(dataset, spec.load_day(day_dir).documents))
    flipped = chunk_key_set(chunk_docs(dataset, spec.load_day(reversed_day(day_dir, tmp_path / "reversed")).documents))
    assert first == again == flipped


def assert_same_chunks_after_raw(dataset: str, docs: list[SourceDocument]) -> None:
    """The blocks survive ``raw``: documents read back from the raw table chunk exactly alike."""
    spec = get_dataset(dataset)
    raw = pipeline.ingest(spec, DAY, docs, [])
    again = pipeline.documents_from_raw(raw.table)
    assert [d.blocks for d in again] == [d.blocks for d in docs]
    assert chunk_docs(dataset, again).to_pylist() == chunk_docs(dataset, docs).to_pylist()


def assert_old_raw_is_refused(dataset: str, docs: list[SourceDocument]) -> None:
    """A document without its blocks (raw written by an older reader) is a one-line chunk reject naming it."""
    old = [replace(d, blocks=()) for d in docs]
    out = pipeline.chunk(get_dataset(dataset), DAY, old, chunked_at=dt.datetime(2026, 11, 24, tzinfo=dt.UTC))
    assert out.table.num_rows == 0
    rejects = out.rejects.to_pylist()
    assert [r["record_ref"] for r in rejects] == [d.record_id for d in docs]
    for r, d in zip(rejects, docs):
        assert r["stage"] == "chunk" and "\n" not in r["reason"]
        assert d.doc_id in r["reason"] and "re-materialize the raw partition" in r["reason"], r["reason"]


def docs_of(ds, records: list[dict]) -> list[SourceDocument]:
    raws = [RawRecord("t.jsonl", f"line {i}", r) for i, r in enumerate(records, 1)]
    valid, rejects = ds.rules.validate(raws)
    assert not rejects, rejects
    return build_documents(ds.name, [(ds.rid(r.data), r) for r in valid], ds.render, ds.heading).documents


# ----------------------------------------------------------------------------- golden

SMALL_USG = {
    "signal_id": "usg-tac-8928d54a3b7ffff-2026-11-24",
    "observed_date": "2026-11-24",  # keys deliberately out of schema order
    "city": "Tacoma, WA",
    "cell_id": "8928d54a3b7ffff",
    "h3_resolution": 9,
    "centroid_lat": 47.2469,
    "centroid_lon": -122.4381,
    "neighborhood": "Downtown",
    "pedestrian_count": 3639,
    "transit_boardings": None,
    "top_311_categories": ["pothole", "graffiti"],
    "anomaly_flags": [],
    "analyst_note": "Water main break on Hawthorne Ave.\n\nRoute 8 detoured.",
}

SMALL_USG_VIEW = """## Urban signal grid cell-day usg-tac-8928d54a3b7ffff-2026-11-24 — Downtown
- **signal_id**: usg-tac-8928d54a3b7ffff-2026-11-24
- **city**: Tacoma, WA
- **cell_id**: 8928d54a3b7ffff
- **h3_resolution**: 9
- **observed_date**: 2026-11-24
- **neighborhood**: Downtown
- **centroid_lat**: 47.2469
- **centroid_lon**: -122.4381
- **pedestrian_count**: 3639
- **top_311_categories**: pothole; graffiti
- **analyst_note**: Water main break on Hawthorne Ave.

  Route 8 detoured."""


def test_golden_small_record_is_one_record_view_chunk() -> None:
    (doc,) = docs_of(URBAN_SIGNAL_GRID, [SMALL_USG])
    assert doc.doc_id == "urn:aprs:urban_signal_grid:usg-tac-8928d54a3b7ffff-2026-11-24"
    assert doc.text == SMALL_USG_VIEW  # fixed field order, null / empty fields omitted
    table = chunk_docs("urban_signal_grid", [doc])
    rows = table.to_pylist()
    assert [(r["section_id"], r["chunk_type"], r["parent_chunk_id"], r["seq_index"]) for r in rows] == [
        ("record", "record_view", None, 0)
    ]
    assert rows[0]["chunk_text"] == SMALL_USG_VIEW
    assert json.loads(rows[0]["evidence_anchor"]) == {"page": None, "char_span": [0, len(SMALL_USG_VIEW)]}
    assert rows[0]["chunk_id"] == "urn:aprs:chunk:" + hashlib.sha256(f"{doc.doc_id}\x1frecord".encode()).hexdigest()[:16]
    assert_chunk_properties(table, [doc])


def test_view_does_not_depend_on_json_key_order() -> None:
    shuffled = dict(reversed(list(SMALL_USG.items())))
    assert docs_of(URBAN_SIGNAL_GRID, [shuffled])[0].text == SMALL_USG_VIEW


def test_outsized_record_is_split_into_a_root_and_children() -> None:
    docs = POI_INTELLIGENCE.load_day(FIXTURES / "poi_intelligence").documents
    big = next(d for d in docs if d.record_id == "poi-tac-000077")
    assert count_tokens(big.text) > MAX_CHUNK_TOKENS
    drafts = chunk_record_view(big)
    assert [d.section_id for d in drafts] == ["record", "record.part.2", "record.part.3"]
    assert [d.parent_section_id for d in drafts] == [None, "record", "record"]
    assert drafts[0].text.startswith("## Point of interest poi-tac-000077 — Cedar Sound Medical Center\n- **poi_id**")
    assert drafts[0].metadata["fields"][:3] == ["poi_id", "name", "category"]
    assert all(d.metadata["fields"] == ["description"] for d in drafts[1:])
    assert [d.metadata["part"] for d in drafts] == [1, 2, 3] and {d.metadata["parts"] for d in drafts} == {3}
    assert_chunk_properties(chunk_docs("poi_intelligence", docs), docs)


def test_piece_target_of_the_limits_sizes_the_pieces() -> None:
    docs = POI_INTELLIGENCE.load_day(FIXTURES / "poi_intelligence").documents
    big = next(d for d in docs if d.record_id == "poi-tac-000077")
    small = chunk_record_view(big, RecordLimits(piece_target_tokens=300))
    assert len(small) > len(chunk_record_view(big)) == 3
    assert all(d.token_count <= MAX_CHUNK_TOKENS for d in small) and small[0].section_id == "record"
    assert "".join(d.text for d in small).replace(" ", "").replace("\n", "") == big.text.replace(" ", "").replace("\n", "")


def test_section_drafts_leaf_pieces_are_siblings_under_the_parent() -> None:
    text = "Head line\n\n" + "\n\n".join(f"Paragraph {i}. " + "word " * 300 for i in range(8))
    drafts = section_drafts(text, 11, len(text), "scope.3", ChunkType.PERMIT_SCOPE_SECTION, parent="summary")
    assert len(drafts) > 1
    assert [d.section_id for d in drafts] == [f"scope.3.part.{k}" for k in range(1, len(drafts) + 1)]
    assert {d.parent_section_id for d in drafts} == {"summary"}
    for d in drafts:
        (s, e), = d.spans
        assert text[s:e] == d.text and d.token_count == count_tokens(d.text) <= MAX_CHUNK_TOKENS


# ----------------------------------------------------------------------------- properties

_words = st.sampled_from("the cell saw more pedestrians than usual near the market after the ferry arrived, "
                         "while 311 calls about potholes fell; café naïve Ωmega 東京 🚲 — 12.5% ".split(" "))
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(note=st.lists(st.lists(_words, min_size=1, max_size=400).map(" ".join), min_size=0, max_size=12),
       pedestrians=st.one_of(st.none(), st.integers(0, 10**6)), seed=st.integers(0, 10**6))
def test_record_view_properties_hold_for_any_record(note: list[str], pedestrians: int | None, seed: int) -> None:
    rec = dict(SMALL_USG, pedestrian_count=pedestrians, analyst_note="\n\n".join(note) or None)
    rec["signal_id"] = f"usg-{seed}"
    docs = docs_of(URBAN_SIGNAL_GRID, [rec])
    assert_chunk_properties(chunk_docs("urban_signal_grid", docs), docs)


def test_sample_days_hold_the_properties_and_ids_do_not_depend_on_record_order(tmp_path: Path) -> None:
    for ds in (URBAN_SIGNAL_GRID, LEHD_FLOWS, POI_INTELLIGENCE):
        for day in ("2026-11-24", "2026-11-25", "2026-11-26"):
            day_dir = SAMPLE / ds.name / day
            docs = ds.load_day(day_dir).documents
            table = chunk_docs(ds.name, docs)
            assert set(table.column("chunk_type").to_pylist()) == {"record_view"}
            assert_chunk_properties(table, docs)
            assert_order_independent(ds.name, day_dir, tmp_path / ds.name / day)
            assert all(d.blocks == () for d in docs)  # the view needs no blocks: its text is the chunk
            assert_same_chunks_after_raw(ds.name, docs)


def test_every_structured_dataset_shares_the_one_chunker() -> None:
    for name in ("urban_signal_grid", "lehd_flows", "poi_intelligence"):
        assert get_dataset(name).chunker is chunk_record_view


def test_lehd_csv_records_view_in_schema_order() -> None:
    docs = LEHD_FLOWS.load_day(FIXTURES / "lehd_flows").documents
    assert docs
    names = [ln.split("**")[1] for ln in docs[0].text.splitlines()[1:]]
    schema_order = [f.name for f in LEHD_FLOWS.schema.fields]
    assert names == [n for n in schema_order if n in names]
    assert_chunk_properties(chunk_docs("lehd_flows", docs), docs)
