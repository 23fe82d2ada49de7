"""The pandera contract rejects each kind of bad row (one test per rule), and its token recount is exact."""

from __future__ import annotations

import copy
import datetime as dt
import json
import random
from collections.abc import Callable

import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codex_pipeline.core.contract import CHUNK_SCHEMA, MAX_CHUNK_TOKENS, SEED_FIELDS
from codex_pipeline.core.contract_check import ContractReport, exact_token_counts, validate_chunks
from codex_pipeline.core.documents import SourceDocument
from codex_pipeline.core.ids import make_chunk_id
from codex_pipeline.core.rows import ChunkDraft, ChunkRun, RowBuffer
from codex_pipeline.core.tokens import count_tokens, encoding
from codex_pipeline.datasets import steps
from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.sources.narrative import load_narrative_day
from codex_pipeline_tests.conftest import FIXTURES, SAMPLE_LANDING

DOC = SourceDocument("urn:aprs:narrative:d1", "d1", "Alpha beta gamma.\n\nDelta epsilon.", "d1.txt")


def good_rows() -> list[dict]:
    t = DOC.text
    drafts = [
        ChunkDraft("s.0", "narrative_window", t[:17], ((0, 17),), count_tokens(t[:17])),
        ChunkDraft("s.1", "narrative_window", t[19:], ((19, len(t)),), count_tokens(t[19:]), parent_section_id="s.0"),
    ]
    buf = RowBuffer(ChunkRun("narrative", dt.date(2026, 11, 24), "1.0", dt.datetime(2026, 11, 24, tzinfo=dt.UTC)))
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


# -- one corrupted row in a real partition: each rule still catches it -----------------

SAMPLE = SAMPLE_LANDING
NARRATIVE_DAY = dt.date(2026, 11, 24)


@pytest.fixture(scope="module")
def partition() -> tuple[list[dict], dict[str, str]]:
    """The narrative sample day chunked by the real step: rows and the canonical texts."""
    docs = load_narrative_day(SAMPLE / "narrative" / NARRATIVE_DAY.isoformat()).documents
    table = steps.chunk(get_dataset("narrative"), NARRATIVE_DAY, docs).table
    assert table.num_rows >= 8 and len(docs) >= 3
    return table.to_pylist(), {d.doc_id: d.text for d in docs}


def _report(rows: list[dict], texts: dict[str, str]) -> ContractReport:
    return validate_chunks(pa.Table.from_pylist(rows, schema=CHUNK_SCHEMA), texts)


def _middle(rows: list[dict]) -> int:
    """A row that has a predecessor and a successor in its own document."""
    for k in range(1, len(rows) - 1):
        if rows[k - 1]["doc_id"] == rows[k]["doc_id"] == rows[k + 1]["doc_id"]:
            return k
    raise AssertionError("no document with three windows")


def _span(row: dict) -> tuple[int, int]:
    start, end = json.loads(row["evidence_anchor"])["char_span"]
    return start, end


def _split_count(text: str) -> int:
    """A count a buggy chunker could report: two halves cut inside a word, counted apart."""
    for cut in range(len(text) // 2, len(text)):
        if text[cut - 1].isalpha() and text[cut].isalpha():
            wrong = count_tokens(text[:cut]) + count_tokens(text[cut:])
            if wrong != count_tokens(text):
                return wrong
    raise AssertionError("no cut that changes the count")


def _wrong_count(rows: list[dict], k: int, texts: dict[str, str]) -> None:
    rows[k]["token_count"] -= 1


def _halves_count(rows: list[dict], k: int, texts: dict[str, str]) -> None:
    rows[k]["token_count"] = _split_count(rows[k]["chunk_text"])


def _shifted_span(rows: list[dict], k: int, texts: dict[str, str]) -> None:
    start, end = _span(rows[k])
    rows[k]["evidence_anchor"] = json.dumps({"page": None, "char_span": [start + 1, end + 1]}, separators=(",", ":"))


def _span_past_the_source(rows: list[dict], k: int, texts: dict[str, str]) -> None:
    start, _ = _span(rows[k])
    end = len(texts[rows[k]["doc_id"]]) + 1
    rows[k]["evidence_anchor"] = json.dumps({"page": None, "char_span": [start, end]}, separators=(",", ":"))


def _duplicate_id(rows: list[dict], k: int, texts: dict[str, str]) -> None:
    rows[k]["chunk_id"], rows[k]["section_id"] = rows[k - 1]["chunk_id"], rows[k - 1]["section_id"]


def _seq_gap(rows: list[dict], k: int, texts: dict[str, str]) -> None:
    rows[k]["seq_index"] += 1


def _dangling_parent(rows: list[dict], k: int, texts: dict[str, str]) -> None:
    rows[k]["parent_chunk_id"] = make_chunk_id(rows[k]["doc_id"], "window.999")


def _over_cap(rows: list[dict], k: int, texts: dict[str, str]) -> None:
    """A verbatim slice of its source with exact count, length and anchor, but over 1,500 tokens."""
    source = texts[rows[k]["doc_id"]]
    end = next(n for n in range(100, len(source) + 1, 100) if count_tokens(source[:n]) > MAX_CHUNK_TOKENS)
    text = source[:end]
    rows[k].update(chunk_text=text, token_count=count_tokens(text), char_count=len(text),
                   evidence_anchor=json.dumps({"page": None, "char_span": [0, end]}, separators=(",", ":")))


@pytest.mark.parametrize(
    "corrupt,check",
    [
        (_wrong_count, "token_count_exact_cl100k"),
        (_halves_count, "token_count_exact_cl100k"),
        (_shifted_span, "evidence_anchor_valid"),
        (_span_past_the_source, "evidence_anchor_valid"),
        (_duplicate_id, "field_uniqueness"),
        (_seq_gap, "seq_index_dense_in_reading_order"),
        (_dangling_parent, "parent_in_same_document"),
        (_over_cap, "less_than_or_equal_to(1500)"),
    ],
    ids=["token-count-off-by-one", "token-count-of-halves", "char-span-shifted", "char-span-past-source",
         "duplicate-chunk-id", "seq-index-gap", "dangling-parent", "over-cap"],
)
def test_one_corrupted_row_fails_exactly_its_rule(
    partition: tuple[list[dict], dict[str, str]], corrupt: Callable[[list[dict], int, dict[str, str]], None], check: str
) -> None:
    rows, texts = copy.deepcopy(partition[0]), partition[1]
    assert _report(rows, texts).passed
    k = _middle(rows)
    corrupt(rows, k, texts)
    report = _report(rows, texts)
    assert report.failed_checks == [check]
    (failure,) = report.failures
    assert rows[k]["chunk_id"] in failure["example_chunk_ids"]
    assert report.rows == len(rows)


def test_the_check_reads_chunked_and_sliced_tables(partition: tuple[list[dict], dict[str, str]]) -> None:
    rows, texts = copy.deepcopy(partition[0]), partition[1]
    table = pa.Table.from_pylist(rows, schema=CHUNK_SCHEMA)
    k = _middle(rows)
    rows[k]["token_count"] += 1
    bad = pa.Table.from_pylist(rows, schema=CHUNK_SCHEMA)
    assert validate_chunks(pa.concat_tables([table.slice(0, 3), table.slice(3)]), texts).passed
    second_doc = next(i for i, r in enumerate(rows) if r["doc_id"] != rows[0]["doc_id"])
    assert validate_chunks(table.slice(second_doc), texts).passed  # Arrow arrays with a non-zero offset
    report = validate_chunks(pa.concat_tables([bad.slice(0, k), bad.slice(k)]), texts)
    assert report.failed_checks == ["token_count_exact_cl100k"]
    assert report.failures[0]["example_chunk_ids"] == [rows[k]["chunk_id"]]
    assert validate_chunks(table.slice(0, 0), texts).passed


# -- exact_token_counts is encode_ordinary, text by text -------------------------------


def _expected(texts: list[str | None]) -> list[int]:
    return [len(encoding().encode_ordinary(t or "")) for t in texts]


def _sample_texts() -> list[str]:
    files = sorted(p for p in [*FIXTURES.rglob("*"), *SAMPLE.rglob("*")] if p.is_file())
    return [p.read_text(encoding="utf-8", errors="replace") for p in files]


def test_counts_equal_encode_ordinary_on_every_sample_file_and_its_slices() -> None:
    texts = _sample_texts()
    rng = random.Random(7)
    slices = []
    for t in texts:
        for _ in range(20):
            a = rng.randrange(len(t) + 1)
            slices.append(t[a : a + rng.randrange(4000)])
    assert len(texts) > 40
    for batch in (texts, slices, texts + slices + texts):
        assert exact_token_counts(pa.array(batch, pa.large_string())).tolist() == _expected(batch)


_ALPHABET = [*"ab cé\n\n.,;:—日本 xyz123'\t#`sdSD-_()", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x85", "\u00a0",
             "\u2028", "\u3000", "\u0301", "\u200b", "🙂", "'s", "'LL", " '", "<|endoftext|>"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_ALPHABET), max_size=120).map("".join), max_size=12))
def test_counts_equal_encode_ordinary_on_random_text(texts: list[str]) -> None:
    assert exact_token_counts(pa.array(texts, pa.large_string())).tolist() == _expected(texts)


_WORDS = ["the", "The", "word", "don't", "x", "1999", "12:53", "é", "日本", "🙂", ".", "--", "'s", "<a>", "naïve", ""]
_GAPS = [" ", " ", " ", "\n", "  ", "\n ", " \n", "\n\n", "\t", "\r\n", "\u00a0", " \n \n", ""]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.tuples(st.sampled_from(_WORDS), st.sampled_from(_GAPS)), max_size=60), max_size=8))
def test_counts_equal_encode_ordinary_on_repetitive_prose(docs: list[list[tuple[str, str]]]) -> None:
    """Few distinct words in every kind of gap: every way two segments can meet in the one encode call."""
    texts = ["".join(w + g for w, g in doc) for doc in docs]
    assert exact_token_counts(pa.array(texts, pa.large_string())).tolist() == _expected(texts)


def test_counts_take_any_string_column() -> None:
    texts = ["Alpha beta.", None, "", "gamma  delta\n\nEpsilon", "Alpha beta."]
    expected = _expected(texts)
    assert exact_token_counts(pa.array(texts, pa.string())).tolist() == expected
    assert exact_token_counts(pa.chunked_array([pa.array(texts[:2]), pa.array(texts[2:])])).tolist() == expected
    assert exact_token_counts(pa.array(["skip", *texts], pa.large_string()).slice(1)).tolist() == expected
    assert exact_token_counts(pd.Series(texts, dtype=object)).tolist() == expected
    assert exact_token_counts(pa.array([], pa.large_string())).tolist() == []
