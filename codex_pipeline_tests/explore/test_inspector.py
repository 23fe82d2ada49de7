"""ChunkInspector: summary numbers, one chunk, samples, and the token histogram PNG."""

from __future__ import annotations

import base64
import datetime as dt
import struct

import pyarrow as pa
import pytest

from codex_pipeline.core.documents import SourceDocument
from codex_pipeline.core.ids import content_hash, make_chunk_id, make_doc_id
from codex_pipeline.core.rows import ChunkDraft, ChunkRun, RowBuffer
from codex_pipeline.core.tokens import count_tokens
from codex_pipeline.datasets import steps as pipeline
from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.explore.inspector import (
    ChunkInspector,
    Distribution,
    Text,
    token_histogram_markdown,
    token_histogram_png,
)
from codex_pipeline.explore.navigation import ChunkCollection
from codex_pipeline.explore.stats import chunk_summary
from codex_pipeline_tests.conftest import FIXTURES

DAY = dt.date(2026, 11, 24)
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def words(k: int) -> str:
    """``k`` words that cl100k counts as exactly ``k`` tokens (asserted below)."""
    return " ".join(["word"] * k)


def sized_table() -> pa.Table:
    """Doc s1: a 40-token parent with 10/20/30-token children; doc s2: one 1,600-token chunk."""
    buf = RowBuffer(ChunkRun("sizes", DAY, "1.0", dt.datetime(2026, 11, 24, tzinfo=dt.UTC)))
    layout = {
        "s1": [("top", "doc_section", 40, None), ("c.1", "condition", 10, "top"),
               ("c.2", "condition", 20, "top"), ("c.3", "condition", 30, "top")],
        "s2": [("all", "doc_section", 1600, None)],
    }
    for record, parts in layout.items():
        text = "\n".join(words(k) for _, _, k, _ in parts)
        drafts, pos = [], 0
        for section, ctype, k, parent in parts:
            t = words(k)
            assert count_tokens(t) == k
            drafts.append(ChunkDraft(section, ctype, t, ((pos, pos + len(t)),), k, parent))
            pos += len(t) + 1
        buf.add_document(SourceDocument(make_doc_id("sizes", record), record, text, f"{record}.txt"), drafts)
    return buf.to_table()


@pytest.fixture(scope="module")
def sized() -> ChunkInspector:
    return ChunkInspector(ChunkCollection.from_table(sized_table()))


@pytest.fixture(scope="module")
def civic() -> pa.Table:
    """Real civic rows: the civic reader and chunker over the shipped fixture (no Dagster needed)."""
    spec = get_dataset("civic_intelligence")
    loaded = spec.load_day(FIXTURES / "civic_intelligence")
    return pipeline.chunk(spec, DAY, loaded.documents).table


# -- summary -------------------------------------------------------------------------


def test_summary_numbers(sized: ChunkInspector) -> None:
    s = sized.summary()
    assert (s.documents, s.chunks, s.top_level_chunks) == (2, 5, 2)
    assert s.datasets == ("sizes",) and s.partitions == ("2026-11-24",)
    assert s.chunks_by_type == {"condition": 3, "doc_section": 2}
    # sizes [10, 20, 30, 40, 1600]; nearest-rank percentiles as in stats.token_percentiles
    assert s.tokens == Distribution(count=5, min=10, p50=30, p95=1600, max=1600, mean=340.0)
    assert s.tokens_by_type == {
        "condition": Distribution(3, 10, 20, 30, 30, 20.0),
        "doc_section": Distribution(2, 40, 40, 1600, 1600, 820.0),
    }
    # "word" * k joined by spaces has 5k - 1 characters
    assert s.chars == Distribution(5, 49, 149, 7999, 7999, 1699.0)
    assert s.chars_by_type["condition"] == Distribution(3, 49, 99, 149, 149, 99.0)
    assert s.chunks_per_document == Distribution(2, 1, 1, 4, 4, 2.5)
    assert (s.cap, s.over_cap) == (1500, 1)
    assert s.over_cap_chunk_ids == (make_chunk_id(make_doc_id("sizes", "s2"), "all"),)
    assert s.superseded_documents == 0
    assert s.to_dict()["tokens"] == {"count": 5, "min": 10, "p50": 30, "p95": 1600, "max": 1600, "mean": 340.0}


def test_summary_report_text(sized: ChunkInspector) -> None:
    over = make_chunk_id(make_doc_id("sizes", "s2"), "all")
    assert str(sized.summary()).splitlines() == [
        "sizes: partition(s) 2026-11-24",
        "  documents 2 · chunks 5 · top-level chunks 2 · over the 1,500-token cap 1",
        "  chunks per document: min 1 · p50 1 · p95 4 · max 4 · mean 2.5",
        f"  over the cap: {over}",
        "",
        "  tokens by type  chunks  min  p50    p95    max   mean",
        "  condition            3   10   20     30     30   20.0",
        "  doc_section          2   40   40  1,600  1,600  820.0",
        "  (all)                5   10   30  1,600  1,600  340.0",
        "",
        "  characters by type  chunks  min  p50    p95    max     mean",
        "  condition                3   49   99    149    149     99.0",
        "  doc_section              2  199  199  7,999  7,999  4,099.0",
        "  (all)                    5   49  149  7,999  7,999  1,699.0",
    ]


def test_summary_cap_is_configurable(sized: ChunkInspector) -> None:
    s = ChunkInspector(sized.collection, cap=25).summary(list_over_cap=1)
    assert s.over_cap == 3 and len(s.over_cap_chunk_ids) == 1


def test_summary_agrees_with_the_dagster_metadata_numbers(civic: pa.Table) -> None:
    s = ChunkInspector(civic).summary()
    meta = chunk_summary(civic)  # what the chunks asset reports
    assert s.documents == meta["documents"] and s.chunks == meta["chunks"] == civic.num_rows
    assert s.chunks_by_type == meta["chunks_by_type"]
    assert {"p50": s.tokens.p50, "p95": s.tokens.p95, "max": s.tokens.max} == meta["tokens"]
    for t, d in s.tokens_by_type.items():
        assert {"p50": d.p50, "p95": d.p95, "max": d.max} == meta["tokens_by_type"][t]
    rows = civic.to_pylist()
    assert s.top_level_chunks == sum(r["parent_chunk_id"] is None for r in rows)
    assert s.chars.max == max(len(r["chunk_text"]) for r in rows) and s.over_cap == 0
    per_doc = [sum(r["doc_id"] == d for r in rows) for d in sorted({r["doc_id"] for r in rows})]
    assert (s.chunks_per_document.min, s.chunks_per_document.max) == (min(per_doc), max(per_doc))


def test_empty_collection_summary() -> None:
    s = ChunkInspector(ChunkCollection([])).summary()
    assert (s.documents, s.chunks, s.over_cap) == (0, 0, 0) and s.tokens == Distribution(0, 0, 0, 0, 0, 0.0)
    assert "documents 0 · chunks 0" in str(s)


# -- read_chunk ----------------------------------------------------------------------


def test_read_chunk_by_index_id_and_hash(sized: ChunkInspector) -> None:
    col = sized.collection
    c2 = col[make_chunk_id(make_doc_id("sizes", "s1"), "c.2")]
    text = sized.read_chunk(2)
    assert isinstance(text, Text) and repr(text) == str(text)  # prints plainly in a REPL
    assert text == sized.read_chunk(c2.chunk_id) == sized.read_chunk(content_hash(c2.chunk_text))
    top = col[make_chunk_id(make_doc_id("sizes", "s1"), "top")]
    assert text.splitlines() == [
        f"chunk 3 of 5  {c2.chunk_id}",
        f"  document  {c2.doc_id}  (seq 2, chunk 3 of 4)",
        "  stored    sizes · partition 2026-11-24 · chunking 1.0",
        "  section   c.2",
        "  type      condition",
        "  size      20 tokens · 99 chars",
        f"  anchor    {c2.evidence_anchor}",
        f"  parent    {top.chunk_id}  [doc_section top]",
        "  children  0",
        f"  locator   {c2.locator}",
        f"  hash      {content_hash(c2.chunk_text)}",
        "  metadata  -",
        "  ---",
        words(20),
    ]
    assert sized.read_chunk(0).splitlines()[7:9] == ["  parent    - (top-level)", "  children  c.1, c.2, c.3"]


def test_read_chunk_flags_over_cap_and_clips(sized: ChunkInspector) -> None:
    text = sized.read_chunk(-1, max_chars=14)
    assert "  size      1,600 tokens · 7,999 chars  (OVER the 1,500-token cap)" in text.splitlines()
    assert text.splitlines()[-1] == "word word word … [+7985 chars]"


def test_read_chunk_errors(sized: ChunkInspector) -> None:
    with pytest.raises(IndexError, match="out of range: the collection has 5 chunks"):
        sized.read_chunk(5)
    with pytest.raises(KeyError, match="no chunk with id or content hash"):
        sized.read_chunk("urn:aprs:chunk:0000000000000000")


# -- sampling ------------------------------------------------------------------------


def test_sample_is_deterministic_with_a_seed(civic: pa.Table) -> None:
    ins = ChunkInspector(civic)
    docs = ins.collection.documents
    assert ins.sample(n=3, seed=11) == ins.sample(n=3, seed=11)
    assert ins.sample_document(n=3, seed=11) == ins.sample_document(n=3, seed=11)
    chosen = {ins.sample(n=2, seed=s)[0] for s in range(20)}
    assert chosen == set(docs)  # every document can be drawn
    for s in range(10):
        doc, chunks = ins.sample(n=3, seed=s)
        every = ins.collection.document_chunks(doc)
        assert len(chunks) == 3 and set(chunks) <= set(every)
        assert [c.seq_index for c in chunks] == sorted(c.seq_index for c in chunks)


def test_sample_of_a_given_document(sized: ChunkInspector) -> None:
    s1 = make_doc_id("sizes", "s1")
    doc, chunks = sized.sample(s1, n=10, seed=0)
    assert doc == s1 and chunks == sized.collection.document_chunks(s1)  # fewer than n: all, in order
    text = sized.sample_document(s1, n=2, seed=5, max_chars=9)
    _, picked = sized.sample(s1, n=2, seed=5)
    head, *blocks = text.split("\n\n")
    assert head == f"document {s1} · 4 chunk(s), 2 sampled: seq " + ", ".join(str(c.seq_index) for c in picked)
    assert blocks == [c.chunk_str(9) for c in picked]
    assert sized.sample_document(s1, n=4).startswith(f"document {s1} · 4 chunk(s), all")
    with pytest.raises(KeyError):
        sized.sample("urn:aprs:sizes:none")
    with pytest.raises(ValueError):
        sized.sample(n=0)
    with pytest.raises(ValueError, match="no documents"):
        ChunkInspector(ChunkCollection([])).sample()


# -- histogram -----------------------------------------------------------------------


def _png_size(png: bytes) -> tuple[int, int]:
    assert png[:8] == PNG_MAGIC and png[12:16] == b"IHDR"
    return struct.unpack(">II", png[16:24])


def test_histogram_png_is_small_deterministic_and_plain(civic: pa.Table) -> None:
    png = token_histogram_png(civic, title="civic_intelligence")
    assert png.startswith(PNG_MAGIC) and png.endswith(b"IEND\xaeB`\x82")
    assert 2_000 < len(png) < 100_000
    assert _png_size(png) == (640, 272)  # 8.0 x 3.4 in at 80 dpi
    assert png == token_histogram_png(civic, title="civic_intelligence")  # same rows, same bytes
    assert b"matplotlib" not in png and b"Software" not in png  # no version stamp in the file
    col = ChunkCollection.from_table(civic)
    assert token_histogram_png(col, title="civic_intelligence") == png  # a collection or a table
    assert token_histogram_png(list(col), title="civic_intelligence") == png
    assert token_histogram_png(civic.slice(0, 5), title="civic_intelligence") != png


def test_histogram_covers_over_cap_and_empty_tables() -> None:
    over = token_histogram_png(sized_table())  # a 1,600-token chunk widens the axis past the cap
    assert over.startswith(PNG_MAGIC) and len(over) < 100_000
    empty = token_histogram_png(sized_table().slice(0, 0))
    assert empty.startswith(PNG_MAGIC) and _png_size(empty) == (640, 272)


@pytest.mark.png_histogram
def test_histogram_markdown_embeds_the_png(civic: pa.Table) -> None:
    md = token_histogram_markdown(civic)
    prefix = "![token sizes by chunk type](data:image/png;base64,"
    assert md.startswith(prefix) and md.endswith(")")
    assert base64.b64decode(md[len(prefix):-1]) == token_histogram_png(civic)
