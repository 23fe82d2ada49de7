"""The version sensor requests exactly the runs that bring stale partitions up to date."""

from __future__ import annotations

import dataclasses
import datetime as dt

import dagster as dg
import pytest

from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.defs.assets import build_dataset_assets
from codex_pipeline.defs.resources import CodexWarehouse, EmbeddingSettings
from codex_pipeline.defs.sensors import build_version_sensor
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.conftest import FIXTURES, land, materialize_dataset

DAYS = ["2026-11-24", "2026-11-25"]


@pytest.fixture
def built(warehouse: Warehouse) -> Warehouse:
    for day in DAYS:
        land(warehouse, "narrative", day, FIXTURES / "narrative")
        assert materialize_dataset(warehouse, "narrative", day).success
    return warehouse


def tick(sensor: dg.SensorDefinition, wh: Warehouse, cursor: str | None = None, spec=None):
    spec = spec or get_dataset("narrative")
    resources = {"warehouse": CodexWarehouse(data_dir=str(wh.root)), "embedding": EmbeddingSettings()}
    definitions = dg.Definitions(assets=build_dataset_assets(spec), sensors=[sensor], resources=resources)
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
    assert set(run.asset_selection) == {dg.AssetKey(["narrative", "chunks"]), dg.AssetKey(["narrative", "embeddings"])}
    second = tick(sensor, built, first.cursor, spec=bumped)  # bounded per tick: the next day now
    assert [r.partition_key for r in second.run_requests] == ["2026-11-25"]
    third = tick(sensor, built, second.cursor, spec=bumped)  # both in flight: nothing is asked twice
    assert not third.run_requests and "already requested" in third.skip_message


def test_old_embedding_version_reembeds_only(built: Warehouse) -> None:
    wh = built
    day = dt.date(2026, 11, 24)
    old = wh.read("narrative", "embeddings", day)
    wh.write(old, "narrative", "embeddings", day, stamp={"embedding_model": "all-MiniLM-L6-v2", "embedding_version": "older"})
    result = tick(build_version_sensor([get_dataset("narrative")]), wh)
    (run,) = result.run_requests
    assert run.partition_key == "2026-11-24"
    assert run.asset_selection == [dg.AssetKey(["narrative", "embeddings"])]
    assert run.tags["codex/reason"].startswith("embedding all-MiniLM-L6-v2 older -> all-MiniLM-L6-v2 ")


def test_partitions_never_embedded_are_left_to_schedules_and_backfills(built: Warehouse) -> None:
    built.remove("narrative", "embeddings", dt.date(2026, 11, 25))  # e.g. a backfill's embeddings step still queued
    result = tick(build_version_sensor([get_dataset("narrative")]), built)
    assert not result.run_requests
