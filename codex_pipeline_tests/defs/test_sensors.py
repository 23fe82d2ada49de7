"""The version sensor requests exactly the runs that bring stale partitions up to date."""

from __future__ import annotations

import dataclasses
import datetime as dt

import dagster as dg
import pytest

from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.defs.assets import build_dataset_assets
from codex_pipeline.defs.resources import CodexWarehouse, PropositionSettings
from codex_pipeline.defs.search_assets import build_search_index_asset
from codex_pipeline.defs.sensors import build_version_sensor
from codex_pipeline.retrieval import Retriever, read_manifest
from codex_pipeline.retrieval.corpus import source_fingerprint
from codex_pipeline.retrieval.retriever import index_root
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.conftest import FIXTURES, land, materialize_dataset
from codex_pipeline_tests.fakes import FAKE_MODEL, FakeEmbedding

DAYS = ["2026-11-24", "2026-11-25"]


@pytest.fixture
def built(warehouse: Warehouse) -> Warehouse:
    for day in DAYS:
        land(warehouse, "narrative", day, FIXTURES / "narrative")
        assert materialize_dataset(warehouse, "narrative", day).success
    return warehouse


def assets_of(spec) -> list[dg.AssetsDefinition]:
    return [*build_dataset_assets(spec), build_search_index_asset(spec)]


def run_requested(wh: Warehouse, run: dg.RunRequest, spec) -> dg.ExecuteInProcessResult:
    """Execute a sensor's run request through Dagster: its partition, its asset selection, its tags."""
    return dg.materialize(
        assets_of(spec),
        selection=run.asset_selection,
        partition_key=run.partition_key,
        tags=run.tags,
        resources={"warehouse": CodexWarehouse(data_dir=str(wh.root)), "embedding": FakeEmbedding()},
        raise_on_error=False,
    )


def tick(sensor: dg.SensorDefinition, wh: Warehouse, cursor: str | None = None, spec=None):
    spec = spec or get_dataset("narrative")
    resources = {"warehouse": CodexWarehouse(data_dir=str(wh.root)), "embedding": FakeEmbedding(),
                 "propositions": PropositionSettings()}
    definitions = dg.Definitions(assets=assets_of(spec), sensors=[sensor], resources=resources)
    with dg.instance_for_test() as instance:
        context = dg.build_sensor_context(instance=instance, cursor=cursor, definitions=definitions, resources=resources)
        return sensor.evaluate_tick(context)


def test_up_to_date_partitions_request_nothing(built: Warehouse) -> None:
    result = tick(build_version_sensor([get_dataset("narrative")]), built)
    assert not result.run_requests and result.skip_message == "every partition is up to date"


def test_chunking_version_bump_rechunks_each_partition_once(built: Warehouse) -> None:
    bumped = dataclasses.replace(get_dataset("narrative"), chunker_revision="1.1")
    sensor = build_version_sensor([bumped], max_runs_per_tick=1)
    first = tick(sensor, built, spec=bumped)
    (run,) = first.run_requests
    assert run.partition_key == "2026-11-24"
    assert run.run_key == f"narrative:2026-11-24:chunking_version={bumped.chunking_version}"
    assert run.tags["codex/reason"] == f"chunking_version {get_dataset('narrative').chunking_version} -> {bumped.chunking_version}"
    assert set(run.asset_selection) == {dg.AssetKey(["narrative", t]) for t in ("chunks", "embeddings", "search_index")}
    second = tick(sensor, built, first.cursor, spec=bumped)  # bounded per tick: the next day now
    assert [r.partition_key for r in second.run_requests] == ["2026-11-25"]
    third = tick(sensor, built, second.cursor, spec=bumped)  # both in flight: nothing is asked twice
    assert not third.run_requests and "already requested" in third.skip_message


def test_old_embedding_version_reembeds_only(built: Warehouse) -> None:
    wh = built
    day = dt.date(2026, 11, 24)
    old = wh.read("narrative", "embeddings", day)
    wh.write(old, "narrative", "embeddings", day, stamp={"embedding_model": FAKE_MODEL, "embedding_version": "older"})
    result = tick(build_version_sensor([get_dataset("narrative")]), wh)
    (run,) = result.run_requests
    assert run.partition_key == "2026-11-24"
    assert run.asset_selection == [dg.AssetKey(["narrative", "embeddings"]), dg.AssetKey(["narrative", "search_index"])]
    assert run.tags["codex/reason"].startswith(f"embedding {FAKE_MODEL} older -> {FAKE_MODEL} ")


def test_embeddings_made_before_evidence_units_are_brought_up_to_date(built: Warehouse) -> None:
    from codex_pipeline.retrieval.units import UNITS_VERSION

    wh = built
    day = dt.date(2026, 11, 25)
    stamp = wh.stamp(wh.partition_path("narrative", "embeddings", day))
    old = wh.read("narrative", "embeddings", day).replace_schema_metadata(None)  # as written before units existed
    wh.write(old, "narrative", "embeddings", day,
             stamp={"embedding_model": stamp["embedding_model"], "embedding_version": stamp["embedding_version"]})
    wh.remove("narrative", "evidence_units", day)
    (run,) = tick(build_version_sensor([get_dataset("narrative")]), wh).run_requests
    assert run.partition_key == day.isoformat()
    assert run.tags["codex/reason"] == f"evidence units none -> {UNITS_VERSION}"
    result = run_requested(wh, run, get_dataset("narrative"))
    assert result.success
    (m,) = result.asset_materializations_for_node("narrative__embeddings")
    assert m.metadata["embedded"].value == 0 and m.metadata["evidence_units"].value > 0  # chunk vectors reused
    assert wh.read("narrative", "evidence_units", day).num_rows == m.metadata["evidence_units"].value
    assert not tick(build_version_sensor([get_dataset("narrative")]), wh).run_requests


def test_partitions_never_embedded_are_left_to_schedules_and_backfills(built: Warehouse) -> None:
    built.remove("narrative", "embeddings", dt.date(2026, 11, 25))  # e.g. a backfill's embeddings step still queued
    result = tick(build_version_sensor([get_dataset("narrative")]), built)
    assert not result.run_requests


def _index_is_current(wh: Warehouse) -> bool:
    """The live index was built from exactly today's chunks, raw and embeddings files (read-only check)."""
    live = read_manifest(index_root(wh, "narrative"))
    return live is not None and all(live.source.get(k) == v for k, v in source_fingerprint(wh, "narrative").items())


@pytest.mark.slow  # re-ingests and re-indexes two days through sensor-requested runs (~20 s)
def test_sensor_reingest_leaves_the_search_index_current(built: Warehouse) -> None:
    wh, spec = built, get_dataset("narrative")
    assert run_requested(wh, dg.RunRequest(partition_key=DAYS[-1], asset_selection=[dg.AssetKey(["narrative", "search_index"])]),
                         spec).success
    before = read_manifest(index_root(wh, "narrative"))
    assert before is not None
    # the reader changed (source_version bump) and the newest day's file now says something new
    notice = wh.landing_dir("narrative", dt.date.fromisoformat(DAYS[-1])) / "council-recess-statement.txt"
    notice.write_text(notice.read_text() + "\n\nThe zyxwombat ordinance takes effect in spring.\n")
    bumped = dataclasses.replace(spec, source_version=spec.source_version + ".1")
    result = tick(build_version_sensor([bumped]), wh, spec=bumped)
    assert [r.partition_key for r in result.run_requests] == DAYS
    for run in result.run_requests:
        assert dg.AssetKey(["narrative", "search_index"]) in run.asset_selection
        outcome = run_requested(wh, run, bumped)
        assert outcome.success
        assert outcome.asset_materializations_for_node("narrative__search_index")
    after = read_manifest(index_root(wh, "narrative"))
    assert after is not None and after.version != before.version
    assert _index_is_current(wh)
    hits = Retriever(wh.root, ["narrative"]).search("zyxwombat ordinance", k=3, mode="bm25")
    assert hits and "zyxwombat" in hits[0].text and hits[0].partition_date == dt.date.fromisoformat(DAYS[-1])


def test_sensor_reembed_leaves_the_search_index_current(built: Warehouse) -> None:
    wh, spec = built, get_dataset("narrative")
    assert run_requested(wh, dg.RunRequest(partition_key=DAYS[-1], asset_selection=[dg.AssetKey(["narrative", "search_index"])]),
                         spec).success
    last = dt.date.fromisoformat(DAYS[-1])
    old = wh.read("narrative", "embeddings", last)
    wh.write(old, "narrative", "embeddings", last, stamp={"embedding_model": FAKE_MODEL, "embedding_version": "older"})
    assert not _index_is_current(wh)  # the old-version embeddings file: the index is behind it
    (run,) = tick(build_version_sensor([spec]), wh).run_requests
    assert run.asset_selection == [dg.AssetKey(["narrative", "embeddings"]), dg.AssetKey(["narrative", "search_index"])]
    assert run_requested(wh, run, spec).success
    assert _index_is_current(wh)
