"""The index build: BM25 equal to bm25s, reuse on rebuild, versions, edge cases."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from codex_pipeline.core.ids import content_hash
from codex_pipeline.retrieval import Filters, Retriever, build_search_index, read_manifest
from codex_pipeline.retrieval.bm25 import Bm25, TermTable, score_matrix
from codex_pipeline.retrieval.index_format import CURRENT_FILE
from codex_pipeline.retrieval.index_source import chunk_keys
from codex_pipeline.retrieval.lexical import analyze

from .conftest import Tables


def _all_chunks(sample_tables: dict[str, Tables]) -> list[str]:
    return [t for tables in sample_tables.values() for t in tables.chunks.column("chunk_text").to_pylist()]


def test_bm25_scores_equal_bm25s(sample_tables: dict[str, Tables], tmp_path: Path) -> None:
    """bm25s is the oracle: same analyzer output in, the same score for every chunk and query out."""
    bm25s = pytest.importorskip("bm25s")
    texts = _all_chunks(sample_tables)
    analyzed = [analyze(t) for t in texts]
    table = TermTable.build(enumerate(analyzed), len(analyzed))
    from codex_pipeline.retrieval import bm25 as ours

    ours.save(tmp_path, table, score_matrix(table))
    mine = Bm25(tmp_path)
    ref = bm25s.BM25()  # lucene, k1=1.5, b=0.75
    ref.index(analyzed, show_progress=False)
    for query in ("excavation trench", "permit basement suite", "29 cfr 1926.651(k)(1)", "violat violat serious", "zzz"):
        terms = analyze(query)
        got = mine.scores(terms)
        ids = ref.get_tokens_ids(terms)
        want = ref.get_scores_from_ids(ids) if ids else np.zeros(len(texts))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=query)
        assert got.any() or query == "zzz"


def test_term_table_reuse_equals_fresh_analysis(sample_tables: dict[str, Tables]) -> None:
    texts = _all_chunks(sample_tables)
    first = TermTable.build(((i, analyze(t)) for i, t in enumerate(texts[:30])), 30)
    # new rows: some reused (shuffled), some fresh, including texts with terms never seen
    order = list(range(29, -1, -3)) + [30, 31, 32]
    new_texts = [texts[i] for i in order] + ["an entirely new unseenword 1999.77(z)"]
    reuse = np.array([i if i < 30 else -1 for i in order] + [-1], np.int64)
    fresh = ((i, analyze(t)) for i, (r, t) in enumerate(zip(reuse.tolist(), new_texts)) if r < 0)
    rebuilt = TermTable.build(fresh, len(new_texts), first, reuse)
    assert rebuilt.terms[: len(first.terms)] == first.terms
    for i, text in enumerate(new_texts):
        got = [rebuilt.terms[j] for j in rebuilt.term_ids[rebuilt.offsets[i]:rebuilt.offsets[i + 1]]]
        assert got == analyze(text), i


def _edit(tables: Tables, drop: int, change: int) -> tuple[pa.Table, pa.Table, pa.Table, str, str]:
    """Chunks without row ``drop`` and with row ``change`` rewritten; its old vector no longer matches."""
    chunks = tables.chunks
    gone = chunks.column("chunk_id")[drop].as_py()
    changed = chunks.column("chunk_id")[change].as_py()
    texts = chunks.column("chunk_text").to_pylist()
    texts[change] = texts[change] + " Amended: quokka inspection added."
    hashes = chunks.column("content_hash").to_pylist()
    hashes[change] = content_hash(texts[change])
    chunks = chunks.set_column(chunks.schema.get_field_index("chunk_text"), "chunk_text", pa.array(texts, pa.large_string()))
    chunks = chunks.set_column(chunks.schema.get_field_index("content_hash"), "content_hash", pa.array(hashes))
    keep = pc.not_equal(chunks.column("chunk_id"), gone)
    return chunks.filter(keep), tables.raw, tables.embeddings, gone, changed


def test_rebuild_reuses_what_did_not_change(sample_tables: dict[str, Tables], tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    t = sample_tables["permit_signals"]
    root = tmp_path / "data" / "warehouse" / "permit_signals" / "search_index"
    first = build_search_index(root, "permit_signals", t.chunks, t.raw, t.embeddings)
    assert (first.graph, first.vectors_reused, first.terms_reused) == ("built", 0, 0)
    assert first.vectors == first.chunks == t.chunks.num_rows and first.missing_vectors == 0

    chunks, raw, emb, gone, changed = _edit(t, drop=3, change=5)
    second = build_search_index(root, "permit_signals", chunks, raw, emb)
    assert second.graph == "updated"
    assert second.chunks == t.chunks.num_rows - 1
    assert second.terms_reused == second.chunks - 1  # only the changed chunk was analyzed again
    assert second.missing_vectors == 1  # its stored vector was made from the old text: not used
    assert second.vectors_reused == second.vectors == second.chunks - 1

    retriever = Retriever(tmp_path / "data", embedder=embedder)
    assert retriever.get(gone) is None
    hit = retriever.get(changed)
    assert hit is not None and "quokka" in hit.text
    assert [h.chunk_id for h in retriever.search("quokka", k=3, mode="bm25")] == [changed]
    assert changed not in {h.chunk_id for h in retriever.search("quokka", k=50, mode="vector")}  # no vector yet


def test_rebuild_replaces_a_vector_that_changed_for_the_same_text(sample_tables: dict[str, Tables], tmp_path: Path) -> None:
    """Same id and text, another vector (a new pooling recipe): the graph must not keep the old one."""
    t = sample_tables["osha_safety"]
    root = tmp_path / "search_index"
    build_search_index(root, "osha_safety", t.chunks, t.raw, t.embeddings)
    vecs = np.asarray(t.embeddings.column("vector").to_pylist(), np.float32)
    moved = vecs.copy()
    moved[0] = -moved[0]  # one vector changed, everything else equal
    emb = t.embeddings.set_column(t.embeddings.schema.get_field_index("vector"), "vector",
                                  pa.FixedSizeListArray.from_arrays(pa.array(moved.ravel()), vecs.shape[1]))
    second = build_search_index(root, "osha_safety", t.chunks, t.raw, emb)
    assert second.graph == "updated" and second.vectors_reused == second.vectors - 1
    from usearch.index import Index

    from codex_pipeline.retrieval.index_format import VECTORS_FILE, _live_dir

    graph = Index.restore(str(_live_dir(root) / VECTORS_FILE), view=True)  # type: ignore[operator]
    key = chunk_keys(emb.column("chunk_id"))[0]
    stored = np.asarray(graph.get(np.array([key], np.uint64)), np.float32).reshape(-1)
    assert np.allclose(stored, moved[0], atol=2e-3)


def test_versions_swap_atomically_and_old_ones_are_collected(sample_tables: dict[str, Tables], tmp_path: Path) -> None:
    t = sample_tables["osha_safety"]
    root = tmp_path / "search_index"
    names = []
    for _ in range(4):
        names.append(build_search_index(root, "osha_safety", t.chunks, t.raw, t.embeddings).version)
    assert (root / CURRENT_FILE).read_text().strip() == names[-1]
    assert sorted(p.name for p in root.glob("v-*")) == sorted(names[-2:])  # the live one and the one before
    assert not list(root.glob(".tmp-*"))
    assert read_manifest(root).version == names[-1]  # type: ignore[union-attr]


def test_a_failed_build_leaves_the_live_version(sample_tables: dict[str, Tables], tmp_path: Path) -> None:
    t = sample_tables["osha_safety"]
    root = tmp_path / "search_index"
    live = build_search_index(root, "osha_safety", t.chunks, t.raw, t.embeddings).version
    with pytest.raises(KeyError):
        build_search_index(root, "osha_safety", t.chunks.drop_columns(["locator"]), t.raw, t.embeddings)
    assert read_manifest(root).version == live  # type: ignore[union-attr]
    assert not list(root.glob(".tmp-*"))


def test_empty_corpus_and_no_vectors(sample_tables: dict[str, Tables], tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    t = sample_tables["osha_safety"]
    data = tmp_path / "data"
    root = data / "warehouse" / "osha_safety" / "search_index"
    empty = build_search_index(root, "osha_safety", t.chunks.slice(0, 0), t.raw, None)
    assert (empty.chunks, empty.vectors, empty.graph) == (0, 0, "none")
    r = Retriever(data, embedder=embedder)
    assert r.search("excavation") == [] and r.get(t.chunks.column("chunk_id")[0].as_py()) is None

    lexical_only = build_search_index(root, "osha_safety", t.chunks, t.raw, None)
    assert lexical_only.vectors == 0 and lexical_only.missing_vectors == t.chunks.num_rows
    hits = Retriever(data, embedder=embedder).search("excavation", k=3)  # hybrid degrades to BM25
    assert hits and all(set(h.ranks) == {"bm25"} for h in hits)


def test_a_repeated_chunk_id_is_indexed_once_with_its_latest_day(sample_tables: dict[str, Tables], tmp_path: Path) -> None:
    t = sample_tables["osha_safety"]
    older = t.chunks.set_column(
        t.chunks.schema.get_field_index("partition_date"), t.chunks.schema.field("partition_date"),
        pa.array([dt.date(2020, 1, 1)] * t.chunks.num_rows, pa.date32()),
    )
    m = build_search_index(tmp_path / "si", "osha_safety", pa.concat_tables([older, t.chunks]), t.raw, t.embeddings)
    assert m.chunks == t.chunks.num_rows and m.duplicate_chunk_ids == t.chunks.num_rows
    assert m.vectors == m.chunks  # the vectors are the latest day's


def test_keys_are_the_chunk_ids_hex_and_sort_like_them() -> None:
    ids = ["urn:aprs:chunk:00000000000000ff", "urn:aprs:chunk:ffffffffffffffff", "urn:aprs:chunk:0123456789abcdef"]
    keys = chunk_keys(pa.array(ids))
    assert keys.tolist() == [255, 2**64 - 1, 0x0123456789ABCDEF]
    assert np.argsort(keys).tolist() == sorted(range(3), key=lambda i: ids[i])
    other = chunk_keys(pa.array(["not-a-urn", "not-a-urn", "also-not"]))
    assert other[0] == other[1] != other[2]


def test_filters_on_a_selective_type_use_exact_vectors(retriever: Retriever) -> None:
    """A filter leaving few chunks scores them all (no graph recall loss): vector hits are sorted by exact cosine."""
    hits = retriever.search("guarding", k=5, mode="vector", filters=Filters.of(chunk_types=["osha_case_summary"]))
    assert hits and {h.chunk_type for h in hits} == {"osha_case_summary"}
    assert json.loads(json.dumps([h.score for h in hits])) == sorted((h.score for h in hits), reverse=True)


def test_the_graph_searches_deeper_as_it_grows() -> None:
    from codex_pipeline.retrieval.index_format import EXPANSION_MAX, EXPANSION_SEARCH, expansion_search

    sizes = [0, 1, 2000, 60_000, 366_000, 7_300_000, 10**15]
    depths = [expansion_search(n) for n in sizes]
    assert depths == sorted(depths) and depths[0] == EXPANSION_SEARCH and depths[-1] == EXPANSION_MAX
    assert expansion_search(60_000) == 320 and expansion_search(366_000) == 512
