"""A mapping file in the configured folder becomes a dataset: assets, checks, sensors, rows in DuckDB.

The Dagster test builds the code location in-process from settings with that folder, as a
deployment's ``$CODEX_MAPPINGS_DIR`` would: no Python is written for the new dataset, only its
mapping file.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from codex_pipeline.datasets.registry import DatasetRegistry, built_in_specs, default_registry, get_dataset
from codex_pipeline.defs.definitions import build_definitions
from codex_pipeline.settings import CodexSettings
from codex_pipeline.sources.mapping.schema import MappingError
from codex_pipeline.warehouse.catalog import connect_catalog
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.conftest import SAMPLE_LANDING, land, materialize_dataset
from codex_pipeline_tests.fakes import FakeEmbedding

INSPECTIONS = """codex_mapping: 1
dataset: food_inspections
kind: record
title: food inspection
format: csv
id: Inspection ID
fields:
  business: Business Name
  inspected: {column: Inspection Date, type: date, formats: ["%m/%d/%Y"]}
  result: {column: Result, vocabulary: {P: Pass, F: Fail}, unknown: reject}
  violations: {column: Violations, separator: "|", type: "list[string]"}
  score: {column: Score, type: integer}
view: {label: Food inspection, title: business}
drop: [Internal Code]
"""
CSV = """Inspection ID,Business Name,Inspection Date,Result,Violations,Score,Internal Code
IN-1,Cafe Uno,11/20/2026,P,,98,x
IN-2,Taqueria Dos,11/21/2026,F,Handwashing sink blocked | Raw chicken above produce,71,y
IN-3,Noodle Tres,11/22/2026,Z,,80,z
"""

def test_a_mapping_in_the_configured_folder_materializes_through_dagster(tmp_path: Path) -> None:
    folder = tmp_path / "mappings"
    folder.mkdir()
    (folder / "food_inspections.yaml").write_text(INSPECTIONS)
    wh = Warehouse(tmp_path / "data")
    landing = wh.landing_dir("food_inspections", __import__("datetime").date(2026, 11, 24))
    landing.mkdir(parents=True)
    (landing / "inspections.csv").write_text(CSV)
    defs = build_definitions(CodexSettings(data_dir=wh.root, mapping_folders=(folder,)))
    graph = defs.resolve_asset_graph()
    keys = sorted(k.to_user_string() for k in graph.get_all_asset_keys() if k.path[0] == "food_inspections")
    assert keys == ["food_inspections/chunks", "food_inspections/embeddings", "food_inspections/raw",
                    "food_inspections/search_index"]
    assert "chunk_contract" in {k.name for k in graph.asset_check_keys if k.asset_key.path[0] == "food_inspections"}
    assets = [a for a in defs.assets or [] if isinstance(a, dg.AssetsDefinition)
              and any(k.path[0] == "food_inspections" and k.path[1] != "search_index" for k in a.keys)]
    result = dg.materialize(assets, partition_key="2026-11-24", instance=dg.DagsterInstance.ephemeral(),
                            resources={"warehouse": defs.resources["warehouse"], "embedding": FakeEmbedding()},
                            raise_on_error=False)
    passed = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert result.success and passed["chunk_contract"]

    con = connect_catalog(wh)
    try:
        rows = con.execute("SELECT doc_id, chunk_type, chunk_text FROM codex.food_inspections_chunks ORDER BY doc_id").fetchall()
        rejects = con.execute("SELECT record_ref, reason FROM codex.food_inspections_rejects").fetchall()
    finally:
        con.close()
    assert [(d, t) for d, t, _ in rows] == [("urn:aprs:food_inspections:IN-1", "record_view"),
                                            ("urn:aprs:food_inspections:IN-2", "record_view")]
    assert rows[1][2] == ("## Food inspection IN-2 — Taqueria Dos\n- **record_id**: IN-2\n- **business**: Taqueria Dos\n"
                          "- **inspected**: 2026-11-21\n- **result**: Fail\n"
                          "- **violations**: Handwashing sink blocked; Raw chicken above produce\n- **score**: 71")
    assert rejects == [("row 4, Inspection ID='IN-3'",
                        "column 'Result': 'Z' is not in fields.result.vocabulary (add it there, or set unknown: keep)")]


def test_the_registry_takes_a_folder_once_and_refuses_a_taken_name(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(INSPECTIONS)
    shipped = len(default_registry())
    reg = DatasetRegistry.build(CodexSettings(mapping_folders=(tmp_path, tmp_path / ".")))  # the same folder twice
    added = reg.get("food_inspections")
    assert added.chunked and not added.propositions and len(reg) == shipped + 1
    assert added.source_version.startswith("1+") and len(added.source_version) == 10
    assert reg.mapping_file("food_inspections") == tmp_path / "a.yaml"
    assert "food_inspections" not in default_registry().names()  # a new value: the default one is unchanged
    (tmp_path / "b.yaml").write_text(INSPECTIONS)
    with pytest.raises(MappingError, match=r"key 'dataset': 'food_inspections' is already mapping .*a.yaml; fix: choose another name"):
        DatasetRegistry.build(CodexSettings(mapping_folders=(tmp_path,)))
    (tmp_path / "b.yaml").write_text(INSPECTIONS.replace("food_inspections", "permit_signals"))
    (tmp_path / "a.yaml").unlink()
    with pytest.raises(MappingError, match="already a built-in dataset"):
        DatasetRegistry.build(CodexSettings(mapping_folders=(tmp_path,)))


def test_an_edited_mapping_is_a_new_source_version(tmp_path: Path) -> None:
    settings = CodexSettings(mapping_folders=(tmp_path,))
    (tmp_path / "a.yaml").write_text(INSPECTIONS)
    before = DatasetRegistry.build(settings).get("food_inspections").source_version
    (tmp_path / "a.yaml").write_text(INSPECTIONS.replace("F: Fail", "F: Failed"))
    assert DatasetRegistry.build(settings).get("food_inspections").source_version != before


def test_the_shipped_mappings_are_datasets() -> None:
    names = default_registry().names()
    assert names[-2:] == ["seattle_preapplications", "squamish_permits"]
    assert names[: len(built_in_specs())] == [s.name for s in built_in_specs()]
    assert get_dataset("squamish_permits").chunker is get_dataset("permit_signals").chunker
    assert default_registry().mapping_file("permit_signals") is None
    assert get_dataset("permit_signals").source_version.startswith("2+")


@pytest.mark.parametrize("dataset", ["seattle_preapplications", "squamish_permits"])
def test_the_shipped_mapped_datasets_materialize_within_the_contract(warehouse, dataset: str) -> None:
    landing = land(warehouse, dataset, "2026-11-24", SAMPLE_LANDING / dataset / "2026-11-24")
    result = materialize_dataset(warehouse, dataset, "2026-11-24")
    assert result.success
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks["chunk_contract"] and checks["current_chunk_ids_unique"]
    rows = sum(1 for line in next(landing.iterdir()).read_text(encoding="utf-8-sig").splitlines()[1:] if line.strip())
    con = connect_catalog(warehouse)
    try:
        (docs,) = con.execute(f"SELECT count(DISTINCT doc_id) FROM codex.{dataset}_chunks").fetchone()
        (rejects,) = con.execute(f"SELECT count(*) FROM codex.{dataset}_rejects").fetchone()
        (roots,) = con.execute(f"SELECT count(*) FROM codex.{dataset}_chunks WHERE parent_chunk_id IS NULL").fetchone()
    finally:
        con.close()
    assert docs + rejects == rows and roots == docs  # every row in chunks or rejects; one summary root per permit


def test_an_event_mapping_is_chunked_by_the_event_chunker(tmp_path: Path) -> None:
    import datetime as dt

    from codex_pipeline.core.contract_check import validate_chunks
    from codex_pipeline.datasets import steps
    from codex_pipeline_tests.sources.test_mapping import EVENTS

    (tmp_path / "m.yaml").write_text(EVENTS)
    spec = DatasetRegistry.build(CodexSettings(mapping_folders=(tmp_path,))).get("road_closures")
    assert spec.chunker is get_dataset("events_timeline").chunker and spec.limits == get_dataset("events_timeline").limits
    d = tmp_path / "day"
    d.mkdir()
    long = " ".join(f"Lane {i} closed for repairs near the crossing." for i in range(400))  # over 800 tokens
    (d / "c.csv").write_text("Closure ID,Title,Start,End,Impact,Street,Tags,Details\n"
                             f"RC-1,Repair,11/24/2026 09:30 PM,,Major,Main St,,{long}\n")
    docs = spec.load_day(d).documents
    table = steps.chunk(spec, dt.date(2026, 11, 24), docs).table
    assert set(table.column("chunk_type").to_pylist()) == {"event"} and table.num_rows > 1  # windows under one parent
    report = validate_chunks(table, {doc.doc_id: doc.text for doc in docs})
    assert report.passed, report.failures


def test_loading_the_registry_does_not_import_pyproj() -> None:
    """Every Dagster process imports the registry (and its mappings): PROJ loads on the first coordinate only."""
    code = "import sys, codex_pipeline.datasets.registry as r; assert r.get_dataset('squamish_permits'); print('pyproj' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert done.stdout.strip() == "False"
