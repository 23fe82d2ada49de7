"""The `[dataset, search_index]` asset through real Dagster: the index is the current corpus, always.

After every materialization the index must hold exactly the chunks `codex.<ds>_chunks`
serves (same ids, same days, same text), and `codex search` must return nothing else:
after a backfill of an older day, a retraction, and a re-chunk with other limits.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import io
import json

import dagster as dg
import pytest

from codex_pipeline.chunkers.narrative import WindowLimits
from codex_pipeline.cli import app as cli
from codex_pipeline.core.ids import content_hash
from codex_pipeline.datasets.registry import DatasetSpec, get_dataset
from codex_pipeline.defs.assets import build_dataset_assets
from codex_pipeline.defs.resources import CodexWarehouse, EmbeddingSettings
from codex_pipeline.defs.search_assets import build_search_index_asset
from codex_pipeline.retrieval import Filters, Retriever, index_root, read_manifest
from codex_pipeline.retrieval.settings import DEFAULT
from codex_pipeline.warehouse.catalog import connect_catalog
from codex_pipeline.warehouse.storage import Warehouse

#: How far one vector component may move when the same text is embedded in another batch: in bf16
#: (CPUs with bf16 units) the padded width of the batch changes rounding, up to ~5e-4 (fp32: 1e-7).
BF16_BATCH_TOLERANCE = 1e-3

D1, D2, D3 = (dt.date(2026, 11, d) for d in (1, 2, 3))
NARRATIVE = get_dataset("narrative")
NS = "urn:aprs:narrative:"

BRIDGE_V1 = (
    "The wombat crossing on Elm Street bridge reopens on Monday. Crews finished the deck repairs. "
    "Residents asked about the detour signs near the school. " * 6
)
BRIDGE_V2 = (
    "The quokka underpass on Elm Street bridge stays closed until March. Inspectors found corrosion "
    "in two girders and ordered new bearings. " * 6
)
LIBRARY = (
    "The library board approved the budget for the new reading room. Opening hours extend to nine "
    "on weekdays, and the children's section gets new shelves. " * 8
)


def land(wh: Warehouse, day: dt.date, files: dict[str, str]) -> None:
    folder = wh.landing_dir("narrative", day)
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)


def materialize(wh: Warehouse, day: dt.date, spec: DatasetSpec = NARRATIVE) -> dg.ExecuteInProcessResult:
    result = dg.materialize(
        [*build_dataset_assets(spec), build_search_index_asset(spec)],
        partition_key=day.isoformat(),
        resources={"warehouse": CodexWarehouse(data_dir=str(wh.root)), "embedding": EmbeddingSettings()},
        raise_on_error=False,
    )
    assert result.success
    return result


def current_view(wh: Warehouse) -> set[tuple[str, dt.date, str]]:
    con = connect_catalog(wh)
    try:
        rows = con.execute("SELECT chunk_id, partition_date, content_hash FROM codex.narrative_chunks").fetchall()
    finally:
        con.close()
    return set(rows)


def indexed(wh: Warehouse) -> set[tuple[str, dt.date, str]]:
    rows = Retriever(wh.root, ["narrative"]).index("narrative").rows
    return set(zip(rows.column("chunk_id").to_pylist(), rows.column("partition_date").to_pylist(),
                   rows.column("content_hash").to_pylist()))


def assert_index_is_the_current_corpus(wh: Warehouse) -> None:
    view = current_view(wh)
    assert view and indexed(wh) == view
    manifest = read_manifest(index_root(wh, "narrative"))
    assert manifest is not None and manifest.vectors == manifest.chunks == len(view)  # every chunk has its vector


def codex_search(wh: Warehouse, *argv: str) -> list[dict[str, object]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        rc = cli.main(["--data-dir", str(wh.root), "search", *argv, "--json", "--no-refresh"])
    assert rc == 0
    return json.loads(out.getvalue())  # type: ignore[no-any-return]


def doc_ids(hits: list[dict[str, object]]) -> set[object]:
    return {h["doc_id"] for h in hits}


@pytest.fixture
def wh(warehouse: Warehouse) -> Warehouse:
    return warehouse


@pytest.mark.slow  # the real local model: materialized and searched with it (codex search embeds with the configured model)
def test_index_follows_backfill_delete_and_rechunk(wh: Warehouse) -> None:
    # day 2 lands first: the bridge notice (v2) and the library minutes
    land(wh, D2, {"bridge.txt": BRIDGE_V2, "library.txt": LIBRARY})
    materialize(wh, D2)
    assert_index_is_the_current_corpus(wh)
    assert doc_ids(codex_search(wh, "quokka underpass corrosion", "-k", "3")) >= {NS + "bridge.txt"}

    # backfill of an older day: v1 of the bridge notice must not become current, nor searchable
    land(wh, D1, {"bridge.txt": BRIDGE_V1, "council.txt": "Council recessed at nine. " * 30})
    materialize(wh, D1)
    assert_index_is_the_current_corpus(wh)
    for mode in ("bm25", "vector", "hybrid"):
        hits = codex_search(wh, "Elm Street bridge", "-k", "10", "--mode", mode)
        bridge = [h for h in hits if h["doc_id"] == NS + "bridge.txt"]
        assert bridge and all(h["partition_date"] == D2.isoformat() for h in bridge), mode
        assert all("wombat" not in str(h["text"]) for h in codex_search(wh, "wombat", "-k", "10", "--mode", mode)), mode
    assert NS + "council.txt" in doc_ids(codex_search(wh, "council recessed", "-k", "3"))

    # a retraction on day 3: the bridge notice is gone from the index and from every search
    land(wh, D3, {"_deleted.txt": "bridge.txt\n"})
    materialize(wh, D3)
    assert_index_is_the_current_corpus(wh)
    for mode in ("bm25", "vector", "hybrid"):
        assert NS + "bridge.txt" not in doc_ids(codex_search(wh, "quokka underpass Elm Street bridge", "-k", "10", "--mode", mode))
    assert NS + "library.txt" in doc_ids(codex_search(wh, "library reading room budget", "-k", "3"))

    # a re-chunk of day 2 with other window limits: new ids replace the old ones in the index
    before = indexed(wh)
    small = dataclasses.replace(NARRATIVE, limits=WindowLimits(window_tokens=80, overlap_tokens=10))
    assert small.chunking_version != NARRATIVE.chunking_version
    materialize(wh, D2, small)
    assert_index_is_the_current_corpus(wh)
    after = indexed(wh)
    assert after != before and len(after) > len(before)
    retriever = Retriever(wh.root, ["narrative"])
    # window ids are positional: the old ids survive with new text, the index serves only the new text
    new_hash = {cid: h for cid, _, h in after}
    rewritten = [cid for cid, _, h in before if cid in new_hash and new_hash[cid] != h]
    assert rewritten
    for cid in rewritten:
        hit = retriever.get(cid)
        assert hit is not None and content_hash(hit.text) == new_hash[cid]
    hits = retriever.search("library reading room", k=5, filters=Filters.of(chunk_types=["narrative_window"]))
    assert hits and all(h.doc_id != NS + "bridge.txt" for h in hits)
    assert all(len(h.text) < len(LIBRARY) for h in hits)  # the small windows


@pytest.mark.slow  # the real local model: materialized and searched with it (codex search embeds with the configured model)
def test_unchanged_inputs_do_not_rebuild(wh: Warehouse) -> None:
    land(wh, D1, {"library.txt": LIBRARY})
    first = materialize(wh, D1)
    again = materialize(wh, D1)  # raw/chunks/embeddings rewrite their files: a rebuild, reusing everything
    (m1,) = first.asset_materializations_for_node("narrative__search_index")
    (m2,) = again.asset_materializations_for_node("narrative__search_index")
    assert m2.metadata["vectors_reused"].value == m1.metadata["vectors"].value
    assert m2.metadata["terms_reused"].value == m1.metadata["chunks"].value
    result = dg.materialize(
        [build_search_index_asset(NARRATIVE)],
        partition_key=D1.isoformat(),
        resources={"warehouse": CodexWarehouse(data_dir=str(wh.root)), "embedding": EmbeddingSettings()},
        selection=[dg.AssetKey(["narrative", "search_index"])],
    )
    (m3,) = result.asset_materializations_for_node("narrative__search_index")
    assert m3.metadata["rebuilt"].value is False and m3.metadata["version"].value == m2.metadata["version"].value

    # the text output: one key=value line per hit, then locator, evidence span and context
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert cli.main(["--data-dir", str(wh.root), "search", "children's section shelves", "-k", "2"]) == 0
    lines = out.getvalue().splitlines()
    first = dict(f.split("=", 1) for f in lines[0].split())
    assert first["rank"] == "1" and first["doc_id"] == NS + "library.txt" and first["dataset"] == "narrative"
    assert lines[1].strip().startswith("locator:") and lines[2].strip().startswith("evidence: [")
    raw = Warehouse(wh.root).read("narrative", "raw", D1).to_pylist()[0]["canonical_text"]
    start, end = (int(x) for x in lines[2].split("[", 1)[1].split("]", 1)[0].split(":"))
    assert "shelves" in raw[start:end] and lines[2].split("] ", 1)[1].startswith(" ".join(raw[start:end].split())[:50])


def test_the_code_location_registers_a_search_index_per_chunked_dataset() -> None:
    from codex_pipeline.datasets.registry import default_registry
    from codex_pipeline.defs import defs

    keys = {k for k in defs.resolve_all_asset_keys() if k.path[-1] == "search_index"}
    assert keys == {dg.AssetKey([s.name, "search_index"]) for s in default_registry() if s.chunked}
    job = defs.resolve_job_def("codex_all")
    assert dg.AssetKey(["narrative", "search_index"]) in job.asset_layer.executable_asset_keys


class CountingEmbedder:
    """The real local embedder, counting the texts it is asked to embed."""

    def __init__(self) -> None:
        from codex_pipeline.embeddings import make_embedder

        self.inner = make_embedder("local")
        self.model, self.version, self.dimensions = self.inner.model, self.inner.version, self.inner.dimensions
        self.texts: list[str] = []

    def embed(self, texts, on_batch=None):  # type: ignore[no-untyped-def]
        self.texts += list(texts)
        return self.inner.embed(texts, on_batch=on_batch)


@pytest.mark.slow  # the real local model: materialized and searched with it (codex search embeds with the configured model)
def test_evidence_units_are_embedded_at_materialization_and_a_query_embeds_only_itself(wh: Warehouse) -> None:
    from codex_pipeline.retrieval.units import chunk_units, unit_key

    land(wh, D1, {"library.txt": LIBRARY, "bridge.txt": BRIDGE_V2, "pool.txt": "The pool opens at noon on Saturdays."})
    result = materialize(wh, D1)
    (emb,) = result.asset_materializations_for_node("narrative__embeddings")
    units = Warehouse(wh.root).read("narrative", "evidence_units", D1)
    assert units.num_rows == emb.metadata["evidence_units"].value > 0
    con = connect_catalog(wh)
    try:  # queryable like the embeddings: a current view and its history
        assert con.execute("SELECT count(*) FROM codex.narrative_evidence_units").fetchone() == (units.num_rows,)
        assert con.execute("SELECT count(*) FROM codex.narrative_evidence_units_history").fetchone() == (units.num_rows,)
    finally:
        con.close()
    # each stored unit is the unit of its chunk's text, keyed by the text it was embedded from
    chunks = {r["chunk_id"]: r for r in Warehouse(wh.root).read("narrative", "chunks", D1).to_pylist()}
    raw = {r["doc_id"]: r["canonical_text"] for r in Warehouse(wh.root).read("narrative", "raw", D1).to_pylist()}
    for row in units.to_pylist():
        c = chunks[row["chunk_id"]]
        expected = chunk_units(raw[c["doc_id"]], json.loads(c["evidence_anchor"]).get("spans")
                               or [json.loads(c["evidence_anchor"])["char_span"]], c["metadata"])
        assert int(row["input_hash"][:16], 16) == unit_key(expected.texts[row["unit_index"]])
    manifest = read_manifest(index_root(wh, "narrative"))
    assert manifest is not None and manifest.units == units.num_rows

    # a chunk of several units is embedded as its units: its vector is their length-weighted mean
    import numpy as np

    emb_rows = {r["chunk_id"]: r for r in Warehouse(wh.root).read("narrative", "embeddings", D1).to_pylist()}
    assert set(emb_rows) == set(chunks)
    by_chunk: dict[str, list[dict[str, object]]] = {}
    for row in units.to_pylist():
        by_chunk.setdefault(row["chunk_id"], []).append(row)
    model = CountingEmbedder()
    for cid, rows in by_chunk.items():
        c = chunks[cid]
        texts = chunk_units(raw[c["doc_id"]], json.loads(c["evidence_anchor"]).get("spans")
                            or [json.loads(c["evidence_anchor"])["char_span"]], c["metadata"]).texts
        mean = sum(len(texts[r["unit_index"]]) * np.asarray(r["vector"], np.float64) for r in rows)
        assert np.allclose(np.asarray(emb_rows[cid]["vector"]), mean / np.linalg.norm(mean), atol=1e-6)
        # within BF16_BATCH_TOLERANCE: in bf16 a text's vector moves with its batch's padded width
        assert np.allclose(model.embed(texts).vectors, np.asarray([r["vector"] for r in rows]), atol=BF16_BATCH_TOLERANCE)
    single = next(cid for cid in chunks if cid not in by_chunk)
    assert np.allclose(model.embed([chunks[single]["chunk_text"]]).vectors[0], emb_rows[single]["vector"],
                       atol=BF16_BATCH_TOLERANCE)

    counting = CountingEmbedder()
    retriever = Retriever(wh.root, ["narrative"], embedder=counting)
    for mode in ("vector", "hybrid"):
        hits = retriever.search("children's section shelves", k=5, mode=mode)
        assert hits and any(len(h.evidence) and h.evidence != h.spans for h in hits)  # a unit, not the chunk
    assert counting.texts == ["children's section shelves"] * 2  # no unit embedded at query time

    # units are told apart by the query's words by default (RetrievalSettings.unit_vector_weight 0): an old index
    # without stored units answers the same, embedding nothing but the query
    old = Retriever(wh.root, ["narrative"], embedder=CountingEmbedder())
    old.index("narrative").units = None
    again = old.search("children's section shelves", k=5, mode="hybrid")
    assert [(h.chunk_id, h.evidence) for h in again] == [(h.chunk_id, h.evidence) for h in hits]
    assert old.embedder.texts == ["children's section shelves"]  # type: ignore[attr-defined]

    # with the cosine weighed in, the stored unit vectors are read, and an old index embeds its units at query time
    cosine = dataclasses.replace(DEFAULT, unit_vector_weight=1.0)
    stored = Retriever(wh.root, ["narrative"], embedder=CountingEmbedder(), settings=cosine)
    by_cosine = stored.search("children's section shelves", k=5, mode="hybrid")
    assert stored.embedder.texts == ["children's section shelves"]  # type: ignore[attr-defined]
    baseline = Retriever(wh.root, ["narrative"], embedder=CountingEmbedder(), settings=cosine)
    baseline.index("narrative").units = None
    again = baseline.search("children's section shelves", k=5, mode="hybrid")
    assert [(h.chunk_id, h.evidence) for h in again] == [(h.chunk_id, h.evidence) for h in by_cosine]
    assert len(baseline.embedder.texts) > 1  # type: ignore[attr-defined]


@pytest.mark.slow  # the real local model: materialized and searched with it (codex search embeds with the configured model)
def test_a_chunk_of_one_unit_is_embedded_with_its_context_prefix(wh: Warehouse) -> None:
    from codex_pipeline.retrieval.units import chunk_units, context_prefix, unit_key

    docs = get_dataset("docs")
    folder = wh.landing_dir("docs", D1)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pool.md").write_text("# City pool\n\n## Opening hours\n\nThe pool opens at noon on Saturdays.\n")
    materialize(wh, D1, docs)
    store = Warehouse(wh.root)
    chunks = {r["chunk_id"]: r for r in store.read("docs", "chunks", D1).to_pylist()}
    raw = {r["doc_id"]: r["canonical_text"] for r in store.read("docs", "raw", D1).to_pylist()}
    units = {r["chunk_id"]: r for r in store.read("docs", "evidence_units", D1).to_pylist()}
    emb = {r["chunk_id"]: r for r in store.read("docs", "embeddings", D1).to_pylist()}
    hours = next(c for c in chunks.values() if "noon" in c["chunk_text"] and context_prefix(c["metadata"]))
    spans = json.loads(hours["evidence_anchor"]).get("spans") or [json.loads(hours["evidence_anchor"])["char_span"]]
    (text,) = chunk_units(raw[hours["doc_id"]], spans, hours["metadata"]).texts  # one unit
    assert "City pool" in context_prefix(hours["metadata"]) and text.startswith(context_prefix(hours["metadata"]))
    unit = units[hours["chunk_id"]]  # stored as its one unit, keyed by the prefixed text
    assert int(unit["input_hash"][:16], 16) == unit_key(text)
    import numpy as np

    vec = np.asarray(unit["vector"], np.float64)
    assert np.allclose(np.asarray(emb[hours["chunk_id"]]["vector"]), vec / np.linalg.norm(vec), atol=1e-6)
    assert emb[hours["chunk_id"]]["input_hash"] == hours["content_hash"]  # the views still find it by its text
    model = CountingEmbedder()
    assert np.allclose(model.embed([text]).vectors[0], vec, atol=BF16_BATCH_TOLERANCE)
    assert not np.allclose(model.embed([hours["chunk_text"]]).vectors[0], vec, atol=1e-3)  # not the bare text
    owners = [r["chunk_id"] for r in store.read("docs", "evidence_units", D1).to_pylist()]
    manifest = read_manifest(index_root(wh, "docs"))  # the search index keeps only units that can be cited
    assert manifest is not None and manifest.units == sum(1 for o in owners if owners.count(o) > 1) < len(owners)
