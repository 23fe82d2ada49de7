"""Two code locations in one process, built from two settings values, each materializing its own day.

Location ``a`` is the default settings over one data directory; location ``b`` another data
directory, a later first partition and a mappings folder with one mapping file. Both are
built with :func:`~codex_pipeline.defs.definitions.build_definitions` side by side: no
``reload``, no child process, no environment variable (issue 38). The embedding resource is
the tests' fake (no model is loaded); everything else is the location's own.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import dagster as dg
import pytest

from codex_pipeline.defs.definitions import build_definitions
from codex_pipeline.settings import CodexSettings, EnvName
from codex_pipeline.warehouse.catalog import connect_catalog
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.conftest import SAMPLE_LANDING, land
from codex_pipeline_tests.fakes import with_fake_embedding

DAY = "2026-11-24"
DATE = dt.date.fromisoformat(DAY)
MAPPED = "food_inspections"
STEPS = ("raw", "chunks", "embeddings", "search_index")  # a chunked dataset's assets
DAY_STEPS = STEPS[:3]  # what a landing day materializes (the search index is left out: seconds, no new wiring)

# a record mapping of a small CSV export (as in datasets/test_mapped_datasets.py)
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
  score: {column: Score, type: integer}
view: {label: Food inspection, title: business}
"""
CSV = """Inspection ID,Business Name,Inspection Date,Result,Score
IN-1,Cafe Uno,11/20/2026,P,98
IN-2,Taqueria Dos,11/21/2026,F,71
IN-3,Noodle Tres,11/22/2026,P,80
"""


def _location(settings: CodexSettings) -> dg.Definitions:
    """The code location of ``settings``, its embedding resource swapped for the fake."""
    return with_fake_embedding(build_definitions(settings))


def _materialize(defs: dg.Definitions, datasets: tuple[str, ...]) -> dg.ExecuteInProcessResult:
    """The location's ``codex_all`` job for :data:`DAY`, over ``datasets``' assets (and so their checks)."""
    selection = [dg.AssetKey([name, step]) for name in datasets for step in DAY_STEPS]
    return defs.resolve_job_def("codex_all").execute_in_process(
        partition_key=DAY, asset_selection=selection, instance=dg.DagsterInstance.ephemeral(), raise_on_error=False)


def _codex_environ() -> dict[str, str]:
    """The process environment's Codex variables (pandera sets two of its own at import: not ours to watch)."""
    names = {v for k, v in vars(EnvName).items() if k.isupper()}
    return {k: v for k, v in os.environ.items() if k in names or k.startswith("CODEX_")}


def _catalog_views(wh: Warehouse) -> set[str]:
    con = connect_catalog(wh)
    try:
        return {name for (name,) in con.execute(
            "SELECT view_name FROM duckdb_views() WHERE schema_name = 'codex' AND NOT internal").fetchall()}
    finally:
        con.close()


@pytest.fixture
def locations(tmp_path: Path) -> tuple[CodexSettings, CodexSettings]:
    """Settings ``a`` (defaults over ``tmp_path/a``) and ``b`` (``tmp_path/b``, a mapping, a later start), landed."""
    mappings = tmp_path / "mappings"
    mappings.mkdir()
    (mappings / "food_inspections.yaml").write_text(INSPECTIONS)
    a = CodexSettings(data_dir=tmp_path / "a")
    b = CodexSettings(data_dir=tmp_path / "b", mapping_folders=(mappings,), partitions_start=dt.date(2026, 11, 20))
    for settings in (a, b):
        land(Warehouse(settings.data_dir), "narrative", DAY, SAMPLE_LANDING / "narrative" / DAY)
    landing = Warehouse(b.data_dir).landing_dir(MAPPED, DATE)
    landing.mkdir(parents=True)
    (landing / "inspections.csv").write_text(CSV)
    return a, b


def test_two_code_locations_in_one_process_each_materialize_their_own_day(locations) -> None:
    environ = _codex_environ()
    a, b = locations
    loc_a, loc_b = _location(a), _location(b)

    # the mapping is a dataset of b only; otherwise the two locations have the same assets
    keys_a = {k.to_user_string() for k in loc_a.resolve_all_asset_keys()}
    keys_b = {k.to_user_string() for k in loc_b.resolve_all_asset_keys()}
    mapped = {f"{MAPPED}/{step}" for step in STEPS}
    assert mapped <= keys_b and not any(k.startswith(f"{MAPPED}/") for k in keys_a)
    assert keys_b - keys_a == mapped

    # each location's partitions start where its settings say: the job's and every asset's
    for settings, loc in ((a, loc_a), (b, loc_b)):
        first = settings.partitions_start.isoformat()
        assert loc.resolve_job_def("codex_all").partitions_def.get_first_partition_key() == first
        assert loc.resolve_assets_def(dg.AssetKey(["narrative", "chunks"])).partitions_def.get_first_partition_key() == first
    assert a.partitions_start == dt.date(2026, 11, 1) and b.partitions_start == dt.date(2026, 11, 20)
    assert loc_b.resolve_assets_def(dg.AssetKey([MAPPED, "chunks"])).partitions_def.get_first_partition_key() == "2026-11-20"

    # the warehouse resource of each location is its own data directory
    assert loc_a.resources["warehouse"].get().root == Warehouse(a.data_dir).root
    assert loc_b.resources["warehouse"].get().root == Warehouse(b.data_dir).root

    results = {"a": _materialize(loc_a, ("narrative",)), "b": _materialize(loc_b, ("narrative", MAPPED))}
    for name, result in results.items():
        assert result.success, name
        checks = {(e.asset_key.path[0], e.check_name): e.passed for e in result.get_asset_check_evaluations()}
        assert checks[("narrative", "chunk_contract")], name
    materialized = {name: {e.asset_key.to_user_string() for e in r.get_asset_materialization_events()}
                    for name, r in results.items()}
    assert materialized["a"] == {f"narrative/{step}" for step in DAY_STEPS}
    assert materialized["b"] == {f"{name}/{step}" for name in ("narrative", MAPPED) for step in DAY_STEPS}
    assert {e.check_name: e.passed for e in results["b"].get_asset_check_evaluations()
            if e.asset_key.path[0] == MAPPED}["chunk_contract"]

    # each data directory got its own chunks partition file, and only b has the mapped dataset
    wh_a, wh_b = Warehouse(a.data_dir), Warehouse(b.data_dir)
    for wh in (wh_a, wh_b):
        files = wh.partitions("narrative", "chunks")
        assert list(files) == [DATE] and files[DATE].is_relative_to(wh.root)
        assert wh.read("narrative", "chunks", DATE).num_rows > 0
    same = ("chunk_id", "chunk_text")  # same landing day, same chunks, in two places
    assert wh_a.read("narrative", "chunks", DATE).select(same) == wh_b.read("narrative", "chunks", DATE).select(same)
    assert list(wh_b.partitions(MAPPED, "chunks")) == [DATE]
    assert sorted(wh_b.read(MAPPED, "chunks", DATE).column("doc_id").to_pylist()) == [
        f"urn:aprs:{MAPPED}:IN-{i}" for i in (1, 2, 3)]
    assert wh_a.partitions(MAPPED, "chunks") == {} and not (wh_a.root / "warehouse" / MAPPED).exists()
    assert not (wh_a.root / "landing" / MAPPED).exists()
    views_a, views_b = _catalog_views(wh_a), _catalog_views(wh_b)
    assert "narrative_chunks" in views_a and "narrative_chunks" in views_b
    assert f"{MAPPED}_chunks" in views_b and not any(v.startswith(MAPPED) for v in views_a)

    assert _codex_environ() == environ  # nothing was steered through the environment
