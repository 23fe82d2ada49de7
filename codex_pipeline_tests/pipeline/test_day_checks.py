"""The warning checks of a published day, without Dagster: unique current ids, auditable addresses."""

import datetime as dt

import pyarrow.compute as pc

from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.pipeline import chunk_addresses, current_ids_unique, run_chunks_day, run_raw_day
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.pipeline.helpers import ListLog, land_sample

DAY = dt.date(2026, 11, 24)
NARRATIVE = get_dataset("narrative")


def _published(wh: Warehouse) -> Warehouse:
    land_sample(wh, "narrative", DAY.isoformat())
    run_raw_day(NARRATIVE, wh, DAY)
    assert run_chunks_day(NARRATIVE, wh, DAY).published
    return wh


def test_a_published_day_passes_both_checks(warehouse: Warehouse) -> None:
    _published(warehouse)
    log = ListLog()
    unique = current_ids_unique(NARRATIVE, warehouse, log)
    addresses = chunk_addresses(NARRATIVE, warehouse, DAY, log)
    assert unique.passed and unique.unique.rows == warehouse.read("narrative", "chunks", DAY).num_rows
    assert addresses.passed and addresses.report.sampled == min(20, unique.unique.rows)
    assert unique.warning is None and addresses.warning is None and log.at("warning") == []


def test_an_edited_chunk_text_fails_the_address_check(warehouse: Warehouse) -> None:
    _published(warehouse)
    table = warehouse.read("narrative", "chunks", DAY)
    texts = pc.utf8_upper(table.column("chunk_text"))  # every offset now slices other text
    table = table.set_column(table.schema.get_field_index("chunk_text"), table.schema.field("chunk_text"), texts)
    warehouse.write(table, "narrative", "chunks", DAY)
    log = ListLog()
    addresses = chunk_addresses(NARRATIVE, warehouse, DAY, log)
    assert not addresses.passed and "offsets" in addresses.report.failed_checks
    assert log.at("warning") == [addresses.warning] and "chunk addresses of narrative" in addresses.warning


def test_a_day_with_nothing_published_has_nothing_to_sample(warehouse: Warehouse) -> None:
    addresses = chunk_addresses(NARRATIVE, warehouse, DAY)
    assert addresses.report.sampled == 0 and addresses.report.notes
    assert current_ids_unique(NARRATIVE, warehouse).unique.rows == 0
