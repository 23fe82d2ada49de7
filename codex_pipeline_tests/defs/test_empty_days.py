"""A day with no landing folder costs one quick step per dataset, not a run of empty steps."""

from __future__ import annotations

import datetime as dt
import shutil

from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.conftest import FIXTURES, land, materialize_dataset

DAY = "2026-11-24"


def test_a_day_without_landing_skips_chunks_and_embeddings(warehouse: Warehouse) -> None:
    result = materialize_dataset(warehouse, "narrative", DAY)
    assert result.success
    assert result.get_asset_materialization_events() == []
    skipped = {e.step_key for e in result.all_events if e.event_type_value == "STEP_SKIPPED"}
    # the chunks asset's warning checks are steps of their own, skipped with it
    assert skipped == {"narrative__chunks", "narrative__embeddings", "narrative__chunks_current_chunk_ids_unique",
                       "narrative__chunks_chunk_addresses"}
    assert not (warehouse.root / "warehouse").exists()


def test_a_day_whose_landing_folder_went_is_still_rerun(warehouse: Warehouse) -> None:
    """Raw of the day exists: the rerun must run (and empty the day), not skip."""
    landing = land(warehouse, "narrative", DAY, FIXTURES / "narrative")
    assert materialize_dataset(warehouse, "narrative", DAY).success
    shutil.rmtree(landing)
    result = materialize_dataset(warehouse, "narrative", DAY)
    assert result.success
    assert {e.step_key for e in result.all_events if e.event_type_value == "STEP_SKIPPED"} == set()
    assert warehouse.read("narrative", "raw", dt.date.fromisoformat(DAY)).num_rows == 0
