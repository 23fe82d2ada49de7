"""The raw step without Dagster: what lands is ingested, what is wrong is rejected, retractions apply."""

import datetime as dt

from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.pipeline import run_chunks_day, run_raw_day
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.pipeline.helpers import ListLog, land_sample

DAY = dt.date(2026, 11, 24)
NEXT = dt.date(2026, 11, 25)
NARRATIVE = get_dataset("narrative")


def test_a_day_with_nothing_landed_is_skipped_and_writes_nothing(warehouse: Warehouse) -> None:
    log = ListLog()
    done = run_raw_day(NARRATIVE, warehouse, DAY, log)
    assert done.skipped and done.path is None and done.documents == 0
    assert not warehouse.partition_path("narrative", "raw", DAY).exists()
    assert log.at("info") and not done.warnings


def test_a_landed_day_becomes_raw_rows_and_rejects(warehouse: Warehouse) -> None:
    landing = land_sample(warehouse, "narrative", DAY.isoformat())
    (landing / "broken.txt").write_bytes(b"\xff\xfe not utf-8")
    log = ListLog()
    done = run_raw_day(NARRATIVE, warehouse, DAY, log)
    expected = NARRATIVE.load_day(landing)
    assert not done.skipped and done.documents == len(expected.documents) == 3
    assert done.rejects == len(expected.rejects) == 1 and "broken.txt" in done.rejects_preview
    assert done.path == warehouse.partition_path("narrative", "raw", DAY)
    assert warehouse.read("narrative", "raw", DAY).num_rows == done.documents
    assert {"narrative_raw", "narrative_rejects"} <= set(done.views_created)
    assert done.warnings == tuple(log.at("warning")) and "1 rejected input(s)" in done.warnings[0]
    assert done.current == {}  # nothing retracted: the index is left alone


def test_a_rerun_of_an_unchanged_day_gives_the_same_rows(warehouse: Warehouse) -> None:
    land_sample(warehouse, "narrative", DAY.isoformat())
    first = run_raw_day(NARRATIVE, warehouse, DAY)
    rows = warehouse.read("narrative", "raw", DAY)
    again = run_raw_day(NARRATIVE, warehouse, DAY)
    assert warehouse.read("narrative", "raw", DAY).equals(rows)
    assert (again.documents, again.rejects, again.views_created) == (first.documents, first.rejects, ())


def test_a_tombstone_retracts_a_document_from_the_current_corpus(warehouse: Warehouse) -> None:
    land_sample(warehouse, "narrative", DAY.isoformat())
    run_raw_day(NARRATIVE, warehouse, DAY)
    assert run_chunks_day(NARRATIVE, warehouse, DAY).published
    landing = warehouse.landing_dir("narrative", NEXT)
    landing.mkdir(parents=True)
    (landing / "_deleted.txt").write_text("library-board-meeting-summary.txt\nnever-landed.txt\n")
    done = run_raw_day(NARRATIVE, warehouse, NEXT)
    assert done.documents == 0 and done.tombstones == 2 and done.tombstone_rejects == 0
    assert done.current == {"current_documents": 2, "deleted_documents": 1, "newly_deleted": 1, "restored": 0,
                            "unknown_tombstones": 1}  # a record that never landed is counted, not applied
    assert warehouse.read("narrative", "tombstones", NEXT).column("record_id").to_pylist() == [
        "library-board-meeting-summary.txt", "never-landed.txt"]


def test_a_raw_only_dataset_rejects_tombstone_files(warehouse: Warehouse) -> None:
    spec = get_dataset("ais_positions")
    landing = land_sample(warehouse, "ais_positions", DAY.isoformat())
    (landing / "_deleted.txt").write_text("anything\n")
    done = run_raw_day(spec, warehouse, DAY)
    assert done.tombstones == 0 and done.tombstone_rejects == 1 and done.current == {}
    reasons = warehouse.read("ais_positions", "rejects", DAY, part="tombstone").column("reason").to_pylist()
    assert reasons and "raw export (not chunked)" in reasons[0]
