"""The pandera contract rejects each kind of bad row (one test per rule)."""

from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
import pytest

from codex_pipeline.core.contract import CHUNK_SCHEMA, SEED_FIELDS
from codex_pipeline.core.contract_check import validate_chunks
from codex_pipeline.core.documents import SourceDocument
from codex_pipeline.core.ids import make_chunk_id
from codex_pipeline.core.rows import ChunkDraft, ChunkRun, RowBuffer
from codex_pipeline.core.tokens import count_tokens

DOC = SourceDocument("urn:aprs:narrative:d1", "d1", "Alpha beta gamma.\n\nDelta epsilon.", "d1.txt")


def good_rows() -> list[dict]:
    t = DOC.text
    drafts = [
        ChunkDraft("s.0", "narrative_window", t[:17], ((0, 17),), count_tokens(t[:17])),
        ChunkDraft("s.1", "narrative_window", t[19:], ((19, len(t)),), count_tokens(t[19:]), parent_section_id="s.0"),
    ]
    buf = RowBuffer(ChunkRun("narrative", dt.date(2026, 11, 24), "1.0", dt.datetime(2026, 11, 24, tzinfo=dt.timezone.utc)))
    buf.add_document(DOC, drafts)
    return buf.to_table().to_pylist()


def check(rows: list[dict]) -> list[str]:
    return validate_chunks(pa.Table.from_pylist(rows, schema=CHUNK_SCHEMA), {DOC.doc_id: DOC.text}).failed_checks


def test_good_rows_pass_and_schema_holds_the_seed_fields() -> None:
    assert check(good_rows()) == []
    assert list(CHUNK_SCHEMA.names[:14]) == list(SEED_FIELDS)


def test_chunk_id_pattern() -> None:
    rows = good_rows()
    rows[0]["chunk_id"] = "chunk-1"
    assert "str_matches('^urn:aprs:chunk:[0-9a-f]{16}$')" in check(rows)


def test_chunk_id_must_be_minted_from_doc_and_section() -> None:
    rows = good_rows()
    rows[0]["chunk_id"] = make_chunk_id(DOC.doc_id, "other")
    assert "chunk_id_minted_from_doc_and_section" in check(rows)


def test_chunk_id_unique() -> None:
    rows = good_rows()
    rows[1]["chunk_id"], rows[1]["section_id"] = rows[0]["chunk_id"], rows[0]["section_id"]
    assert "field_uniqueness" in check(rows)


def test_token_count_exact() -> None:
    rows = good_rows()
    rows[1]["token_count"] += 1
    assert check(rows) == ["token_count_exact_cl100k"]


def test_char_count_is_len() -> None:
    rows = good_rows()
    rows[0]["char_count"] = 3
    assert check(rows) == ["char_count_is_len"]


@pytest.mark.parametrize("seqs", [(0, 2), (1, 0), (0, 0)])
def test_seq_index_dense_in_reading_order(seqs: tuple[int, int]) -> None:
    rows = good_rows()
    rows[0]["seq_index"], rows[1]["seq_index"] = seqs
    assert "seq_index_dense_in_reading_order" in check(rows)


def test_parent_must_exist_in_same_document() -> None:
    rows = good_rows()
    rows[1]["parent_chunk_id"] = make_chunk_id(DOC.doc_id, "missing")
    assert check(rows) == ["parent_in_same_document"]
    rows = good_rows()
    rows[1]["parent_chunk_id"] = rows[1]["chunk_id"]  # its own parent
    assert check(rows) == ["parent_in_same_document"]


def test_token_cap() -> None:
    rows = good_rows()
    text = "word " * 1600
    rows[0].update(chunk_text=text, token_count=count_tokens(text), char_count=len(text))
    failed = check(rows)
    assert "less_than_or_equal_to(1500)" in failed


@pytest.mark.parametrize(
    "anchor",
    ["not json", json.dumps({"page": None}), json.dumps({"page": None, "char_span": [5, 2]}),
     json.dumps({"page": None, "char_span": [0, 999]}), json.dumps({"char_span": [0, 17]}),
     json.dumps({"page": None, "char_span": [1, 18]})],
    ids=["invalid-json", "no-span", "reversed", "outside-source", "no-page", "not-verbatim"],
)
def test_evidence_anchor(anchor: str) -> None:
    rows = good_rows()
    rows[0]["evidence_anchor"] = anchor
    assert check(rows) == ["evidence_anchor_valid"]


@pytest.mark.parametrize("field,value", [("chunking_version", ""), ("chunking_version", None), ("chunked_at", None)])
def test_versions_and_timestamps_set(field: str, value: object) -> None:
    rows = good_rows()
    rows[0][field] = value
    failed = check(rows)
    assert failed and all(("str_length" in f) or ("not_nullable" in f) for f in failed), failed


def test_unknown_chunk_type() -> None:
    rows = good_rows()
    rows[0]["chunk_type"] = "paragraph"
    assert "isin" in " ".join(check(rows))
