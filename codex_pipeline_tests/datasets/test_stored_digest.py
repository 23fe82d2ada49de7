"""raw.revision_digest: computed once at ingest, equal to what the chunk step would compute itself."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest

from codex_pipeline.core.contract import RAW_SCHEMA, REVISION_NORMALIZATION_KEY
from codex_pipeline.core.documents import Reject
from codex_pipeline.core.ids import NORMALIZATION, revision_digests
from codex_pipeline.core.rows import ChunkDraft, ChunkRun, RowBuffer
from codex_pipeline.datasets import steps
from codex_pipeline.datasets.registry import DatasetSpec, get_dataset
from codex_pipeline_tests.conftest import SAMPLE_LANDING

AT = dt.datetime(2026, 11, 25, tzinfo=dt.UTC)
SAMPLE_DAYS = sorted((d.name, day.name) for d in SAMPLE_LANDING.iterdir() if d.is_dir() for day in d.iterdir() if day.is_dir())
CHUNKED_DAYS = [(d, day) for d, day in SAMPLE_DAYS if get_dataset(d).chunked]


def _raw(spec: DatasetSpec, day: str) -> pa.Table:
    rejects: list[Reject] = []
    docs = list(spec.documents(SAMPLE_LANDING / spec.name / day, rejects))
    return steps.ingest(spec, dt.date.fromisoformat(day), docs, rejects).table


def _old_format(raw: pa.Table) -> pa.Table:
    """The table a raw file written before the column existed reads as."""
    return raw.drop_columns(["revision_digest"])


@pytest.mark.parametrize(("dataset", "day"), SAMPLE_DAYS, ids=[f"{d}-{day}" for d, day in SAMPLE_DAYS])
def test_the_stored_digest_is_the_revision_digest_of_the_canonical_text(dataset: str, day: str) -> None:
    spec = get_dataset(dataset)
    raw = _raw(spec, day)
    assert raw.schema.equals(RAW_SCHEMA, check_metadata=True) and raw.num_rows
    stored = raw.column("revision_digest").to_pylist()
    if not spec.chunked:  # a raw export is never chunked: nothing to store
        assert stored == [None] * raw.num_rows
        return
    assert stored == revision_digests(raw.column("canonical_text").to_pylist())
    assert [d.revision_digest for d in steps.documents_from_raw(raw)] == stored


@pytest.mark.parametrize(("dataset", "day"), CHUNKED_DAYS, ids=[f"{d}-{day}" for d, day in CHUNKED_DAYS])
def test_chunks_from_a_raw_file_with_the_column_equal_those_without_it(dataset: str, day: str) -> None:
    spec, date = get_dataset(dataset), dt.date.fromisoformat(day)
    raw = _raw(spec, day)
    old = steps.documents_from_raw(_old_format(raw))
    assert all(d.revision_digest is None for d in old)
    stored = steps.chunk(spec, date, steps.documents_from_raw(raw), AT).table
    computed = steps.chunk(spec, date, old, AT).table
    assert stored.num_rows and stored.equals(computed)


def test_the_chunk_step_reads_the_stored_digest_and_computes_only_the_missing_ones() -> None:
    spec = get_dataset("narrative")
    raw = _raw(spec, "2026-11-24")
    docs = steps.documents_from_raw(raw)
    planted = "abcdef12" + "0" * 32  # not the text's digest: a locator with it can only come from the column
    docs[0] = type(docs[0])(**{**docs[0].__dict__, "revision_digest": planted})
    docs[1] = type(docs[1])(**{**docs[1].__dict__, "revision_digest": None})
    table = steps.chunk(spec, dt.date(2026, 11, 24), docs, AT).table
    revs = {doc_id: loc.split("|r=")[1].split("|")[0]
            for doc_id, loc in zip(table.column("doc_id").to_pylist(), table.column("locator").to_pylist())}
    assert revs[docs[0].doc_id] == "abcdef12"
    assert revs[docs[1].doc_id] == revision_digests([docs[1].text])[0][:8]
    assert revs[docs[2].doc_id] == raw.column("revision_digest")[2].as_py()[:8]


def test_digests_made_with_another_normalization_are_computed_again() -> None:
    spec = get_dataset("narrative")
    raw = _raw(spec, "2026-11-24")
    field = raw.schema.field("revision_digest")
    assert field.metadata == {REVISION_NORMALIZATION_KEY: NORMALIZATION.encode()}
    stale = raw.cast(raw.schema.set(raw.schema.get_field_index("revision_digest"),
                                    field.with_metadata({REVISION_NORMALIZATION_KEY: b"0"})))
    assert all(d.revision_digest is None for d in steps.documents_from_raw(stale))
    unmarked = raw.cast(raw.schema.set(raw.schema.get_field_index("revision_digest"), field.remove_metadata()))
    assert all(d.revision_digest is None for d in steps.documents_from_raw(unmarked))


def test_the_row_buffer_keeps_the_order_of_stored_and_computed_digests() -> None:
    from codex_pipeline.core.documents import SourceDocument

    texts = ["one text", "exam-\nple two", "three  words here"]
    digests = revision_digests(texts)
    docs = [SourceDocument(f"urn:aprs:t:{i}", str(i), t, "f", revision_digest=digests[i] if i == 1 else None)
            for i, t in enumerate(texts)]
    buf = RowBuffer(ChunkRun("t", dt.date(2026, 11, 24), "v", AT))
    for doc in docs:
        buf.add_document(doc, [ChunkDraft("s", "narrative_window", doc.text, ((0, len(doc.text)),), 1)])
    locators = buf.to_table().column("locator").to_pylist()
    assert [loc.split("|s=")[0] for loc in locators] == [f"{i}|r={digests[i][:8]}" for i in range(3)]


def test_a_written_raw_file_keeps_the_column_and_its_normalization(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    raw = _raw(get_dataset("docs"), "2026-11-24")
    pq.write_table(raw, tmp_path / "raw.parquet")
    with pq.ParquetFile(tmp_path / "raw.parquet") as pf:
        back = pf.read_row_group(0)
    assert [d.revision_digest for d in steps.documents_from_raw(back)] == raw.column("revision_digest").to_pylist()
