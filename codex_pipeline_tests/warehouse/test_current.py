"""The current corpus through real Dagster and the real DuckDB file.

Every scenario lands files, materializes through `dg.materialize`, then reads what a
user reads: the `codex.<dataset>_*` views, `codex search`, `codex inspect`,
`ChunkCollection.from_catalog` and the seed's parent-child SQL.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import io
from pathlib import Path

import dagster as dg
import pytest

from codex_pipeline.cli import app as cli
from codex_pipeline.core.ids import make_chunk_id
from codex_pipeline.datasets.registry import DatasetSpec, get_dataset
from codex_pipeline.defs.assets import UNIQUE_CHECK, build_dataset_assets
from codex_pipeline.defs.resources import CodexWarehouse, EmbeddingSettings
from codex_pipeline.explore.navigation import ChunkCollection
from codex_pipeline.warehouse.catalog import connect_catalog
from codex_pipeline.warehouse.queries import EXAMPLE_SQL
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.conftest import FIXTURES, SAMPLE_LANDING
from codex_pipeline_tests.fakes import FakeEmbedding

D1, D2, D3, D4 = (dt.date(2026, 11, d) for d in (1, 2, 3, 4))
NARRATIVE = get_dataset("narrative")
SAMPLE = SAMPLE_LANDING / "narrative"
WATER = (SAMPLE / "2026-11-24" / "water-main-replacement-notice.txt").read_text()
COUNCIL = (FIXTURES / "narrative" / "council-recess-statement.txt").read_text()
NOTICE = "urn:aprs:narrative:notice.txt"


def materialize(wh: Warehouse, day: dt.date, spec: DatasetSpec = NARRATIVE, embed: bool = False,
                embedding: EmbeddingSettings | None = None) -> dg.ExecuteInProcessResult:
    """raw -> chunks (-> embeddings, the real model unless ``embedding`` says otherwise) of one day
    through Dagster; every check must pass."""
    assets = [a for a in build_dataset_assets(spec) if embed or dg.AssetKey([spec.name, "embeddings"]) not in a.keys]
    result = dg.materialize(
        assets,
        partition_key=day.isoformat(),
        resources={"warehouse": CodexWarehouse(data_dir=str(wh.root)), "embedding": embedding or EmbeddingSettings()},
        raise_on_error=False,
    )
    assert result.success
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks == {"chunk_contract": True, UNIQUE_CHECK: True, "chunk_addresses": True}
    return result


def land(wh: Warehouse, day: dt.date, files: dict[str, str], dataset: str = "narrative") -> Path:
    folder = wh.landing_dir(dataset, day)
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def sql(wh: Warehouse, query: str, params: list | None = None) -> list[tuple]:
    con = connect_catalog(wh)
    try:
        return con.execute(query, params or []).fetchall()
    finally:
        con.close()


def codex(wh: Warehouse, *argv: str) -> tuple[int, str]:
    """The real command line; stdout and stderr together."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        rc = cli.main(["--data-dir", str(wh.root), *argv])
    return rc, out.getvalue()


def search_hits(wh: Warehouse, query: str, *flags: str) -> list[dict[str, str]]:
    rc, out = codex(wh, "search", "narrative", query, "-k", "6", *flags)
    assert rc == 0, out
    hits = []
    for line in out.splitlines():
        if line.strip().startswith("score="):
            fields = line.split("  text=")[0].split()
            hits.append(dict(f.split("=", 1) for f in fields))
    return hits


def meta(result: dg.ExecuteInProcessResult, node: str) -> dict:
    (mat,) = result.asset_materializations_for_node(node)
    return {k: v.value for k, v in mat.metadata.items()}


# -- the case: a document re-landed shorter ---------------------------------------


@pytest.mark.slow  # the real local model: embedded, then searched through codex search
def test_shorter_relanding_leaves_only_the_current_window(warehouse: Warehouse) -> None:
    land(warehouse, D1, {"notice.txt": "\n\n".join([WATER] * 3), "council.txt": COUNCIL})
    land(warehouse, D2, {"notice.txt": WATER[:1500]})
    materialize(warehouse, D1, embed=True)
    materialize(warehouse, D2, embed=True)

    (old_windows,) = sql(warehouse, "SELECT count(*) FROM codex.narrative_chunks_history WHERE doc_id = ? AND "
                                    "partition_date = ?", [NOTICE, D1])[0]
    assert old_windows >= 5
    assert sql(warehouse, "SELECT section_id, partition_date FROM codex.narrative_chunks WHERE doc_id = ?", [NOTICE]) == [
        ("window.0", D2)
    ]
    assert sql(warehouse, "SELECT count(*), count(DISTINCT chunk_id) FROM codex.narrative_chunks") == [(2, 2)]
    assert sql(warehouse, "SELECT count(*) FROM codex.narrative_embeddings") == [(2,)]
    assert sql(warehouse, "SELECT doc_id, partition_date FROM codex.narrative_raw ORDER BY doc_id") == [
        ("urn:aprs:narrative:council.txt", D1), (NOTICE, D2)
    ]
    assert sql(warehouse, "SELECT count(*) FROM codex.narrative_chunks_history") == [(old_windows + 2,)]

    hits = search_hits(warehouse, "water main closure")
    assert sorted((h["doc_id"], h["section_id"], h["partition_date"]) for h in hits) == [
        ("urn:aprs:narrative:council.txt", "window.0", "2026-11-01"),
        (NOTICE, "window.0", "2026-11-02"),
    ]
    history = search_hits(warehouse, "water main closure", "--history")  # opt-in: every version ranks
    assert len(history) == 6 and {h["partition_date"] for h in history if h["doc_id"] == NOTICE} >= {"2026-11-01"}

    col = ChunkCollection.from_catalog(warehouse, "narrative")
    assert [c.section_id for c in col.document_chunks(NOTICE)] == ["window.0"]
    assert col.document_chunks(NOTICE)[0].chunk_text in WATER[:1500]
    assert col.superseded == {NOTICE: (D1,)}
    assert len(ChunkCollection.from_catalog(warehouse, "narrative", partition=D1).document_chunks(NOTICE)) == old_windows


def test_backfilling_an_older_day_keeps_the_newer_version_current(warehouse: Warehouse) -> None:
    land(warehouse, D1, {"notice.txt": "\n\n".join([WATER] * 2)})
    land(warehouse, D2, {"notice.txt": WATER[:1500]})
    materialize(warehouse, D2)
    materialize(warehouse, D1)  # the backfill runs after the newer day
    assert sql(warehouse, "SELECT section_id, partition_date FROM codex.narrative_chunks") == [("window.0", D2)]
    assert sql(warehouse, "SELECT partition_date FROM codex.narrative_raw") == [(D2,)]
    assert sql(warehouse, "SELECT partition_date, landed_on FROM codex.narrative_documents") == [(D2, [D1, D2])]
    assert sql(warehouse, "SELECT count(DISTINCT partition_date) FROM codex.narrative_chunks_history") == [(2,)]


# -- deletes ------------------------------------------------------------------------------


@pytest.mark.slow  # the real local model: embedded, then searched through codex search
def test_tombstone_retracts_a_document_and_relanding_brings_it_back(warehouse: Warehouse) -> None:
    land(warehouse, D1, {"notice.txt": WATER, "council.txt": COUNCIL})
    first = materialize(warehouse, D1, embed=True)
    ids = [r[0] for r in sql(warehouse, "SELECT chunk_id FROM codex.narrative_chunks WHERE doc_id = ? ORDER BY 1", [NOTICE])]
    assert ids and meta(first, "narrative__embeddings")["embedded"] > 0

    day2 = land(warehouse, D2, {"storm-drain-notice.html": (FIXTURES / "narrative" / "storm-drain-notice.html").read_text()})
    (day2 / "_deleted.txt").write_text("# retracted: superseded by the storm-drain notice\nnotice.txt\nghost.txt\n")
    (day2 / "_deleted.jsonl").write_text('{"record_id": "council.txt"\n')  # malformed: nothing is retracted by it
    second = materialize(warehouse, D2, embed=True)
    raw_meta = meta(second, "narrative__raw")
    assert (raw_meta["tombstones"], raw_meta["tombstone_rejects"], raw_meta["documents"]) == (2, 1, 1)
    assert raw_meta["deleted_documents"] == 1 and raw_meta["unknown_tombstones"] == 1

    assert sql(warehouse, "SELECT count(*) FROM codex.narrative_chunks WHERE doc_id = ?", [NOTICE]) == [(0,)]
    assert sql(warehouse, "SELECT count(*) FROM codex.narrative_raw WHERE doc_id = ?", [NOTICE]) == [(0,)]
    assert sql(warehouse, "SELECT count(*) FROM codex.narrative_embeddings WHERE list_contains(?, chunk_id)", [ids]) == [(0,)]
    assert sql(warehouse, "SELECT count(*) FROM codex.narrative_chunks_history WHERE doc_id = ?", [NOTICE]) == [(len(ids),)]
    assert sql(warehouse, "SELECT deleted_on, deleted_by FROM codex.narrative_documents WHERE doc_id = ?", [NOTICE]) == [
        (D2, "tombstone")
    ]
    redirects = sql(warehouse, "SELECT old_chunk_id, new_chunk_id, match, partition_date FROM codex.narrative_redirects "
                               "ORDER BY old_chunk_id")
    assert redirects == [(i, None, "deleted", D1) for i in ids]
    rejects = sql(warehouse, "SELECT source_file, record_ref, reason FROM codex.narrative_rejects WHERE stage = 'tombstone' "
                             "ORDER BY source_file")
    assert [(f, ref) for f, ref, _ in rejects] == [("_deleted.jsonl", "line 1"), ("_deleted.txt", "ghost.txt")]
    assert rejects[1][2].startswith("unknown record id 'ghost.txt'")
    assert {h["doc_id"] for h in search_hits(warehouse, "water main replacement")} == {
        "urn:aprs:narrative:council.txt", "urn:aprs:narrative:storm-drain-notice.html"
    }
    assert ChunkCollection.from_catalog(warehouse, "narrative").resolve(ids[0]) is None
    rc, out = codex(warehouse, "inspect", "chunk", ids[0])
    assert rc == 2 and f"{ids[0]} was deleted from codex.narrative_chunks: its document {NOTICE} was retracted on " \
                       "2026-11-02 by a tombstone" in out and "pass --date 2026-11-01" in out
    rc, out = codex(warehouse, "inspect", "chunk", ids[0], "--date", "2026-11-01")
    assert rc == 0 and "partition 2026-11-01" in out

    land(warehouse, D3, {"notice.txt": WATER})  # landed again, same text
    third = materialize(warehouse, D3, embed=True)
    emb = meta(third, "narrative__embeddings")
    assert emb["inputs"] == len(ids) and emb["reused"] == len(ids) and emb["embedded"] == 0  # no model call
    assert sql(warehouse, "SELECT count(*), min(partition_date) FROM codex.narrative_chunks WHERE doc_id = ?", [NOTICE]) == [
        (len(ids), D3)
    ]
    assert sql(warehouse, "SELECT count(*) FROM codex.narrative_embeddings WHERE list_contains(?, chunk_id)", [ids]) == [
        (len(ids),)
    ]
    assert sql(warehouse, "SELECT count(*) FROM codex.narrative_redirects") == [(0,)]
    assert sql(warehouse, "SELECT deleted_on FROM codex.narrative_documents WHERE doc_id = ?", [NOTICE]) == [(None,)]
    assert ChunkCollection.from_catalog(warehouse, "narrative").resolve(ids[0]).partition_date == D3


def test_snapshot_mode_deletes_what_the_newest_export_lacks(warehouse: Warehouse) -> None:
    spec = dataclasses.replace(NARRATIVE, name="pages", snapshot=True)
    pages = {"a.txt": WATER[:900], "b.txt": COUNCIL, "c.txt": WATER[2000:2900]}
    land(warehouse, D1, pages, "pages")
    land(warehouse, D2, {k: v for k, v in pages.items() if k != "b.txt"}, "pages")
    materialize(warehouse, D1, spec)
    second = materialize(warehouse, D2, spec)
    assert meta(second, "pages__chunks")["newly_deleted"] == 1
    docs = "SELECT doc_id, partition_date, deleted_on, deleted_by FROM codex.pages_documents ORDER BY doc_id"
    assert sql(warehouse, docs) == [
        ("urn:aprs:narrative:a.txt", D2, None, None),
        ("urn:aprs:narrative:b.txt", D1, D2, "snapshot"),
        ("urn:aprs:narrative:c.txt", D2, None, None),
    ]
    current = "SELECT DISTINCT doc_id FROM codex.pages_chunks ORDER BY 1"
    assert sql(warehouse, current) == [("urn:aprs:narrative:a.txt",), ("urn:aprs:narrative:c.txt",)]
    assert {m for (m,) in sql(warehouse, "SELECT match FROM codex.pages_redirects")} == {"deleted"}

    empty_day = dg.materialize(  # nothing landed that day: not a snapshot, nothing deleted, nothing run
        build_dataset_assets(spec)[:2],
        partition_key=D3.isoformat(),
        resources={"warehouse": CodexWarehouse(data_dir=str(warehouse.root)), "embedding": EmbeddingSettings()},
    )
    assert empty_day.success and empty_day.get_asset_materialization_events() == []
    assert sql(warehouse, current) == [("urn:aprs:narrative:a.txt",), ("urn:aprs:narrative:c.txt",)]

    land(warehouse, D4, {"a.txt": pages["a.txt"], "b.txt": pages["b.txt"]}, "pages")
    materialize(warehouse, D4, spec)
    assert sql(warehouse, current) == [("urn:aprs:narrative:a.txt",), ("urn:aprs:narrative:b.txt",)]
    assert sql(warehouse, "SELECT deleted_by FROM codex.pages_documents ORDER BY doc_id") == [
        (None,), (None,), ("snapshot",)
    ]


# -- versions -----------------------------------------------------------------------------


def test_a_document_landed_on_three_days(warehouse: Warehouse) -> None:
    versions = {D1: WATER[:1200], D2: WATER[1200:2600], D3: WATER[2600:4400]}
    for day, text in versions.items():
        land(warehouse, day, {"notice.txt": text})
        materialize(warehouse, day)
    rows = "SELECT partition_date, chunk_text FROM codex.narrative_chunks WHERE doc_id = ?"
    assert [(d, t.strip()) for d, t in sql(warehouse, rows, [NOTICE])] == [(D3, versions[D3].strip())]
    assert sql(warehouse, "SELECT count(DISTINCT partition_date) FROM codex.narrative_chunks_history") == [(3,)]
    assert sql(warehouse, "SELECT landed_on FROM codex.narrative_documents") == [([D1, D2, D3],)]
    rc, out = codex(warehouse, "inspect", "summary", "--dataset", "narrative")
    assert rc == 0 and out.splitlines()[0] == "narrative: partition(s) 2026-11-03"
    assert "  1 document(s) also in older partitions: latest partition shown" in out.splitlines()

    # the third landing is undone (its file replaced, the day rerun): the second version is current again
    folder = warehouse.landing_dir("narrative", D3)
    (folder / "notice.txt").unlink()
    (folder / "other.txt").write_text(COUNCIL)
    materialize(warehouse, D3)
    assert [(d, t.strip()) for d, t in sql(warehouse, rows, [NOTICE])] == [(D2, versions[D2].strip())]
    assert sql(warehouse, "SELECT doc_id, partition_date FROM codex.narrative_raw ORDER BY 1") == [
        (NOTICE, D2), ("urn:aprs:narrative:other.txt", D3)
    ]


def test_seed_sql_returns_one_parent_for_a_hit_landed_twice(warehouse: Warehouse) -> None:
    spec = get_dataset("permit_signals")
    for day in (D1, D2):
        folder = warehouse.landing_dir(spec.name, day)
        folder.mkdir(parents=True)
        (folder / "permits.jsonl").write_text((FIXTURES / "permit_signals" / "permits.jsonl").read_text())
        materialize(warehouse, day, spec, embed=True, embedding=FakeEmbedding())
    children = sql(warehouse, "SELECT chunk_id, parent_chunk_id FROM codex.permit_signals_chunks "
                              "WHERE parent_chunk_id IS NOT NULL ORDER BY chunk_id")
    assert children
    for hit, parent in children:
        got = sql(warehouse, EXAMPLE_SQL.format(dataset=spec.name, hit=hit, suffix=""))
        assert [r[0] for r in got] == [parent]  # exactly one parent row
        # the history holds both landings: there the same SQL finds the parent once per landing
        assert len(sql(warehouse, EXAMPLE_SQL.format(dataset=spec.name, hit=hit, suffix="_history"))) == 4
    hit = make_chunk_id("urn:aprs:permit_signals:none", "x")  # an id that never existed: no row at all
    assert sql(warehouse, EXAMPLE_SQL.format(dataset=spec.name, hit=hit, suffix="")) == []
