"""Dagster materializations of the record datasets: Parquet rows, DuckDB views, contract check, rejects.

Each dataset's fixture folder is landed as one day and materialized through real Dagster
(`materialize_dataset`); the outputs are compared with what the library produces for the
same landing folder.
"""

from __future__ import annotations

import datetime as dt
import json

import dagster as dg
import pytest

from codex_pipeline.datasets import steps as pipeline
from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.defs.assets import build_dataset_assets
from codex_pipeline.warehouse.catalog import connect_catalog
from codex_pipeline_tests.conftest import FIXTURES, SAMPLE_LANDING, land, materialize_dataset

DAY = "2026-11-24"
DATE = dt.date.fromisoformat(DAY)

# dataset -> (chunk types the fixture must produce, number of ingest rejects in the fixture)
CHUNKED = {
    "events_timeline": ({"event"}, 1),
    "permit_signals": ({"permit_summary", "permit_scope_section", "condition"}, 2),
    "osha_safety": ({"osha_case_summary", "osha_citation"}, 1),
    "urban_signal_grid": ({"record_view"}, 1),
    "lehd_flows": ({"record_view"}, 1),
    "poi_intelligence": ({"record_view"}, 1),
}


@pytest.mark.parametrize("dataset", sorted(CHUNKED))
def test_materialize_chunked_dataset(warehouse, dataset: str) -> None:
    types, n_rejects = CHUNKED[dataset]
    landing = land(warehouse, dataset, DAY, FIXTURES / dataset)
    result = materialize_dataset(warehouse, dataset, DAY)
    assert result.success

    evaluations = {e.check_name: e for e in result.get_asset_check_evaluations()}
    check, unique, addresses = (evaluations[n] for n in ("chunk_contract", "current_chunk_ids_unique", "chunk_addresses"))
    assert addresses.check_name == "chunk_addresses" and addresses.passed  # seed-003 validator, non-blocking
    assert check.check_name == "chunk_contract" and check.passed
    assert check.asset_key == dg.AssetKey([dataset, "chunks"])
    assert unique.check_name == "current_chunk_ids_unique" and unique.passed

    # Parquet: exactly what the library makes of the same landing folder
    spec = get_dataset(dataset)
    loaded = spec.load_day(landing)
    expected = pipeline.chunk(spec, DATE, loaded.documents).table
    chunks = warehouse.read(dataset, "chunks", DATE)
    assert chunks.num_rows == expected.num_rows > 0
    rows = chunks.to_pylist()
    assert [(r["chunk_id"], r["section_id"], r["chunk_text"]) for r in rows] == [
        (r["chunk_id"], r["section_id"], r["chunk_text"]) for r in expected.to_pylist()]
    assert {r["chunk_type"] for r in rows} == types
    assert {r["dataset"] for r in rows} == {dataset} and {r["partition_date"] for r in rows} == {DATE}
    assert all(r["doc_id"].startswith(f"urn:aprs:{dataset}:") for r in rows)
    raw = warehouse.read(dataset, "raw", DATE)
    assert raw.num_rows == len(loaded.documents) == len({r["doc_id"] for r in rows})

    con = connect_catalog(warehouse)
    try:
        (n,) = con.execute(f"SELECT count(*) FROM codex.{dataset}_chunks").fetchone()
        assert n == chunks.num_rows
        (over,) = con.execute(f"SELECT count(*) FROM codex.{dataset}_chunks WHERE token_count > 1500").fetchone()
        assert over == 0
        # the seed's parent-child query, as written, for every child chunk
        children = con.execute(
            f"SELECT chunk_id FROM codex.{dataset}_chunks WHERE parent_chunk_id IS NOT NULL").fetchall()
        for (hit,) in children:
            parent = con.execute(
                f"""WITH hit AS (
                      SELECT chunk_id, doc_id, parent_chunk_id, chunk_text
                      FROM codex.{dataset}_chunks WHERE chunk_id = ?)
                    SELECT parent.chunk_text FROM hit
                    JOIN codex.{dataset}_chunks parent ON parent.chunk_id = hit.parent_chunk_id""", [hit]).fetchall()
            assert len(parent) == 1 and parent[0][0]
        rejects = con.execute(
            f"SELECT stage, source_file, record_ref, reason FROM codex.{dataset}_rejects ORDER BY source_file, record_ref").fetchall()
    finally:
        con.close()
    assert len(rejects) == n_rejects == len(loaded.rejects)
    assert all(stage == "ingest" and reason for stage, _, _, reason in rejects)
    assert sorted(r[3] for r in rejects) == sorted(r.reason for r in loaded.rejects)


def test_events_split_windows_share_the_header_parent_in_duckdb(warehouse) -> None:
    land(warehouse, "events_timeline", DAY, FIXTURES / "events_timeline")
    assert materialize_dataset(warehouse, "events_timeline", DAY).success
    con = connect_catalog(warehouse)
    try:
        rows = con.execute(
            """SELECT c.section_id, p.section_id, c.metadata
               FROM codex.events_timeline_chunks c
               JOIN codex.events_timeline_chunks p ON p.chunk_id = c.parent_chunk_id
               WHERE c.doc_id = 'urn:aprs:events_timeline:EVT-20261124-0007' ORDER BY c.seq_index""").fetchall()
    finally:
        con.close()
    assert [(c, p) for c, p, _ in rows] == [("EVT-20261124-0007.part.1", "EVT-20261124-0007"),
                                           ("EVT-20261124-0007.part.2", "EVT-20261124-0007")]
    assert [json.loads(m)["part"] for _, _, m in rows] == [1, 2]


def test_ais_positions_is_raw_only(warehouse) -> None:
    assert [a.key for a in build_dataset_assets(get_dataset("ais_positions"))] == [dg.AssetKey(["ais_positions", "raw"])]
    land(warehouse, "ais_positions", DAY, FIXTURES / "ais_positions")
    result = materialize_dataset(warehouse, "ais_positions", DAY)
    assert result.success
    assert result.get_asset_check_evaluations() == []
    assert not warehouse.table_dir("ais_positions", "chunks").exists()
    raw = warehouse.read("ais_positions", "raw", DATE)
    assert raw.num_rows == 4
    con = connect_catalog(warehouse)
    try:
        views = {v for (v,) in con.execute("SELECT view_name FROM duckdb_views() WHERE schema_name = 'codex'").fetchall()}
        (n,) = con.execute("SELECT count(*) FROM codex.ais_positions_raw").fetchone()
        reasons = [r for (r,) in con.execute("SELECT reason FROM codex.ais_positions_rejects ORDER BY reason").fetchall()]
    finally:
        con.close()
    assert "ais_positions_chunks" not in views and {"ais_positions_raw", "ais_positions_rejects"} <= views
    assert n == 4
    assert reasons == ["duplicate record id '257123450-20261124T024240Z' (first at positions.csv row 3)",
                       "field 'lat' fails 'between -90 and 90' (got 95.1032)"]


@pytest.mark.slow  # every sample day through Dagster (~25 s); quick: pipeline/test_chunks_day, test_materialize_chunked_dataset
@pytest.mark.parametrize("dataset", sorted(CHUNKED) + ["ais_positions"])
def test_sample_landing_days_materialize(warehouse, dataset: str) -> None:
    """The bundled sample days (what `codex demo` runs) pass the contract check, rejects included."""
    spec = get_dataset(dataset)
    sample = SAMPLE_LANDING / dataset
    days = sorted(p.name for p in sample.iterdir())
    assert days == ["2026-11-24", "2026-11-25", "2026-11-26"]
    total_rejects = 0
    for day in days:
        landing = land(warehouse, dataset, day, sample / day)
        result = materialize_dataset(warehouse, dataset, day)
        assert result.success
        assert all(c.passed for c in result.get_asset_check_evaluations())
        assert len(result.get_asset_check_evaluations()) == (3 if spec.chunked else 0)
        total_rejects += len(spec.load_day(landing).rejects)
    con = connect_catalog(warehouse)
    try:
        (n_rejects,) = con.execute(f"SELECT count(*) FROM codex.{dataset}_rejects").fetchone()
        raw = f"{dataset}_raw_history" if spec.chunked else f"{dataset}_raw"  # every landed day, not the current corpus
        (n_days,) = con.execute(f"SELECT count(DISTINCT partition_date) FROM codex.{raw}").fetchone()
    finally:
        con.close()
    assert n_days == 3
    assert n_rejects == total_rejects >= 1  # every sample dataset shows at least one reject
