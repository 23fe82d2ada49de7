"""ChunkCollection over contract rows: reading order, neighbours, context, lookup, trees, partitions."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from codex_pipeline.core.documents import SourceDocument
from codex_pipeline.core.ids import content_hash, make_chunk_id, make_doc_id
from codex_pipeline.core.rows import ChunkDraft, ChunkRun, RowBuffer
from codex_pipeline.core.tokens import count_tokens
from codex_pipeline.explore.navigation import Chunk, ChunkCollection
from codex_pipeline.warehouse.catalog import ensure_views
from codex_pipeline.warehouse.storage import Warehouse

DATASET = "manual"
DAY1, DAY2 = dt.date(2026, 11, 24), dt.date(2026, 11, 25)
SHARED = "Shared boilerplate: contact the clerk for records."

# (section_id, chunk_type, text, parent section) in reading order; every text is one line of the doc
DOC_A = [
    ("h1", "doc_section", "Chapter one: the river.", None),
    ("h1.s1", "doc_section", "Section 1.1 covers the levee.", "h1"),
    ("h1.s1.p1", "doc_section", "The levee was raised in 1998.", "h1.s1"),
    ("h1.s1.p2", "doc_section", SHARED, "h1.s1"),
    ("h1.s2", "doc_section", "Section 1.2 covers the bridge.", "h1"),
    ("h2", "doc_section", "Chapter two: the park.", None),
    ("h2.s1", "doc_section", "The park opens at dawn.", "h2"),
]
DOC_B_DAY1 = [
    ("w0", "narrative_window", "Notice B opens here.", None),
    ("w1", "narrative_window", SHARED, None),
    ("w2", "narrative_window", "Notice B ends here.", None),
]
DOC_B_DAY2 = [  # re-landed a day later: first line revised, the shared line gone
    ("w0", "narrative_window", "Notice B opens here, revised.", None),
    ("w2", "narrative_window", "Notice B ends here.", None),
]


def build_table(day: dt.date, docs: dict[str, list[tuple]], dataset: str = DATASET) -> pa.Table:
    """Contract rows through the real RowBuffer: one line of the doc text per chunk."""
    buf = RowBuffer(ChunkRun(dataset, day, "1.0", dt.datetime(2026, 11, 24, 6, tzinfo=dt.UTC)))
    for record_id, parts in docs.items():
        text = "\n".join(p[2] for p in parts)
        doc = SourceDocument(make_doc_id(dataset, record_id), record_id, text, f"{record_id}.txt")
        drafts, pos = [], 0
        for section, ctype, line, parent in parts:
            drafts.append(
                ChunkDraft(section, ctype, line, ((pos, pos + len(line)),), count_tokens(line), parent,
                           metadata={"line": section})
            )
            pos += len(line) + 1
        buf.add_document(doc, drafts)
    return buf.to_table()


def cid(record: str, section: str, dataset: str = DATASET) -> str:
    return make_chunk_id(make_doc_id(dataset, record), section)


def doc(record: str) -> str:
    return make_doc_id(DATASET, record)


def ids(chunks) -> list[str]:
    return [c.chunk_id for c in chunks]


def sections(chunks) -> list[str]:
    return [c.section_id for c in chunks]


@pytest.fixture(scope="module")
def day1() -> pa.Table:
    return build_table(DAY1, {"a": DOC_A, "b": DOC_B_DAY1})


@pytest.fixture(scope="module")
def day2() -> pa.Table:
    return build_table(DAY2, {"b": DOC_B_DAY2})


@pytest.fixture(scope="module")
def col(day1: pa.Table) -> ChunkCollection:
    return ChunkCollection.from_table(day1)


# -- records ------------------------------------------------------------------------


def test_chunk_is_an_immutable_record_of_its_row(col: ChunkCollection) -> None:
    c = col[cid("a", "h1.s1.p1")]
    assert isinstance(c, Chunk)
    with pytest.raises(AttributeError):
        c.chunk_text = "changed"  # type: ignore[misc]
    assert (c.doc_id, c.section_id, c.chunk_type, c.seq_index) == (doc("a"), "h1.s1.p1", "doc_section", 2)
    assert c.parent_chunk_id == cid("a", "h1.s1") and not c.is_top_level
    assert c.token_count == count_tokens(c.text) and c.char_count == len(c.chunk_text)
    assert c.content_hash == content_hash(c.chunk_text)
    assert c.dataset == DATASET and c.partition_date == DAY1 and c.chunking_version == "1.0"
    text_a = "\n".join(p[2] for p in DOC_A)
    start, end = c.char_span
    assert text_a[start:end] == c.chunk_text
    assert c.metadata_dict == {"line": "h1.s1.p1"} and c.get_metadata("line") == "h1.s1.p1"
    assert c.get_metadata("missing", 7) == 7
    assert hash(c) == hash(c._replace()) and c._replace(seq_index=9) != c  # hashable, value semantics


def test_chunk_str_truncates_for_printing(col: ChunkCollection) -> None:
    c = col[cid("a", "h1.s1.p1")]
    assert c.chunk_str(max_chars=9).splitlines() == [
        f"[doc_section] {c.chunk_id} · {doc('a')} #2 · section h1.s1.p1 · {c.token_count} tokens · 2026-11-24",
        f"parent: {cid('a', 'h1.s1')}",
        "The levee … [+20 chars]",
    ]
    assert c.chunk_str(max_chars=None).splitlines()[-1] == "The levee was raised in 1998."
    top = col[cid("a", "h1")]
    assert len(top.chunk_str(500).splitlines()) == 2 and top.chunk_str(500).endswith("Chapter one: the river.")


# -- list-like, documents, reading order --------------------------------------------


def test_documents_and_reading_order(col: ChunkCollection) -> None:
    assert col.documents == (doc("a"), doc("b"))
    assert len(col) == 10 and repr(col) == "ChunkCollection(10 chunks, 2 documents)"
    assert sections(col.document_chunks(doc("a"))) == [p[0] for p in DOC_A]
    assert [c.seq_index for c in col.document_chunks(doc("b"))] == [0, 1, 2]
    assert sections(col) == [p[0] for p in DOC_A] + [p[0] for p in DOC_B_DAY1]
    assert col[0].section_id == "h1" and col[-1].section_id == "w2" and sections(col[7:9]) == ["w0", "w1"]
    assert cid("a", "h2") in col and "urn:aprs:chunk:0000000000000000" not in col and col[3] in col
    assert col.index(cid("b", "w0")) == 7 and col.index(col[4]) == 4
    assert col.datasets == (DATASET,) and col.partitions == (DAY1,) and col.superseded == {}
    with pytest.raises(KeyError, match="document urn:aprs:manual:zzz is not in this collection"):
        col.document_chunks(doc("zzz"))


def test_order_is_independent_of_row_order(day1: pa.Table) -> None:
    shuffled = day1.take(pa.array([9, 3, 0, 7, 5, 1, 8, 2, 6, 4]))
    assert list(ChunkCollection.from_table(shuffled)) == list(ChunkCollection.from_table(day1))


def test_top_level_chunks(col: ChunkCollection) -> None:
    assert sections(col.top_level_chunks()) == ["h1", "h2", "w0", "w1", "w2"]
    assert sections(col.top_level_chunks(doc("a"))) == ["h1", "h2"]


# -- neighbours and context ---------------------------------------------------------


def test_neighbours_stay_inside_the_document(col: ChunkCollection) -> None:
    nb = col.neighbours(cid("a", "h1.s1.p2"), before=2, after=2)
    assert sections(nb.before) == ["h1.s1", "h1.s1.p1"] and sections(nb.after) == ["h1.s2", "h2"]
    assert col.neighbours(cid("a", "h1.s1.p2")) == ((col[2],), (col[4],))  # default 1 / 1
    assert col.neighbours(cid("a", "h1"), before=3, after=1) == ((), (col[1],))
    last_a = col.neighbours(cid("a", "h2.s1"), before=1, after=5)
    assert sections(last_a.before) == ["h2"] and last_a.after == ()  # not doc b's first chunk
    first_b = col.neighbours(col[cid("b", "w0")], before=4, after=10)
    assert first_b.before == () and sections(first_b.after) == ["w1", "w2"]
    assert col.neighbours(cid("b", "w1"), before=0, after=0) == ((), ())
    with pytest.raises(ValueError):
        col.neighbours(cid("b", "w1"), before=-1)
    with pytest.raises(KeyError, match="is not in this collection"):
        col.neighbours("urn:aprs:chunk:0000000000000000")


def test_context_has_neighbours_parent_and_children(col: ChunkCollection) -> None:
    ctx = col.context(cid("a", "h1.s1"), before=1, after=2)
    assert ctx.chunk is col[cid("a", "h1.s1")]
    assert sections(ctx.before) == ["h1"] and sections(ctx.after) == ["h1.s1.p1", "h1.s1.p2"]
    assert ctx.parent is col[cid("a", "h1")]
    assert sections(ctx.children) == ["h1.s1.p1", "h1.s1.p2"]
    assert (ctx.position, ctx.document_size) == (1, 7)
    root = col.context(cid("b", "w2"), before=1, after=1)
    assert root.parent is None and root.children == () and sections(root.before) == ["w1"] and root.after == ()
    assert (root.position, root.document_size) == (2, 3)


def test_context_renders_previews_around_the_full_chunk(col: ChunkCollection) -> None:
    text = col.context(cid("a", "h1.s1"), before=1, after=1).render(preview_chars=12)
    p1 = col[cid("a", "h1.s1.p1")]
    h1 = col[cid("a", "h1")]
    assert text.splitlines() == [
        f"document {doc('a')} · chunk 2 of 7",
        f"parent   #0 [doc_section] h1 ({h1.token_count} tok) {h1.chunk_id}: Chapter one: … [+11 chars]",
        f"  before #0 [doc_section] h1 ({h1.token_count} tok) {h1.chunk_id}: Chapter one: … [+11 chars]",
        f"> {col[cid('a', 'h1.s1')].header()}",
        "  | Section 1.1 covers the levee.",
        f"  after  #2 [doc_section] h1.s1.p1 ({p1.token_count} tok) {p1.chunk_id}: The levee wa … [+17 chars]",
        "children (2)",
        f"  child  #2 [doc_section] h1.s1.p1 ({p1.token_count} tok) {p1.chunk_id}: The levee wa … [+17 chars]",
        f"  child  #3 [doc_section] h1.s1.p2 ({col[3].token_count} tok) {col[3].chunk_id}: Shared boile … [+38 chars]",
    ]
    assert str(col.context(cid("b", "w0"))).splitlines()[1] == "parent   (none: top-level chunk)"


# -- lookup -------------------------------------------------------------------------


def test_lookup_by_chunk_id_and_content_hash(col: ChunkCollection) -> None:
    c = col.get(cid("a", "h2"))
    assert c is not None and c.chunk_text == "Chapter two: the park."
    assert col.get("urn:aprs:chunk:0000000000000000") is None
    with pytest.raises(KeyError):
        col["urn:aprs:chunk:0000000000000000"]
    shared = content_hash(SHARED)
    assert ids(col.by_hash(shared)) == [cid("a", "h1.s1.p2"), cid("b", "w1")]  # same text, two documents
    assert col.get_by_hash(shared) is col[cid("a", "h1.s1.p2")]
    assert col.by_hash(content_hash("The park opens at dawn.")) == (col[cid("a", "h2.s1")],)
    assert col.by_hash(content_hash("nowhere")) == () and col.get_by_hash("0" * 64) is None


def test_content_hash_computed_when_the_column_is_missing(day1: pa.Table) -> None:
    bare = day1.drop_columns(["content_hash", "char_count", "metadata", "locator"])
    col = ChunkCollection.from_table(bare)
    assert col.get_by_hash(content_hash(SHARED)).chunk_id == cid("a", "h1.s1.p2")
    assert col[0].char_count == len(col[0].chunk_text) and col[0].metadata is None
    with pytest.raises(ValueError, match="no column\\(s\\) chunk_text"):
        ChunkCollection.from_table(day1.drop_columns(["chunk_text"]))


# -- trees --------------------------------------------------------------------------


def test_parent_children_ancestors_descendants(col: ChunkCollection) -> None:
    p2 = cid("a", "h1.s1.p2")
    assert col.parent(p2) is col[cid("a", "h1.s1")]
    assert col.parent(cid("a", "h1")) is None and col.parent(cid("b", "w1")) is None
    assert sections(col.children(cid("a", "h1"))) == ["h1.s1", "h1.s2"]
    assert sections(col.children(col[cid("a", "h1.s1")])) == ["h1.s1.p1", "h1.s1.p2"]
    assert col.children(p2) == () and col.children(cid("b", "w0")) == ()
    assert sections(col.ancestors(p2)) == ["h1.s1", "h1"]
    assert col.ancestors(cid("a", "h2")) == ()
    assert sections(col.descendants(cid("a", "h1"))) == ["h1.s1", "h1.s1.p1", "h1.s1.p2", "h1.s2"]
    assert sections(col.descendants(cid("a", "h2"))) == ["h2.s1"]


def test_every_parent_link_agrees_with_the_table(col: ChunkCollection) -> None:
    for c in col:
        parent = col.parent(c)
        if c.parent_chunk_id is None:
            assert parent is None
        else:
            assert parent.chunk_id == c.parent_chunk_id and parent.doc_id == c.doc_id
            assert c in col.children(parent)
            assert col.ancestors(c)[0] is parent and col.ancestors(c)[-1].is_top_level


def test_a_cycle_does_not_hang_ancestors() -> None:
    base = dict(doc_id="urn:aprs:x:1", chunk_type="t", token_count=1, char_count=1, chunk_text="x")
    a = Chunk(chunk_id="c:a", section_id="a", seq_index=0, parent_chunk_id="c:b", **base)
    b = Chunk(chunk_id="c:b", section_id="b", seq_index=1, parent_chunk_id="c:a", **base)
    col = ChunkCollection([a, b])
    assert ids(col.ancestors("c:a")) == ["c:b"] and ids(col.descendants("c:a")) == ["c:b"]


def test_duplicate_chunk_ids_in_one_partition_are_refused(day1: pa.Table) -> None:
    with pytest.raises(ValueError, match="duplicate chunk_id"):
        ChunkCollection.from_table(pa.concat_tables([day1, day1]))


# -- partitions ---------------------------------------------------------------------


def test_latest_partition_of_each_document_wins(day1: pa.Table, day2: pa.Table) -> None:
    both = pa.concat_tables([day2, day1])
    col = ChunkCollection.from_table(both)
    assert col.documents == (doc("a"), doc("b"))
    assert sections(col.document_chunks(doc("b"))) == ["w0", "w2"]  # day 2's version, whole
    assert col[cid("b", "w0")].chunk_text == "Notice B opens here, revised."
    assert col[cid("b", "w2")].seq_index == 1 and col[cid("b", "w2")].partition_date == DAY2
    assert cid("b", "w1") not in col  # dropped on day 2: not carried over from day 1
    assert {c.partition_date for c in col.document_chunks(doc("a"))} == {DAY1}
    assert col.superseded == {doc("b"): (DAY1,)} and col.partitions == (DAY1, DAY2)
    assert ids(col.by_hash(content_hash(SHARED))) == [cid("a", "h1.s1.p2")]


def test_a_partition_shows_the_collection_as_of_that_day(day1: pa.Table, day2: pa.Table) -> None:
    both = pa.concat_tables([day1, day2])
    old = ChunkCollection.from_table(both, partition=DAY1)
    assert list(old) == list(ChunkCollection.from_table(day1)) and old.superseded == {}
    new = ChunkCollection.from_table(both, partition="2026-11-25")
    assert new.documents == (doc("b"),) and sections(new) == ["w0", "w2"]
    assert len(ChunkCollection.from_table(both, partition=dt.date(2030, 1, 1))) == 0


def test_dataset_filter(day1: pa.Table) -> None:
    other = build_table(DAY1, {"z": [("only", "event", "Another dataset's row.", None)]}, dataset="other")
    mixed = pa.concat_tables([day1, other])
    assert ChunkCollection.from_table(mixed).documents == (doc("a"), doc("b"), "urn:aprs:other:z")
    assert ChunkCollection.from_table(mixed, dataset="other").documents == ("urn:aprs:other:z",)
    assert len(ChunkCollection.from_table(mixed, dataset=DATASET)) == 10


# -- sources: Parquet, DuckDB, the warehouse ----------------------------------------


def _write(tmp: Path, day1: pa.Table, day2: pa.Table) -> Path:
    folder = tmp / "chunks"
    folder.mkdir()
    pq.write_table(day1, folder / "2026-11-24.parquet")
    pq.write_table(day2, folder / "2026-11-25.parquet")
    return folder


def test_from_parquet_files_folder_and_glob(tmp_path: Path, day1: pa.Table, day2: pa.Table) -> None:
    folder = _write(tmp_path, day1, day2)
    expected = list(ChunkCollection.from_table(pa.concat_tables([day1, day2])))
    assert list(ChunkCollection.from_parquet(folder)) == expected
    assert list(ChunkCollection.from_parquet(str(folder / "*.parquet"))) == expected
    assert list(ChunkCollection.from_parquet(sorted(folder.glob("*.parquet")))) == expected
    one = ChunkCollection.from_parquet(folder / "2026-11-24.parquet")
    assert list(one) == list(ChunkCollection.from_table(day1))
    assert len(ChunkCollection.from_parquet(folder, partition=DAY2)) == 2
    with pytest.raises(FileNotFoundError):
        ChunkCollection.from_parquet(folder / "nope.parquet")
    with pytest.raises(FileNotFoundError):
        ChunkCollection.from_parquet(str(folder / "*.csv"))


def test_from_duckdb_view_pushes_filters_and_latest_rule(tmp_path: Path, day1: pa.Table, day2: pa.Table) -> None:
    folder = _write(tmp_path, day1, day2)
    con = duckdb.connect()
    con.execute("CREATE SCHEMA codex")
    con.execute(f"CREATE VIEW codex.manual_chunks AS SELECT * FROM read_parquet('{folder}/*.parquet')")
    latest = ChunkCollection.from_duckdb(con, "codex.manual_chunks")
    assert list(latest) == list(ChunkCollection.from_table(pa.concat_tables([day1, day2])))
    assert latest.superseded == {doc("b"): (DAY1,)}
    assert list(ChunkCollection.from_duckdb(con, "codex.manual_chunks", partition=DAY1)) == list(
        ChunkCollection.from_table(day1)
    )
    only_b = ChunkCollection.from_duckdb(con, "codex.manual_chunks", doc_ids=[doc("b")])
    assert only_b.documents == (doc("b"),) and sections(only_b) == ["w0", "w2"]
    assert len(ChunkCollection.from_duckdb(con, "codex.manual_chunks", dataset="other")) == 0
    with pytest.raises(ValueError, match="not a table or view name"):
        ChunkCollection.from_duckdb(con, "codex.manual_chunks; DROP SCHEMA codex")
    con.execute("CREATE TABLE codex.not_chunks AS SELECT 1 AS x")
    with pytest.raises(ValueError, match="is not a chunk table"):
        ChunkCollection.from_duckdb(con, "codex.not_chunks")
    con.close()


def test_from_catalog_and_warehouse(tmp_path: Path, day1: pa.Table, day2: pa.Table) -> None:
    wh = Warehouse(tmp_path / "data")
    wh.write(day1, DATASET, "chunks", DAY1)
    wh.write(day2, DATASET, "chunks", DAY2)
    assert ensure_views(wh, [(DATASET, "chunks")]) == ["manual_chunks"]
    expected = list(ChunkCollection.from_table(pa.concat_tables([day1, day2])))
    assert list(ChunkCollection.from_catalog(wh, DATASET)) == expected
    assert list(ChunkCollection.from_catalog(str(wh.root), DATASET, partition=DAY1)) == list(
        ChunkCollection.from_table(day1)
    )
    assert list(ChunkCollection.from_warehouse(wh, DATASET)) == expected
    assert len(ChunkCollection.from_warehouse(wh.root, DATASET, partition="2026-11-25")) == 2


def test_resolve_follows_redirects(tmp_path: Path, day1: pa.Table) -> None:
    from codex_pipeline.redirects.matching import compute_redirects

    renamed = {"a": [("h9" if s == "h2.s1" else s, *rest) for s, *rest in DOC_A], "b": DOC_B_DAY1[:2]}
    day1b = build_table(DAY1, renamed)
    redirects = compute_redirects(day1, day1b, dataset=DATASET, partition_date=DAY1, chunking_version="1.0")
    col = ChunkCollection.from_table(day1b, redirects=redirects)
    assert col.resolve(cid("a", "h1")) is col[cid("a", "h1")]  # present: itself
    assert col.resolve(cid("a", "h2.s1")) is col[cid("a", "h9")]  # renamed, same text
    assert col.resolve(cid("b", "w2")) is None  # the redirect table says it is gone
    with pytest.raises(KeyError, match="redirect table"):
        col.resolve(cid("a", "never"))
    with pytest.raises(KeyError):
        ChunkCollection.from_table(day1b).resolve(cid("a", "h2.s1"))  # no redirect table given
    # stale rows that loop (never written by Codex, but files can be edited by hand) end in a clear error
    loop = pa.table({"old_chunk_id": [cid("a", "x"), cid("a", "y")], "new_chunk_id": [cid("a", "y"), cid("a", "x")],
                     "dataset": [DATASET] * 2, "partition_date": [DAY1] * 2})
    with pytest.raises(KeyError, match="loop back"):
        ChunkCollection.from_table(day1b, redirects=loop).resolve(cid("a", "x"))

    wh = Warehouse(tmp_path / "data")
    wh.write(day1b, DATASET, "chunks", DAY1)
    wh.write(redirects, DATASET, "redirects", DAY1)
    ensure_views(wh, [(DATASET, "chunks"), (DATASET, "redirects")])
    for loaded in (ChunkCollection.from_catalog(wh, DATASET), ChunkCollection.from_warehouse(wh, DATASET, partition=DAY1)):
        assert loaded.resolve(cid("a", "h2.s1")).section_id == "h9"
        assert loaded.resolve(cid("b", "w2")) is None


def test_current_corpus_from_catalog_and_warehouse(tmp_path: Path, day1: pa.Table, day2: pa.Table) -> None:
    """With a document index: the current corpus by default, the history and a day on request."""
    from codex_pipeline.warehouse.current import update_index

    def landed(table: pa.Table) -> pa.Table:
        docs = sorted(set(table.column("doc_id").to_pylist()))
        return pa.table({"doc_id": docs, "record_id": [d.rsplit(":", 1)[1] for d in docs], "source_file": docs})

    wh = Warehouse(tmp_path / "data")
    for day, table in ((DAY2, day2), (DAY1, day1)):  # landed out of order: day 2 stays current for b
        wh.write(table, DATASET, "chunks", day)
        update_index(wh, DATASET, day, landed=landed(table))
    ensure_views(wh, [(DATASET, "chunks"), (DATASET, "redirects")])
    latest = list(ChunkCollection.from_table(pa.concat_tables([day1, day2])))
    for current in (ChunkCollection.from_catalog(wh, DATASET), ChunkCollection.from_warehouse(wh, DATASET)):
        assert list(current) == latest and current.superseded == {doc("b"): (DAY1,)}

    update_index(wh, DATASET, DAY2 + dt.timedelta(days=1), tombstones=pa.table({"record_id": ["a"], "source_file": ["_deleted.txt"]}))
    ensure_views(wh, [(DATASET, "redirects")])
    for current in (ChunkCollection.from_catalog(wh, DATASET), ChunkCollection.from_warehouse(wh, DATASET)):
        assert current.documents == (doc("b"),) and sections(current) == ["w0", "w2"]
        assert current.resolve(cid("a", "h1")) is None  # retracted: its ids redirect to nothing
    for history in (ChunkCollection.from_catalog(wh, DATASET, history=True), ChunkCollection.from_warehouse(wh, DATASET, history=True)):
        assert list(history) == latest  # every document ever landed, the retracted one too
    assert list(ChunkCollection.from_catalog(wh, DATASET, partition=DAY1)) == list(ChunkCollection.from_table(day1))
